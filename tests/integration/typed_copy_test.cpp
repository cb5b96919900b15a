// Typed COPY against a real server, the same scenarios in both drivers:
// 100,000 structs written and read back, strings full of COPY's special
// characters (checked by the server, not only by our own reader), and a row
// that cannot be encoded in the middle of a COPY (nothing committed).
#include <pgpipe/async_client.hpp>
#include <pgpipe/async_typed_copy.hpp>
#include <pgpipe/blocking_pool.hpp>
#include <pgpipe/blocking_typed_copy.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"

#include <boost/asio/use_future.hpp>
#include <boost/describe/class.hpp>

#include <gtest/gtest.h>
#include <pqxx/nontransaction>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using pgpipe::test::app_conninfo;
using pgpipe::test::shared_cluster;

namespace {

// By position (Boost.PFR). `qty` is an int64_t filling an int4 column: text
// COPY lets the server convert.
struct order_line {
  std::int64_t id = 0;
  std::string sku;
  std::int64_t qty = 0;
  double price = 0;
  std::optional<std::string> note;
  bool paid = false;
};

// By name (Boost.Describe), in its declaration order.
struct awkward {
  std::int32_t id = 0;
  std::optional<std::string> s;
};
BOOST_DESCRIBE_STRUCT(awkward, (), (id, s))

pgpipe::pool_params copy_params(const std::string& app) {
  pgpipe::pool_params p = pgpipe::test::params_for(app_conninfo(app), 1);
  p.acquire_timeout = 20s;
  p.query_timeout = 120s;
  return p;
}

struct async_driver {
  static constexpr const char* name = "async";
  explicit async_driver(const std::string& app)
      : client(copy_params(app), {.loops = 1}), lease(pgpipe::test::acquire(client)) {}

  template <class T>
  std::uint64_t write(const std::string& sql, const std::vector<T>& rows) {
    pgpipe::async_copy_writer<T> w(lease.copy_in(sql));
    // Several calls, to show a COPY fed by batches (an empty one too).
    const std::span<const T> all(rows);
    w.async_write_rows(all.first(0), boost::asio::use_future).get();
    w.async_write_rows(all.first(rows.size() / 2), boost::asio::use_future).get();
    w.async_write_rows(all.subspan(rows.size() / 2), boost::asio::use_future).get();
    return w.async_finish(boost::asio::use_future).get().affected_rows();
  }
  template <class T>
  std::vector<T> read(const std::string& sql) {
    pgpipe::async_copy_reader<T> r(lease.copy_out(sql));
    std::vector<T> all;
    for (;;) {
      std::vector<T> some = r.async_next(boost::asio::use_future).get();
      if (some.empty()) break;
      all.insert(all.end(), std::make_move_iterator(some.begin()), std::make_move_iterator(some.end()));
    }
    EXPECT_EQ(r.rows(), all.size());
    return all;
  }
  std::string select_one() {
    return lease.async_query("select 41 + 1", boost::asio::use_future).get().value<std::string>();
  }

  pgpipe::async_client client;
  pgpipe::async_lease lease;
};

struct blocking_driver {
  static constexpr const char* name = "blocking";
  explicit blocking_driver(const std::string& app) : pool(copy_params(app)), lease(pool.acquire()) {}

  template <class T>
  std::uint64_t write(const std::string& sql, const std::vector<T>& rows) {
    pgpipe::blocking_copy_writer<T> w(lease, sql);
    w.write_rows(rows);
    return w.finish();
  }
  template <class T>
  std::vector<T> read(const std::string& sql) {
    pgpipe::blocking_copy_reader<T> r(lease, sql);
    std::vector<T> all;
    T x;
    while (r.next(x)) all.push_back(std::move(x));
    EXPECT_EQ(r.rows(), all.size());
    return all;
  }
  std::string select_one() {
    pqxx::nontransaction tx{*lease};
    return tx.exec("select 41 + 1")[0][0].as<std::string>();
  }

  pgpipe::blocking_pool pool;
  pgpipe::blocking_lease lease;
};

template <class D>
class typed_copy : public ::testing::Test {};
using drivers = ::testing::Types<async_driver, blocking_driver>;
struct driver_name {
  template <class D>
  static std::string GetName(int) {
    return D::name;
  }
};
TYPED_TEST_SUITE(typed_copy, drivers, driver_name);

std::vector<order_line> make_lines(int n) {
  std::vector<order_line> v;
  v.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    std::optional<std::string> note;
    if (i % 7 != 0) note = "note " + std::to_string(i) + (i % 3 == 0 ? "\twith a tab" : "");
    v.push_back(order_line{i, "SKU-" + std::to_string(i * 31 % 1000), i % 500 - 250, i * 0.25, note, i % 2 == 0});
  }
  return v;
}

