// C++ structs and PostgreSQL composites through a real server, both
// directions, the same scenarios for each driver: a table with a composite
// column, a nested one and an array of composites; text that needs quoting
// (quotes, backslashes, commas, parentheses, empty vs NULL, non-ASCII);
// an anonymous record; and the errors a user sees for a NULL field or a
// composite of another shape.
#include <pgpipe/async_client.hpp>
#include <pgpipe/blocking_pool.hpp>
#include <pgpipe/composite.hpp>

#include "support/async_kit.hpp"
#include "support/raw_connection.hpp"
#include "support/result_drivers.hpp"

#include <boost/describe/class.hpp>
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace {

struct address {
  std::string street;
  std::int32_t zip = 0;
  std::optional<std::string> note;
  friend bool operator==(const address&, const address&) = default;
};
BOOST_DESCRIBE_STRUCT(address, (), (street, zip, note))

struct person {
  std::string name;
  address home;
  std::vector<std::int32_t> scores;
  friend bool operator==(const person&, const person&) = default;
};
BOOST_DESCRIBE_STRUCT(person, (), (name, home, scores))

// A row of the table: a typed row (by column name) whose fields are composites.
struct resident {
  std::int32_t id = 0;
  person who;
  std::vector<address> homes;
  friend bool operator==(const resident&, const resident&) = default;
};
BOOST_DESCRIBE_STRUCT(resident, (), (id, who, homes))

}  // namespace

template <>
struct pgpipe::is_composite<address> : std::true_type {};
template <>
struct pgpipe::is_composite<person> : std::true_type {};

