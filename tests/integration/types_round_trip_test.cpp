// The types a service stores, round-tripped through a real server
// by both drivers with the same C++ types. Each scenario is written once and
// run against each driver (a typed test). The session's TimeZone is not UTC
// (Asia/Kolkata, +05:30), so a timestamptz read back must honour the offset
// the server prints.
#include <pgpipe/async_client.hpp>
#include <pgpipe/blocking_pool.hpp>
#include <pgpipe/type_traits.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"

#include <boost/asio/use_future.hpp>
#include <boost/json.hpp>
#include <boost/uuid/nil_generator.hpp>
#include <boost/uuid/random_generator.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
using namespace std::chrono;
using pgpipe::errc;
using pgpipe::test::shared_cluster;

pgpipe::pool_params params() {
  pgpipe::pool_params p;
  p.conninfo = pgpipe::test::with_options(shared_cluster().conninfo(), "options='-c TimeZone=Asia/Kolkata'");
  p.max_size = 1;
  p.acquire_timeout = seconds(20);
  return p;
}

// One row of results, read with get<T>(col) and get<T>(col, ec).
struct async_driver {
  static constexpr const char* name = "async";
  pgpipe::async_client client{params(), {.loops = 1}};
  using result_type = pgpipe::result;
  template <class... A>
  pgpipe::result run(std::string_view sql, const A&... args) {
    auto [ec, r] = client.async_query(sql, args..., pgpipe::test::use_future_ec).get();
    if (ec) throw pgpipe::error(ec, r.diag().to_string());
    return std::move(r);
  }
  template <class T>
  static T get(const pgpipe::result& r, std::size_t col) {
    return r[0].get<T>(col);
  }
  template <class T>
  static std::error_code try_get(const pgpipe::result& r, std::size_t col) {
    std::error_code ec;
    (void)r[0][col].get<T>(ec);
    return ec;
  }
};

// blocking_pool::exec: the same result class, read the same way.
struct blocking_driver {
  static constexpr const char* name = "blocking";
  pgpipe::blocking_pool pool{params()};
  template <class... A>
  pgpipe::result run(std::string_view sql, const A&... args) {
    return pool.exec(sql, args...);
  }
  template <class T>
  static T get(const pgpipe::result& r, std::size_t col) {
    return async_driver::get<T>(r, col);
  }
  template <class T>
  static std::error_code try_get(const pgpipe::result& r, std::size_t col) {
    return async_driver::try_get<T>(r, col);
  }
};

// The libpqxx idiom on the blocking driver: a pqxx::work, parameters through
// pgpipe::pqxx_arg, fields read with pgpipe::get<T>(pqxx::field).
struct blocking_work_driver {
  static constexpr const char* name = "blocking_work";
  pgpipe::blocking_pool pool{params()};
  template <class... A>
  pqxx::result run(std::string_view sql, const A&... args) {
    return pool.transaction([&](pqxx::work& tx) {
      return pgpipe::detail::pqxx_exec_params(tx, sql, pgpipe::pqxx_arg(args)...);
    });
  }
  template <class T>
  static T get(const pqxx::result& r, std::size_t col) {
    return pgpipe::get<T>(r[0][static_cast<pqxx::row::size_type>(col)]);
  }
  template <class T>
  static std::error_code try_get(const pqxx::result& r, std::size_t col) {
    std::error_code ec;
    (void)pgpipe::get<T>(r[0][static_cast<pqxx::row::size_type>(col)], ec);
    return ec;
  }
};

template <class D>
class types_round_trip : public ::testing::Test {
 protected:
  // select $1::<sql_type>, read back as T.
  template <class T, class P>
  T round_trip(const P& v, const std::string& sql_type) {
    auto r = d_.run("select $1::" + sql_type, v);
    return D::template get<T>(r, 0);
  }
  template <class T>
  T value_of(const std::string& sql) {
    auto r = d_.run(sql);
    return D::template get<T>(r, 0);
  }
  D d_;
};

using drivers = ::testing::Types<async_driver, blocking_driver, blocking_work_driver>;
struct driver_names {
  template <class D>
  static std::string GetName(int) {
    return D::name;
  }
};
TYPED_TEST_SUITE(types_round_trip, drivers, driver_names);

