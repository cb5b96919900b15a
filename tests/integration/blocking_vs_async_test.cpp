// The blocking driver and the async driver give the same answers: the same
// rows (text, NULLs, column names) for the same queries and parameters, the
// same parameter types (so the server infers the same operators), the same
// typed reads, and the same error codes for the same failures. A user switching drivers, or
// the bench comparing them, relies on this.
#include <pgpipe/async_client.hpp>
#include <pgpipe/blocking_pool.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"

#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
using pgpipe::test::shared_cluster;

struct table {
  std::vector<std::string> columns;
  std::vector<std::vector<std::optional<std::string>>> rows;
  bool operator==(const table&) const = default;
};

std::ostream& operator<<(std::ostream& os, const table& t) {
  os << t.rows.size() << " rows [";
  for (const auto& c : t.columns) os << c << ' ';
  os << "]";
  for (const auto& r : t.rows) {
    os << "\n  ";
    for (const auto& f : r) os << (f ? *f : std::string("NULL")) << " | ";
  }
  return os;
}

// Both drivers return pgpipe::result: one reading for both.
table from_result(const pgpipe::result& r) {
  table t;
  for (std::size_t c = 0; c < r.columns(); ++c) t.columns.emplace_back(r.column_name(c));
  for (std::size_t i = 0; i < r.size(); ++i) {
    auto& out = t.rows.emplace_back();
    const auto row = r[i];
    for (std::size_t c = 0; c < row.size(); ++c) {
      const auto f = row[c];
      if (f.is_null()) {
        out.emplace_back(std::nullopt);
      } else {
        out.emplace_back(std::string(f.text()));
      }
    }
  }
  return t;
}

class blocking_vs_async : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto& pg = shared_cluster();
    pg.exec("create table if not exists san_pham_cmp(ma text primary key, ten text, so_luong int)");
    pg.exec("truncate san_pham_cmp");
    pg.exec(
        "insert into san_pham_cmp select 'SP' || lpad(i::text, 6, '0'), 'Sản phẩm ' || i, "
        "case when i % 7 = 0 then null else i % 1000 end from generate_series(1, 1000) i");
  }

  pgpipe::pool_params params() const {
    pgpipe::pool_params p;
    p.conninfo = shared_cluster().conninfo();
    p.max_size = 2;
    p.acquire_timeout = std::chrono::seconds(20);
    return p;
  }

  // Runs the same statement and parameters through both drivers.
  template <typename... Args>
  std::pair<table, table> both(std::string_view sql, const Args&... args) {
    table b = from_result(blocking_.exec(sql, args...));
    auto [ec, r] = async_.async_query(sql, args..., pgpipe::test::use_future_ec).get();
    EXPECT_FALSE(ec) << ec.message() << " " << r.diag().to_string();
    return {b, from_result(r)};
  }

  pgpipe::blocking_pool blocking_{params()};
  pgpipe::async_client async_{params(), {.loops = 1}};
};

TEST_F(blocking_vs_async, bench_query_by_key) {
  for (std::string key : {"SP000001", "SP000007", "SP000500", "SP001000", "SP999999"}) {
    auto [b, a] = both("select ten, so_luong from san_pham_cmp where ma = $1", key);
    EXPECT_EQ(b, a) << key;
    EXPECT_EQ(b.rows.size(), key == "SP999999" ? 0u : 1u);
  }
}

TEST_F(blocking_vs_async, many_rows_nulls_and_unicode) {
  auto [b, a] = both("select ma, ten, so_luong from san_pham_cmp where so_luong is null or ma < $1 order by ma",
                     std::string("SP000050"));
  EXPECT_EQ(b, a);
  EXPECT_GT(b.rows.size(), 100u);
}

TEST_F(blocking_vs_async, parameters_of_several_types) {
  auto [b, a] = both("select $1::int8 as i, $2::float8 as f, $3::bool as b, $4::text as t, $5::text as n, "
                     "$6::text as empty",
                     std::int64_t{-9007199254740993}, 0.25, true, std::string("tiếng Việt 'quoted' \\ \t"),
                     std::optional<std::string>{}, std::string());
  EXPECT_EQ(b, a);
  ASSERT_EQ(b.rows.size(), 1u);
  EXPECT_FALSE(b.rows[0][4].has_value());  // NULL stays NULL
  EXPECT_EQ(b.rows[0][5], std::optional<std::string>(""));  // and '' stays ''
}