TYPED_TEST(typed_copy, a_hundred_thousand_structs_go_in_and_come_back_equal) {
  auto& pg = shared_cluster();
  const std::string table = std::string("tcopy_big_") + TypeParam::name;
  pg.exec("drop table if exists " + table + "; create table " + table +
          "(id int8 primary key, sku text, qty int4, price float8, note text, paid bool)");
  TypeParam d(table);
  const std::vector<order_line> rows = make_lines(100'000);
  EXPECT_EQ(d.write("copy " + table + " from stdin", rows), rows.size());
  EXPECT_EQ(pg.query_value("select count(*) from " + table), "100000");
  EXPECT_EQ(pg.query_value("select count(*) from " + table + " where note is null"), "14286");
  EXPECT_EQ(pg.query_value("select sum(qty) from " + table), std::to_string(100'000 / 500 * (-250 * 500 + 499 * 500 / 2)));

  const std::vector<order_line> back = d.template read<order_line>("copy (select * from " + table + " order by id) to stdout");
  ASSERT_EQ(back.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const order_line& a = rows[i];
    const order_line& b = back[i];
    ASSERT_TRUE(a.id == b.id && a.sku == b.sku && a.qty == b.qty && a.price == b.price && a.note == b.note &&
                a.paid == b.paid)
        << "row " << i << " differs: " << b.id << " " << b.sku << " " << b.qty << " " << b.price << " "
        << b.note.value_or("NULL") << " " << b.paid;
  }
}

TYPED_TEST(typed_copy, awkward_strings_reach_the_server_as_they_are) {
  auto& pg = shared_cluster();
  const std::string table = std::string("tcopy_awkward_") + TypeParam::name;
  pg.exec("drop table if exists " + table + "; create table " + table + "(id int4 primary key, s text)");
  std::string long_one;
  for (int i = 0; i < 20'000; ++i) long_one += "a\\b\tc\nd\re\\N.";
  const std::vector<std::optional<std::string>> values = {
      std::nullopt, "", "\\N", "\\\\N", "\\", "\t", "\n", "\r", "\r\n", "\\.", ".", "a\\tb", "tab\there",
      "ti\xE1\xBA\xBFng Vi\xE1\xBB\x87t \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x98\x80", "\\x41", "\\101",
      " lead and trail ", long_one};
  std::vector<awkward> rows;
  for (std::size_t i = 0; i < values.size(); ++i) rows.push_back(awkward{static_cast<std::int32_t>(i), values[i]});
  TypeParam d(table);
  EXPECT_EQ(d.write("copy " + table + "(id, s) from stdin", rows), rows.size());

  // The server's own view of every value, so a symmetric mistake in our
  // writer and reader cannot pass: its bytes in hex, or NULL.
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::string got = pg.query_value("select coalesce(encode(convert_to(s, 'UTF8'), 'hex'), 'NULL') from " +
                                           table + " where id = " + std::to_string(i));
    std::string want = "NULL";
    if (values[i]) {
      static const char* digits = "0123456789abcdef";
      want.clear();
      for (unsigned char c : *values[i]) {
        want += digits[c >> 4];
        want += digits[c & 15];
      }
    }
    EXPECT_EQ(got, want) << "value " << i;
  }

  const std::vector<awkward> back = d.template read<awkward>("copy (select id, s from " + table + " order by id) to stdout");
  ASSERT_EQ(back.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(back[i].id, rows[i].id);
    EXPECT_EQ(back[i].s, rows[i].s) << "value " << i;
  }
}

TYPED_TEST(typed_copy, a_row_that_cannot_be_encoded_fails_naming_it_and_nothing_is_committed) {
  auto& pg = shared_cluster();
  const std::string table = std::string("tcopy_bad_") + TypeParam::name;
  pg.exec("drop table if exists " + table + "; create table " + table + "(id int4, s text)");
  std::vector<awkward> rows;
  for (int i = 0; i < 50'000; ++i) rows.push_back(awkward{i, "row " + std::to_string(i)});
  rows[30'000].s = std::string("a NUL\0here", 10);
  TypeParam d(table);
  try {
    d.write("copy " + table + "(id, s) from stdin", rows);
    ADD_FAILURE() << "a row with a NUL byte was sent";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::errc::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("row 30001, field 2 (s)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("NUL byte"), std::string::npos) << e.what();
  }
  // Rows before the bad one had been sent (the chunks are 64 KiB): the COPY
  // was ended with a failure, so none of them stayed.
  EXPECT_EQ(pg.query_value("select count(*) from " + table), "0");
  EXPECT_EQ(d.select_one(), "42");  // the lease serves its next query
}

TYPED_TEST(typed_copy, a_null_into_a_field_that_cannot_hold_it_names_the_row) {
  auto& pg = shared_cluster();
  const std::string table = std::string("tcopy_null_") + TypeParam::name;
  pg.exec("drop table if exists " + table + "; create table " + table + "(id int4, s text);" + "insert into " + table +
          " select g, 'x' from generate_series(1, 1000) g; update " + table + " set s = null where id = 700");
  struct strict {
    std::int32_t id = 0;
    std::string s;
  };
  TypeParam d(table);
  try {
    (void)d.template read<strict>("copy (select id, s from " + table + " order by id) to stdout");
    ADD_FAILURE() << "a NULL was read into a std::string";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::errc::null_value) << e.what();
    EXPECT_NE(std::string(e.what()).find("row 700, field 2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(d.select_one(), "42");
}

}  // namespace