TYPED_TEST(types_round_trip, integers_floats_bool_text) {
  EXPECT_EQ(this->template round_trip<std::int16_t>(std::int16_t{-32768}, "int2"), -32768);
  EXPECT_EQ(this->template round_trip<std::int32_t>(std::numeric_limits<std::int32_t>::max(), "int4"),
            std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(this->template round_trip<std::int64_t>(std::numeric_limits<std::int64_t>::min(), "int8"),
            std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(this->template round_trip<double>(0.1, "float8"), 0.1);
  EXPECT_EQ(this->template round_trip<float>(0.1f, "float4"), 0.1f);
  EXPECT_TRUE(this->template round_trip<bool>(true, "bool"));
  EXPECT_EQ(this->template round_trip<std::string>(std::string(), "text"), "");
  EXPECT_EQ(this->template round_trip<std::string>(std::string("tiếng Việt ☃"), "varchar"), "tiếng Việt ☃");
  // A value too large for the requested integer is refused, not truncated.
  auto r = this->d_.run("select 40000::int4");
  EXPECT_EQ(TypeParam::template try_get<std::int16_t>(r, 0), errc::conversion_error);
}

TYPED_TEST(types_round_trip, mismatches_and_nulls) {
  auto r = this->d_.run("select 'x'::text as t, null::int4 as n, 1.5::numeric as num");
  EXPECT_EQ(TypeParam::template try_get<int>(r, 0), errc::type_mismatch);
  EXPECT_EQ(TypeParam::template try_get<int>(r, 1), errc::null_value);
  EXPECT_EQ(TypeParam::template try_get<double>(r, 2), errc::type_mismatch);
  EXPECT_EQ(TypeParam::template get<std::optional<int>>(r, 1), std::nullopt);
  try {
    (void)TypeParam::template get<int>(r, 0);
    FAIL() << "expected pgpipe::error";
  } catch (const pgpipe::error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.code(), errc::type_mismatch);
    EXPECT_NE(m.find("\"t\""), std::string::npos) << m;
    EXPECT_NE(m.find("text"), std::string::npos) << m;
    EXPECT_NE(m.find("int32_t"), std::string::npos) << m;
  }
  // NULL parameters of each mapped type stay NULL.
  EXPECT_EQ(this->template round_trip<std::optional<boost::uuids::uuid>>(std::optional<boost::uuids::uuid>(), "uuid"),
            std::nullopt);
  EXPECT_EQ((this->template round_trip<std::optional<pgpipe::numeric>>(std::optional<pgpipe::numeric>(), "numeric")),
            std::nullopt);
}

TYPED_TEST(types_round_trip, bytea_of_one_mebibyte_with_every_byte_value) {
  std::vector<std::byte> b(1 << 20);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::byte>((i * 7 + i / 256) % 256);
  auto r = this->d_.run("select $1::bytea, length($1::bytea), $2::bytea", b, std::vector<std::byte>{});
  EXPECT_EQ(TypeParam::template get<std::int32_t>(r, 1), 1 << 20);
  EXPECT_EQ(TypeParam::template get<std::vector<std::byte>>(r, 0), b);
  EXPECT_TRUE(TypeParam::template get<std::vector<std::byte>>(r, 2).empty());
  const std::vector<std::byte> nul{std::byte{0}, std::byte{'a'}, std::byte{0}};
  EXPECT_EQ(this->template round_trip<std::vector<std::byte>>(nul, "bytea"), nul);
  EXPECT_EQ(this->template round_trip<std::optional<std::vector<std::byte>>>(std::optional(nul), "bytea"), nul);
}

TYPED_TEST(types_round_trip, uuid) {
  const auto nil = boost::uuids::nil_uuid();
  EXPECT_EQ(this->template round_trip<boost::uuids::uuid>(nil, "uuid"), nil);
  const auto u = boost::uuids::random_generator()();
  EXPECT_EQ(this->template round_trip<boost::uuids::uuid>(u, "uuid"), u);
  EXPECT_EQ(this->template value_of<std::string>("select 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'::uuid"),
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
}

TYPED_TEST(types_round_trip, timestamps_in_a_session_that_is_not_utc) {
  EXPECT_EQ(this->template value_of<std::string>("show TimeZone"), "Asia/Kolkata");
  for (sys_time<microseconds> t : std::vector<sys_time<microseconds>>{
           sys_days(1969y / July / 20) + 20h + 17min + 40s + 123457us, sys_days(1900y / January / 1) + 1us,
           sys_days(2038y / January / 19) + 3h + 14min + 8s + 999999us, sys_days(2262y / April / 12) + 23h,
           sys_days(year(-44) / March / 15) + 12h}) {
    EXPECT_EQ(this->template round_trip<sys_time<microseconds>>(t, "timestamptz"), t);
  }
  // The server's own text, in +05:30, read as the instant it names.
  EXPECT_EQ(this->template value_of<sys_time<microseconds>>("select '2024-05-06 07:08:09.000001+00'::timestamptz"),
            sys_days(2024y / May / 6) + 7h + 8min + 9s + 1us);
  EXPECT_EQ(this->template value_of<std::string>("select '2024-05-06 07:08:09.000001+00'::timestamptz"),
            "2024-05-06 12:38:09.000001+05:30");
  EXPECT_EQ(this->template round_trip<sys_time<microseconds>>(sys_time<microseconds>::max(), "timestamptz"),
            sys_time<microseconds>::max());
  EXPECT_EQ(this->template value_of<sys_time<microseconds>>("select '-infinity'::timestamptz"),
            sys_time<microseconds>::min());
  const local_time<microseconds> lt{(sys_days(1950y / June / 1) + 1h + 2us).time_since_epoch()};
  EXPECT_EQ(this->template round_trip<local_time<microseconds>>(lt, "timestamp"), lt);
  // Any system_clock time point is accepted as a parameter.
  const sys_time<seconds> s = sys_days(2040y / February / 29) + 1s;
  EXPECT_EQ(this->template round_trip<sys_time<microseconds>>(s, "timestamptz"), s);
}

TYPED_TEST(types_round_trip, dates_times_intervals) {
  for (sys_days d : {sys_days(1969y / December / 31), sys_days(2100y / February / 28), sys_days(year(-99) / May / 1),
                     sys_days(1582y / October / 4)}) {
    EXPECT_EQ(this->template round_trip<sys_days>(d, "date"), d);
  }
  EXPECT_EQ(this->template round_trip<year_month_day>(2040y / March / 1, "date"), 2040y / March / 1);
  EXPECT_EQ(this->template value_of<sys_days>("select 'infinity'::date"), sys_days::max());
  auto r = this->d_.run("select 'infinity'::date");
  EXPECT_EQ(TypeParam::template try_get<year_month_day>(r, 0), errc::out_of_range);
  const hh_mm_ss<microseconds> t{13h + 14min + 15s + 16us};
  EXPECT_EQ(this->template round_trip<microseconds>(t, "time"), t.to_duration());
  for (pgpipe::interval iv : {pgpipe::interval{14, -3, 14706000007}, pgpipe::interval{0, 0, -1},
                              pgpipe::interval{-1, 40, 86400000000LL * 3}}) {
    EXPECT_EQ(this->template round_trip<pgpipe::interval>(iv, "interval"), iv);
  }
}

TYPED_TEST(types_round_trip, numeric_exact_nan_infinity_and_a_thousand_digits) {
  std::string big(1000, '0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('1' + i % 9);
  big.insert(600, ".");
  std::vector<std::string> values{"NaN", "0", "-0.000100", big, "-" + big};
  // numeric has ±Infinity from PostgreSQL 14 on.
  if (pgpipe::devcluster::cluster::server_major() >= 14) values.insert(values.end(), {"-Infinity", "Infinity"});
  for (const std::string& s : values) {
    EXPECT_EQ(this->template round_trip<pgpipe::numeric>(pgpipe::numeric(s), "numeric").str(), s);
  }
  EXPECT_EQ(this->template value_of<pgpipe::numeric>("select 2::numeric ^ 200").str().substr(0, 10), "1606938044");
}

TYPED_TEST(types_round_trip, json_and_jsonb_with_unicode_and_nesting) {
  const auto doc = boost::json::parse(R"({"tên":"Nguyễn ☃ 😀","a":[1,2.5,{"b":[null,true,"\u0001"]}],"n":{}})");
  EXPECT_EQ(this->template round_trip<boost::json::value>(doc, "jsonb"), doc);
  EXPECT_EQ(this->template round_trip<boost::json::value>(doc, "json"), doc);
  // The raw text is there too.
  EXPECT_EQ(this->template value_of<std::string>("select '{\"a\": 1}'::jsonb"), "{\"a\": 1}");
}

TYPED_TEST(types_round_trip, arrays) {
  EXPECT_TRUE(this->template round_trip<std::vector<std::int64_t>>(std::vector<std::int64_t>{}, "int8[]").empty());
  const std::vector<std::optional<std::int32_t>> with_nulls{1, std::nullopt, -3, std::nullopt};
  EXPECT_EQ(this->template round_trip<std::vector<std::optional<std::int32_t>>>(with_nulls, "int4[]"), with_nulls);
  std::vector<std::int64_t> big(10000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::int64_t>(i * i) - 5000;
  EXPECT_EQ(this->template round_trip<std::vector<std::int64_t>>(big, "int8[]"), big);
  const std::vector<std::optional<std::string>> strs{"a,b", "\"q\"", "", std::nullopt, "NULL", "\\", "x y"};
  EXPECT_EQ(this->template round_trip<std::vector<std::optional<std::string>>>(strs, "text[]"), strs);
  const std::vector<boost::uuids::uuid> ids{boost::uuids::nil_uuid(), boost::uuids::random_generator()()};
  EXPECT_EQ(this->template round_trip<std::vector<boost::uuids::uuid>>(ids, "uuid[]"), ids);
  const std::vector<pgpipe::numeric> nums{pgpipe::numeric("1.50"), pgpipe::numeric("NaN")};
  EXPECT_EQ(this->template round_trip<std::vector<pgpipe::numeric>>(nums, "numeric[]"), nums);
  const std::vector<sys_time<microseconds>> ts{sys_days(1960y / January / 1) + 1us, sys_days(2050y / January / 1)};
  EXPECT_EQ(this->template round_trip<std::vector<sys_time<microseconds>>>(ts, "timestamptz[]"), ts);
  // Elements used in SQL, not just echoed.
  auto r = this->d_.run("select count(*) from unnest($1::int8[]) x where x > 0", big);
  EXPECT_EQ(TypeParam::template get<std::int64_t>(r, 0), 9929);
  auto n = this->d_.run("select array[1, null]::int4[], array[[1,2],[3,4]]::int4[]");
  EXPECT_EQ(TypeParam::template try_get<std::vector<int>>(n, 0), errc::null_value);
  EXPECT_EQ(TypeParam::template try_get<std::vector<int>>(n, 1), errc::dimensions_mismatch);  // 2-D: std::vector<std::vector<int>> reads it
}

// The async driver prepares statements with their parameter types: the
// same SQL text with other argument types is another statement.
TEST(types_async, same_sql_with_other_parameter_types) {
  async_driver d;
  auto a = d.run("select $1::text", 42);
  auto b = d.run("select $1::text", std::string("x"));
  auto c = d.run("select $1::text", std::int64_t{1} << 40);
  EXPECT_EQ(async_driver::get<std::string>(a, 0), "42");
  EXPECT_EQ(async_driver::get<std::string>(b, 0), "x");
  EXPECT_EQ(async_driver::get<std::string>(c, 0), "1099511627776");
}

// The README's usage example, as written there.
TEST(types_async, readme_usage_query) {
  shared_cluster().exec(
      "create table if not exists orders(id uuid primary key, placed timestamptz, doc jsonb, tags text[], "
      "total numeric)");
  async_driver d;
  boost::uuids::uuid id = boost::uuids::random_generator()();
  sys_time<microseconds> placed = floor<microseconds>(system_clock::now());
  boost::json::value doc = {{"customer", "Nguyễn"}, {"items", {1, 2, 3}}};
  std::vector<std::string> tags{"gift", "express"};
  auto r = d.run("insert into orders values ($1, $2, $3, $4, $5) returning id, placed, doc, tags, total", id, placed,
                 doc, tags, pgpipe::numeric("19.90"));
  EXPECT_EQ(r[0].get<boost::uuids::uuid>("id"), id);
  EXPECT_EQ(r[0].get<sys_time<microseconds>>("placed"), placed);
  EXPECT_EQ(r[0].get<boost::json::value>("doc"), doc);
  EXPECT_EQ(r[0].get<std::vector<std::optional<std::string>>>("tags"),
            (std::vector<std::optional<std::string>>{"gift", "express"}));
  EXPECT_EQ(r[0].get<pgpipe::numeric>("total").str(), "19.90");
  blocking_driver b;
  pgpipe::result rows = b.pool.exec("select placed from orders where id = $1", id);
  EXPECT_EQ(rows.at(0).get<sys_time<microseconds>>(0), placed);
}

}  // namespace