TEST_F(blocking_vs_async, server_side_types_render_the_same) {
  auto [b, a] = both(
      "select 12345.6789::numeric, '2024-02-29 13:14:15.5+00'::timestamptz at time zone 'UTC', "
      "'\\x00ff10'::bytea, array[1, null, 3], '{\"k\": [1, 2]}'::jsonb, interval '1 day 02:03:04', "
      "'NaN'::float8, 1e300::float8 * 10");
  EXPECT_EQ(b, a);
  ASSERT_EQ(b.rows.size(), 1u);
  EXPECT_EQ(b.rows[0].size(), 8u);
  EXPECT_EQ(b.rows[0][2], std::optional<std::string>("\\x00ff10"));
}

TEST_F(blocking_vs_async, empty_result_keeps_its_columns) {
  auto [b, a] = both("select ma, ten from san_pham_cmp where false");
  EXPECT_EQ(b, a);
  EXPECT_EQ(b.columns, (std::vector<std::string>{"ma", "ten"}));
}

TEST_F(blocking_vs_async, same_error_codes_for_the_same_failures) {
  for (std::string_view sql : {"select 1/0", "select * from no_such_table", "select 'x'::int", "selec 1"}) {
    std::error_code blocking_ec;
    std::string blocking_sqlstate;
    try {
      (void)blocking_.exec(sql);
    } catch (const pgpipe::error& e) {
      blocking_ec = e.code();
      blocking_sqlstate = e.diag().sqlstate;
    }
    auto [ec, r] = async_.async_query(sql, pgpipe::test::use_future_ec).get();
    EXPECT_TRUE(blocking_ec) << sql;
    EXPECT_EQ(blocking_ec, ec) << sql;
    EXPECT_EQ(blocking_sqlstate, r.diag().sqlstate) << sql;
  }
}

TEST_F(blocking_vs_async, parameters_are_typed_alike) {
  // An int64 goes as a typed int8 in both drivers: compared with a text
  // column the server finds no operator, in either driver.
  const std::string_view sql = "select ten from san_pham_cmp where ma = $1";
  std::string blocking_sqlstate;
  try {
    (void)blocking_.exec(sql, std::int64_t{1});
  } catch (const pgpipe::error& e) {
    blocking_sqlstate = e.diag().sqlstate;
  }
  auto [ec, r] = async_.async_query(sql, std::int64_t{1}, pgpipe::test::use_future_ec).get();
  EXPECT_EQ(r.diag().sqlstate, "42883");
  EXPECT_EQ(blocking_sqlstate, r.diag().sqlstate);
  // And the parameter's type is the one the async driver sends.
  auto [b, a] = both("select pg_typeof($1)::text, pg_typeof($2)::text, pg_typeof($3)::text", std::int64_t{1}, 2.5,
                     std::int32_t{3});
  EXPECT_EQ(b, a);
}

TEST_F(blocking_vs_async, rows_read_alike_with_the_same_type_checks) {
  const std::string_view sql = "select ma, so_luong from san_pham_cmp where ma = $1";
  const pgpipe::result b = blocking_.exec(sql, std::string("SP000007"));
  auto [ec, a] = async_.async_query(sql, std::string("SP000007"), pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(b.value<std::string>(0, 0), a.value<std::string>(0, 0));
  // so_luong is NULL for multiples of 7: the same NULL rule.
  EXPECT_EQ(b[0][1].get<std::optional<int>>(), std::nullopt);
  std::error_code b_ec;
  std::error_code a_ec;
  (void)b[0][1].get<int>(b_ec);
  (void)a[0][1].get<int>(a_ec);
  EXPECT_EQ(b_ec, pgpipe::errc::null_value);
  EXPECT_EQ(b_ec, a_ec);
  // And the same type check: text is not read as an integer.
  (void)b[0][0].get<int>(b_ec);
  (void)a[0][0].get<int>(a_ec);
  EXPECT_EQ(b_ec, pgpipe::errc::type_mismatch);
  EXPECT_EQ(b_ec, a_ec);
}

}  // namespace