namespace {

using pgpipe::errc;

constexpr const char* create_types =
    "do $$ begin "
    "create type it_address as (street text, zip int, note text); "
    "create type it_person as (name text, home it_address, scores int[]); "
    "exception when duplicate_object then null; end $$";

template <class D>
class composites : public ::testing::Test {
 protected:
  void SetUp() override { (void)d_.run(create_types); }
  D d_{pgpipe::test::result_driver_params()};
};
TYPED_TEST_SUITE(composites, pgpipe::test::result_drivers, pgpipe::test::driver_names);

// Values whose text forms need every kind of quoting.
const std::vector<address> awkward = {
    {"1 Main St, Apt (2)", 12345, std::nullopt},
    {R"(say "hi" \o/)", -1, ""},
    {"", 0, "phố Huế ☺"},
    {" padded ", 7, "\ttab,\nnewline"},
};

TYPED_TEST(composites, a_table_with_composite_nested_and_array_columns_round_trips) {
  (void)this->d_.run("drop table if exists it_residents");
  (void)this->d_.run("create table it_residents (id int primary key, who it_person, homes it_address[])");
  const std::vector<resident> rows = {
      {1, {"Ann", awkward[0], {1, 2, 3}}, {awkward[1], awkward[2]}},
      {2, {R"(B\"o)", awkward[3], {}}, {}},
      {3, {"", awkward[2], {-7}}, awkward},
  };
  for (const resident& r : rows)
    (void)this->d_.run("insert into it_residents values ($1, $2::it_person, $3::it_address[])", r.id, r.who, r.homes);

  // What the server stored, read field by field in SQL: the parameter's
  // quoting carried every byte.
  EXPECT_EQ(this->d_.template one<std::string>("select (who).home.street from it_residents where id = 2"), " padded ");
  EXPECT_EQ(this->d_.template one<std::string>("select homes[1].street from it_residents where id = 1"),
            R"(say "hi" \o/)");
  EXPECT_EQ(this->d_.template one<std::optional<std::string>>("select (who).home.note from it_residents where id = 1"),
            std::nullopt);
  EXPECT_EQ(this->d_.template one<std::string>("select homes[1].note from it_residents where id = 1"), "");
  EXPECT_EQ(this->d_.template one<std::string>("select (who).name from it_residents where id = 2"), R"(B\"o)");

  // And read back into the structs, columns in another order than the struct's.
  EXPECT_EQ(this->d_.template all<resident>("select homes, who, id from it_residents order by id"), rows);
  // A composite column through the untyped result too.
  auto r = this->d_.run("select who, homes from it_residents where id = 3");
  EXPECT_EQ(r[0][0].template get<person>(), rows[2].who);
  EXPECT_EQ(r[0][1].template get<std::vector<address>>(), awkward);
}

TYPED_TEST(composites, a_parameter_comes_back_as_sent) {
  for (const address& a : awkward) {
    EXPECT_EQ(std::get<0>(this->d_.template one<std::tuple<address>>("select $1::it_address", a)), a);
    // The server parsed each field: compare with its own view of them.
    EXPECT_EQ(this->d_.template one<std::string>("select ($1::it_address).street", a), a.street);
    EXPECT_EQ(this->d_.template one<std::optional<std::string>>("select ($1::it_address).note", a), a.note);
  }
  const person p{"Ann", awkward[1], {4, 5}};
  EXPECT_EQ(this->d_.run("select $1::it_person", p)[0][0].template get<person>(), p);
  EXPECT_EQ(this->d_.template one<int>("select ($1::it_person).scores[2]", p), 5);
}

TYPED_TEST(composites, an_anonymous_record_and_nulls) {
  auto r = this->d_.run(
      "select row('x', 1, null), null::it_address, array[null, row('y', 2, 'z')::it_address], "
      "row('', 3, '')::it_address");
  EXPECT_EQ(r[0][0].template get<address>(), (address{"x", 1, std::nullopt}));
  EXPECT_EQ(r[0][1].template get<std::optional<address>>(), std::nullopt);
  EXPECT_EQ(r[0][2].template get<std::vector<std::optional<address>>>(),
            (std::vector<std::optional<address>>{std::nullopt, address{"y", 2, "z"}}));
  EXPECT_EQ(r[0][3].template get<address>(), (address{"", 3, ""}));
}

TYPED_TEST(composites, an_array_of_anonymous_records) {
  auto r = this->d_.run(
      "select array(select row('s' || i, i, case when i = 2 then null else 'n' end) from generate_series(1, 3) i), "
      "array[row('a, \"b\"', 1, null), null]");
  EXPECT_EQ(r[0][0].template get<std::vector<address>>(),
            (std::vector<address>{{"s1", 1, "n"}, {"s2", 2, std::nullopt}, {"s3", 3, "n"}}));
  EXPECT_EQ(r[0][1].template get<std::vector<std::optional<address>>>(),
            (std::vector<std::optional<address>>{address{"a, \"b\"", 1, std::nullopt}, std::nullopt}));
}

TYPED_TEST(composites, a_null_field_or_another_shape_is_an_error_naming_the_field) {
  auto e = pgpipe::test::thrown(
      [&] { (void)this->d_.template one<std::tuple<address>>("select row(null, 1, 'x')::it_address"); });
  EXPECT_EQ(e.code(), errc::null_value);
  EXPECT_NE(std::string(e.what()).find("composite field 0 (\"street\") is NULL"), std::string::npos) << e.what();

  auto nested = pgpipe::test::thrown([&] {
    (void)this->d_.run("select row('Ann', row('s', null, null)::it_address, '{}')::it_person")[0][0]
        .template get<person>();
  });
  EXPECT_EQ(nested.code(), errc::null_value);
  EXPECT_NE(std::string(nested.what()).find("composite field 1 (\"home\"): composite field 1 (\"zip\") is NULL"),
            std::string::npos)
      << nested.what();

  auto shape = pgpipe::test::thrown([&] { (void)this->d_.run("select row('a', 1)")[0][0].template get<address>(); });
  EXPECT_EQ(shape.code(), errc::type_mismatch);
  EXPECT_NE(std::string(shape.what()).find("the composite has 2 field(s), composite(street, zip, note) has 3"),
            std::string::npos)
      << shape.what();

  auto bad = pgpipe::test::thrown([&] { (void)this->d_.run("select row('a', 'x', 'n')")[0][0].template get<address>(); });
  EXPECT_EQ(bad.code(), errc::conversion_error);
  EXPECT_NE(std::string(bad.what()).find("composite field 1 (\"zip\"): read as int32_t"), std::string::npos)
      << bad.what();
  EXPECT_EQ(this->d_.template one<int>("select 7"), 7);  // the connection is still fine
}

// Binary results straight from libpq (resultFormat 1): the server's own
// record_send layout, nested, in an array, with NULLs and quoting-hungry
// text, read by the same traits both drivers use.
TEST(composites_binary, the_servers_binary_records_read_into_structs) {
  auto conn = pgpipe::test::raw_connect(pgpipe::test::shared_cluster().conninfo());
  ASSERT_EQ(PQstatus(conn.get()), CONNECTION_OK) << PQerrorMessage(conn.get());
  pgpipe::result setup(PQexec(conn.get(), create_types));
  ASSERT_EQ(PQresultStatus(setup.native_handle()), PGRES_COMMAND_OK) << PQerrorMessage(conn.get());
  pgpipe::result r(PQexecParams(conn.get(),
                                "select row('Ann', row('1 Main St, Apt (2)', 12345, null)::it_address, "
                                "array[1, 2])::it_person, "
                                "array[row('say \"hi\" \\o/', -1, '')::it_address, null, "
                                "row('', 0, 'phố Huế ☺')::it_address], "
                                "row(null, 1, 'x')::it_address, row('a', 1)",
                                0, nullptr, nullptr, nullptr, nullptr, 1));
  ASSERT_EQ(PQresultStatus(r.native_handle()), PGRES_TUPLES_OK) << PQerrorMessage(conn.get());
  ASSERT_EQ(r[0][0].format(), pgpipe::wire_format::binary);
  EXPECT_EQ(r[0][0].get<person>(), (person{"Ann", {"1 Main St, Apt (2)", 12345, std::nullopt}, {1, 2}}));
  EXPECT_EQ(r[0][1].get<std::vector<std::optional<address>>>(),
            (std::vector<std::optional<address>>{address{R"(say "hi" \o/)", -1, ""}, std::nullopt,
                                                 address{"", 0, "phố Huế ☺"}}));
  auto null_street = pgpipe::test::thrown([&] { (void)r[0][2].get<address>(); });
  EXPECT_EQ(null_street.code(), errc::null_value);
  EXPECT_NE(std::string(null_street.what()).find("composite field 0 (\"street\") is NULL"), std::string::npos)
      << null_street.what();
  // Binary names each field's type: text where the struct says int32_t.
  pgpipe::result typed(PQexecParams(conn.get(), "select row('a', 'not a number'::text, 'n')", 0, nullptr, nullptr,
                                    nullptr, nullptr, 1));
  auto wrong = pgpipe::test::thrown([&] { (void)typed[0][0].get<address>(); });
  EXPECT_EQ(wrong.code(), errc::type_mismatch);
  EXPECT_NE(std::string(wrong.what()).find("composite field 1 (\"zip\") is text, read as int32_t"),
            std::string::npos)
      << wrong.what();
  auto shape = pgpipe::test::thrown([&] { (void)r[0][3].get<address>(); });
  EXPECT_EQ(shape.code(), errc::type_mismatch);
  // record[]: an array whose elements are anonymous records.
  pgpipe::result records(PQexecParams(conn.get(), "select array[row('x', 7, null), null, row('', -2, 'y')]", 0,
                                      nullptr, nullptr, nullptr, nullptr, 1));
  ASSERT_EQ(PQresultStatus(records.native_handle()), PGRES_TUPLES_OK) << PQerrorMessage(conn.get());
  EXPECT_EQ(records[0][0].get<std::vector<std::optional<address>>>(),
            (std::vector<std::optional<address>>{address{"x", 7, std::nullopt}, std::nullopt, address{"", -2, "y"}}));
}

}  // namespace
