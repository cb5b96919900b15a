// Rows read straight into C++ types from a real server, the same scenarios
// run against each driver (a typed test): a described struct whose columns
// come back in another order, tuples and aggregates by position, NULLs,
// and the shape errors a drifted query produces.
#include <pgpipe/async_client.hpp>
#include <pgpipe/blocking_pool.hpp>
#include <pgpipe/typed_rows.hpp>

#include "support/async_kit.hpp"
#include "support/result_drivers.hpp"

#include <boost/describe/class.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace {

using pgpipe::errc;

struct product {
  std::string code;
  std::string name;
  std::int32_t quantity = 0;
  std::optional<double> price;
  std::chrono::sys_time<std::chrono::microseconds> added{};
  std::optional<std::vector<std::string>> tags;
};
BOOST_DESCRIBE_STRUCT(product, (), (code, name, quantity, price, added, tags))

struct pair_row {  // an aggregate: by position
  std::int64_t n = 0;
  std::string text;
};

template <class D>
class typed_rows_it : public ::testing::Test {
 protected:
  D d_{pgpipe::test::result_driver_params()};
};
TYPED_TEST_SUITE(typed_rows_it, pgpipe::test::result_drivers, pgpipe::test::driver_names);

using pgpipe::test::thrown;

// The columns in another order than the struct's fields, some NULL.
constexpr const char* products_sql =
    "select tags, price, added, quantity, name, code from (values "
    "('a1', 'Bánh mì', 3, 1.5::float8, '2024-01-02 03:04:05.123456+00'::timestamptz, array['x', 'y\"z']), "
    "('b2', 'Phở', 0, null, '1999-12-31 23:59:59+00', null)) as v(code, name, quantity, price, added, tags) "
    "order by code";

TYPED_TEST(typed_rows_it, a_described_struct_reads_by_name_in_any_column_order) {
  using namespace std::chrono;
  auto r = this->d_.run(products_sql);
  std::vector<product> v = r.template to_vector<product>();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].code, "a1");
  EXPECT_EQ(v[0].name, "Bánh mì");
  EXPECT_EQ(v[0].quantity, 3);
  EXPECT_EQ(v[0].price, 1.5);
  EXPECT_EQ(v[0].added, sys_days(2024y / January / 2) + 3h + 4min + 5s + 123456us);
  EXPECT_EQ(v[0].tags, (std::vector<std::string>{"x", "y\"z"}));
  EXPECT_EQ(v[1].code, "b2");
  EXPECT_FALSE(v[1].price.has_value());
  EXPECT_FALSE(v[1].tags.has_value());

  std::vector<std::string> codes;
  for (const product& p : r.template rows_as<product>()) codes.push_back(p.code);
  EXPECT_EQ(codes, (std::vector<std::string>{"a1", "b2"}));
  EXPECT_EQ(r[1].template as<product>().name, "Phở");
}

TYPED_TEST(typed_rows_it, parameters_round_trip_into_a_tuple_and_an_aggregate) {
  auto r = this->d_.run("select g::int8, $1 || g::text from generate_series(1, 1000) as g", std::string("n"));
  auto t = r.template to_vector<std::tuple<std::int64_t, std::string>>();
  ASSERT_EQ(t.size(), 1000u);
  EXPECT_EQ(std::get<0>(t[999]), 1000);
  EXPECT_EQ(std::get<1>(t[999]), "n1000");
  std::int64_t sum = 0;
  for (const pair_row& p : r.template rows_as<pair_row>()) sum += p.n;
  EXPECT_EQ(sum, 500500);
  EXPECT_EQ(this->d_.run("select 7::int8, 'x'").template as<pair_row>().text, "x");
  EXPECT_FALSE(this->d_.run("select 1::int8, 'x' where false").template as_opt<pair_row>().has_value());
  EXPECT_EQ(this->d_.run("select name from (values ('a'), (null)) v(name)")
                .template to_vector<std::optional<std::string>>(),
            (std::vector<std::optional<std::string>>{"a", std::nullopt}));
}

TYPED_TEST(typed_rows_it, a_query_that_drifted_from_the_struct_is_named_before_any_row) {
  // One column renamed, one added: both named, before the junk row is read.
  auto r = this->d_.run(
      "select 'c' as code, 'n' as name, 1 as qty, 1.0::float8 as price, now() as added, null::text[] as tags, "
      "2 as extra");
  auto e = thrown([&] { (void)r.template to_vector<product>(); });
  EXPECT_EQ(e.code(), errc::columns_mismatch);
  const std::string w = e.what();
  EXPECT_NE(w.find("no column for field \"quantity\""), std::string::npos) << w;
  EXPECT_NE(w.find("(\"qty\") has no field"), std::string::npos) << w;
  EXPECT_NE(w.find("(\"extra\") has no field"), std::string::npos) << w;
}

TYPED_TEST(typed_rows_it, a_column_type_that_does_not_fit_names_both_types) {
  auto r = this->d_.run(
      "select 'c' as code, 'n' as name, 1.5::numeric as quantity, null::float8 as price, now() as added, "
      "null::text[] as tags");
  auto e = thrown([&] { (void)r.template rows_as<product>(); });
  EXPECT_EQ(e.code(), errc::type_mismatch);
  EXPECT_NE(std::string(e.what()).find("field \"quantity\" from column 2 (\"quantity\", type numeric, read as int32_t)"),
            std::string::npos)
      << e.what();
}

TYPED_TEST(typed_rows_it, null_into_a_field_that_is_not_optional_names_the_row) {
  auto r = this->d_.run(
      "select code, 'n' as name, 1 as quantity, null::float8 as price, now() as added, null::text[] as tags "
      "from (values ('a'), (null)) v(code)");
  auto e = thrown([&] { (void)r.template to_vector<product>(); });
  EXPECT_EQ(e.code(), errc::null_value);
  EXPECT_NE(std::string(e.what()).find("field \"code\" from column 0 (\"code\", type text, read as std::string) of row 1"),
            std::string::npos)
      << e.what();
}

}  // namespace
