// The operations that yield T directly, against a real server: async
// async_query_as / _one / _opt (throwing tokens and the (ec, value) form)
// and blocking query_as / _one / _opt, the same scenarios for each driver.
#include <pgpipe/async_client.hpp>
#include <pgpipe/blocking_pool.hpp>

#include "support/async_kit.hpp"
#include "support/result_drivers.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/describe/class.hpp>
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace {

namespace asio = boost::asio;
using pgpipe::errc;

struct city {
  std::int32_t id = 0;
  std::string name;
  std::optional<std::int64_t> people;
};
BOOST_DESCRIBE_STRUCT(city, (), (id, name, people))

// The columns come back in another order than city's fields.
constexpr const char* cities_sql =
    "select people, name, id from (values (1, 'Hà Nội', 8000000::int8), (2, 'Huế', null), (3, 'Đà Lạt', 400000)) "
    "as v(id, name, people) where id <= $1 order by id";

template <class D>
class typed_query : public ::testing::Test {
 protected:
  D d_{pgpipe::test::result_driver_params(2)};
};
TYPED_TEST_SUITE(typed_query, pgpipe::test::result_drivers, pgpipe::test::driver_names);

using pgpipe::test::thrown;

TYPED_TEST(typed_query, every_row_into_a_described_struct) {
  std::vector<city> v = this->d_.template all<city>(cities_sql, 3);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].name, "Hà Nội");
  EXPECT_EQ(v[0].people, 8000000);
  EXPECT_EQ(v[1].id, 2);
  EXPECT_FALSE(v[1].people.has_value());
  EXPECT_TRUE(this->d_.template all<city>(cities_sql, 0).empty());
  auto names = this->d_.template all<std::string>("select name from (values ('a'), ('b')) v(name)");
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b"}));
}

TYPED_TEST(typed_query, one_wants_exactly_one_row) {
  EXPECT_EQ(this->d_.template one<city>(cities_sql, 1).name, "Hà Nội");
  auto none = thrown([&] { (void)this->d_.template one<city>(cities_sql, 0); });
  EXPECT_EQ(none.code(), errc::out_of_range);
  EXPECT_NE(std::string(none.what()).find("expected exactly one row, the query returned 0"), std::string::npos)
      << none.what();
  auto two = thrown([&] { (void)this->d_.template one<city>(cities_sql, 2); });
  EXPECT_NE(std::string(two.what()).find("the query returned 2"), std::string::npos) << two.what();
  EXPECT_EQ((this->d_.template one<std::tuple<std::int64_t, std::string>>("select 5::int8, 'x'")),
            std::make_tuple(std::int64_t{5}, std::string("x")));
}

TYPED_TEST(typed_query, opt_accepts_none_or_one) {
  EXPECT_FALSE(this->d_.template opt<city>(cities_sql, 0).has_value());
  EXPECT_EQ(this->d_.template opt<city>(cities_sql, 1)->id, 1);
  EXPECT_EQ(thrown([&] { (void)this->d_.template opt<city>(cities_sql, 3); }).code(), errc::out_of_range);
}

TYPED_TEST(typed_query, shape_and_server_errors_reach_the_caller_with_their_message) {
  auto shape = thrown([&] { (void)this->d_.template all<city>("select 1 as id, 'x' as title, null::int8 as people"); });
  EXPECT_EQ(shape.code(), errc::columns_mismatch);
  EXPECT_NE(std::string(shape.what()).find("no column for field \"name\""), std::string::npos) << shape.what();
  EXPECT_NE(std::string(shape.what()).find("(\"title\") has no field"), std::string::npos) << shape.what();

  // The shape is checked even when no row came back.
  EXPECT_EQ(thrown([&] { (void)this->d_.template opt<city>("select 1 as id where false"); }).code(),
            errc::columns_mismatch);

  auto server = thrown([&] { (void)this->d_.template all<city>("select * from no_such_table"); });
  EXPECT_EQ(server.code(), pgpipe::make_sqlstate("42P01"));
  EXPECT_NE(std::string(server.what()).find("no_such_table"), std::string::npos) << server.what();
}

TEST(typed_query_async, the_error_code_form_gives_the_code_and_an_empty_value) {
  pgpipe::async_client client{pgpipe::test::result_driver_params(2), {.loops = 1}};
  auto [ec, v] = client.async_query_as<city>("select 1 as id", pgpipe::test::use_future_ec).get();
  EXPECT_EQ(ec, errc::columns_mismatch);
  EXPECT_TRUE(v.empty());
  auto [ec1, one] = client.async_query_as_one<city>(cities_sql, 1, pgpipe::test::use_future_ec).get();
  EXPECT_FALSE(ec1) << ec1.message();
  EXPECT_EQ(one.name, "Hà Nội");
  auto [ec2, none] = client.async_query_as_opt<city>(cities_sql, 3, pgpipe::test::use_future_ec).get();
  EXPECT_EQ(ec2, errc::out_of_range);
  EXPECT_FALSE(none.has_value());
}

TEST(typed_query_async, a_coroutine_reads_rows_or_catches_the_error_with_its_message) {
  pgpipe::async_client client{pgpipe::test::result_driver_params(2), {.loops = 1}};
  asio::io_context io;
  std::vector<city> got;
  std::string caught;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        got = co_await client.async_query_as<city>(cities_sql, 3, asio::use_awaitable);
        try {
          (void)co_await client.async_query_as_one<city>("select 'x'::text as id, 'n' as name, null::int8 as people",
                                                         asio::use_awaitable);
        } catch (const pgpipe::error& e) {
          caught = e.what();
        }
      },
      asio::detached);
  io.run();
  EXPECT_EQ(got.size(), 3u);
  EXPECT_NE(caught.find("field \"id\" from column 0 (\"id\", type text, read as int32_t)"), std::string::npos)
      << caught;
}

}  // namespace
