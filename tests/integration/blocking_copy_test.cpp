// COPY on a blocking lease: 1M rows each way in bounded memory, a malformed
// row, a client abort, an early stop of COPY TO, and the refusal of COPY on
// the async shared path.
#include <pgpipe/async_client.hpp>
#include <pgpipe/blocking_copy.hpp>
#include <pgpipe/blocking_pool.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/big_copy_chunk.hpp"
#include "support/copy_rows.hpp"
#include "support/kit.hpp"
#include "support/rss.hpp"

#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>
#include <pqxx/nontransaction>

#include <chrono>
#include <cstdio>
#include <string>

using namespace std::chrono_literals;
using pgpipe::test::app_conninfo;
using pgpipe::test::shared_cluster;
using pgpipe::test::reset_peak_rss;
using pgpipe::test::status_kb;

namespace {

pgpipe::pool_params copy_params(const std::string& app) {
  pgpipe::pool_params p = pgpipe::test::params_for(app_conninfo(app), 1);
  p.acquire_timeout = 20s;
  return p;
}

std::string select_one(pgpipe::blocking_lease& lease) {
  pqxx::nontransaction tx{*lease};
  return tx.exec("select 41 + 1")[0][0].as<std::string>();
}

}  // namespace

TEST(blocking_copy, a_million_rows_in_and_out_in_bounded_memory) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists copy_big; create table copy_big(id int, name text)");
  pgpipe::blocking_pool pool(copy_params("copy_big"));
  auto lease = pool.acquire();
  constexpr int rows = 1'000'000;
  ASSERT_TRUE(reset_peak_rss());
  const long rss_before = status_kb("VmRSS");

  const auto t0 = std::chrono::steady_clock::now();
  pgpipe::blocking_copy_in in(lease, "copy copy_big(id, name) from stdin");
  pgpipe::test::copy_row_chunks source(rows);
  std::string chunk;
  while (source.next(chunk)) in.write(chunk);
  EXPECT_EQ(in.finish(), static_cast<std::uint64_t>(rows));
  const auto t1 = std::chrono::steady_clock::now();

  pgpipe::blocking_copy_out out(lease, "copy copy_big to stdout");
  std::string row;
  long long got = 0;
  long long id_sum = 0;
  while (out.next(row)) {
    ++got;
    id_sum += std::stoll(row.substr(0, row.find('\t')));
  }
  const auto t2 = std::chrono::steady_clock::now();
  EXPECT_EQ(got, rows);
  EXPECT_EQ(out.rows(), static_cast<std::uint64_t>(rows));
  EXPECT_EQ(id_sum, source.id_sum());

  const long peak_growth_kb = status_kb("VmHWM") - rss_before;
  if (pgpipe::test::rss_is_meaningful) {
    EXPECT_LT(peak_growth_kb, 16 * 1024) << "peak RSS grew by " << peak_growth_kb << " kB";
  }
  using ms = std::chrono::milliseconds;
  std::printf("[figures] COPY FROM STDIN 1M rows: %lld ms; COPY TO STDOUT 1M rows: %lld ms; peak RSS growth %ld kB\n",
              static_cast<long long>(std::chrono::duration_cast<ms>(t1 - t0).count()),
              static_cast<long long>(std::chrono::duration_cast<ms>(t2 - t1).count()), peak_growth_kb);
  EXPECT_EQ(select_one(lease), "42");
  PGPIPE_SKIP_IF_RSS_UNCHECKED();
}

TEST(blocking_copy, a_malformed_row_fails_with_the_servers_sqlstate_and_leaves_nothing) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists copy_bad; create table copy_bad(id int)");
  pgpipe::blocking_pool pool(copy_params("copy_bad"));
  auto lease = pool.acquire();
  try {
    pgpipe::blocking_copy_in in(lease, "copy copy_bad from stdin");
    std::string good;
    for (int i = 0; i < 10000; ++i) good += std::to_string(i) + "\n";
    in.write(good);
    in.write("12\nnot a number\n13\n");
    in.write(good);
    in.finish();
    ADD_FAILURE() << "a malformed row was accepted";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(pgpipe::sqlstate_of(e.code()), "22P02") << e.what();
    EXPECT_EQ(e.diag().sqlstate, "22P02");
    EXPECT_NE(e.diag().message.find("not a number"), std::string::npos) << e.what();
  }
  EXPECT_EQ(pg.query_value("select count(*) from copy_bad"), "0");
  EXPECT_EQ(select_one(lease), "42");  // the lease serves the next query
}

TEST(blocking_copy, a_client_abort_leaves_nothing_and_the_lease_goes_on) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists copy_abort; create table copy_abort(id int)");
  pgpipe::blocking_pool pool(copy_params("copy_abort"));
  auto lease = pool.acquire();
  {
    pgpipe::blocking_copy_in in(lease, "copy copy_abort from stdin");
    in.write("1\n2\n3\n");
    in.abort("the producer failed");
    EXPECT_FALSE(in.active());
  }
  {
    pgpipe::blocking_copy_in in(lease, "copy copy_abort from stdin");
    in.write("4\n5\n");
    // Destroyed without finish(): aborted too.
  }
  EXPECT_EQ(pg.query_value("select count(*) from copy_abort"), "0");
  EXPECT_EQ(select_one(lease), "42");
  pgpipe::blocking_copy_in in(lease, "copy copy_abort from stdin");
  in.write("6\n");
  EXPECT_EQ(in.finish(), 1u);
  EXPECT_EQ(pg.query_value("select count(*) from copy_abort"), "1");
}

// The password is a word libpq's loss message holds ("server closed the
// connection unexpectedly"): the COPY's connection_lost error must scrub it
// like every other message.
TEST(blocking_copy, a_connection_lost_mid_copy_is_reported_without_the_password) {
  auto& pg = shared_cluster();
  const std::string secret = "closed";
  pgpipe::test::limited_role role(pg, "bcopy_lost_role", secret);
  pg.exec("drop table if exists copy_lost; create table copy_lost(id int); grant insert on copy_lost to bcopy_lost_role");
  pgpipe::blocking_pool pool(pgpipe::test::params_for(role.conninfo("copy_lost"), 1));
  auto lease = pool.acquire();
  std::string pid;
  {
    pqxx::nontransaction tx{*lease};
    pid = tx.exec("select pg_backend_pid()")[0][0].as<std::string>();
  }
  pgpipe::blocking_copy_in in(lease, "copy copy_lost from stdin");
  in.write("1\n");
  pg.exec("select pg_terminate_backend(" + pid + ")");
  try {
    // Writes may still succeed until the socket notices; finish reports the loss.
    for (int i = 0; i < 1000; ++i) in.write(std::string(64 * 1024, '\n'));
    (void)in.finish();
    FAIL() << "the COPY succeeded on a terminated backend";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::errc::connection_lost) << e.what();
    pgpipe::test::expect_no_secret(e.what(), {secret}, "the COPY's error");
  }
  EXPECT_EQ(pg.query_value("select count(*) from copy_lost"), "0");
}

TEST(blocking_copy, stopping_copy_out_early_keeps_the_lease_usable) {
  pgpipe::blocking_pool pool(copy_params("copy_stop"));
  auto lease = pool.acquire();
  {
    pgpipe::blocking_copy_out out(lease, "copy (select g from generate_series(1, 5000000) g) to stdout");
    std::string row;
    ASSERT_TRUE(out.next(row));
    EXPECT_EQ(row, "1\n");
  }  // destroyed mid-stream
  EXPECT_EQ(select_one(lease), "42");
}

TEST(blocking_copy, statements_that_are_not_the_right_copy_are_refused) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists copy_wrong; create table copy_wrong(id int); insert into copy_wrong values (1)");
  pgpipe::blocking_pool pool(copy_params("copy_wrong"));
  auto lease = pool.acquire();
  try {
    pgpipe::blocking_copy_in in(lease, "delete from copy_wrong");
    ADD_FAILURE();
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::errc::invalid_argument);
  }
  EXPECT_EQ(pg.query_value("select count(*) from copy_wrong"), "1");  // never sent
  try {
    pgpipe::blocking_copy_in in(lease, "copy copy_wrong to stdout");
    ADD_FAILURE();
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::errc::invalid_argument);
  }
  try {
    pgpipe::blocking_copy_out out(lease, "copy no_such_table to stdout");
    ADD_FAILURE();
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(pgpipe::sqlstate_of(e.code()), "42P01");
  }
  EXPECT_EQ(select_one(lease), "42");
}

TEST(blocking_copy, async_shared_path_refuses_copy_and_points_to_a_lease) {
  pgpipe::async_client client(pgpipe::test::params_for(app_conninfo("copy_shared"), 1), {.loops = 1});
  auto [ec, r] = client.async_query("copy (select 1) to stdout", pgpipe::test::use_future_ec).get();
  EXPECT_EQ(ec, pgpipe::errc::session_state_needs_lease);
  EXPECT_NE(r.diag().client_message.find("lease"), std::string::npos) << r.diag().client_message;
  EXPECT_NE(r.diag().client_message.find("copy_in"), std::string::npos) << r.diag().client_message;
}

// libpq takes a chunk's length as an int: a chunk past 2 GiB must still
// reach the server whole (the driver hands it over in pieces).
TEST(blocking_copy, a_chunk_over_2_gib_reaches_the_server_whole) {
#if defined(__SANITIZE_THREAD__)
  // TSan's shadow of a 2 GiB buffer outgrows the machine (the test was killed);
  // the splitting it checks is the same in every build and ASan runs it.
  GTEST_SKIP() << "a 2 GiB chunk is too large under ThreadSanitizer";
#endif
  using pgpipe::test::big_copy_chunk;
  auto& pg = shared_cluster();
  pg.exec("drop table if exists copy_huge; create unlogged table copy_huge(id bigint, pad text)");
  pgpipe::blocking_pool pool(copy_params("copy_huge"));
  auto lease = pool.acquire();
  std::uint64_t rows = 0;
  {
    const std::string chunk = big_copy_chunk::make();
    ASSERT_GT(chunk.size(), std::size_t{1} << 31);
    pgpipe::blocking_copy_in in(lease, "copy copy_huge from stdin where id % 1024 = 0");
    in.write(chunk);
    rows = in.finish();
  }
  EXPECT_EQ(rows, big_copy_chunk::kept_rows);
  EXPECT_EQ(pg.query_value("select max(id) from copy_huge"), std::to_string(big_copy_chunk::last_id));
  EXPECT_EQ(select_one(lease), "42");
  pg.exec("drop table copy_huge");
}

// A COPY is one statement: what follows it in the text must not run after
// finish() (the simple protocol would run it).
TEST(blocking_copy, a_second_statement_after_the_copy_is_refused_and_nothing_runs) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists copy_two; create table copy_two(id int); insert into copy_two values (1), (2)");
  pgpipe::blocking_pool pool(copy_params("copy_two"));
  auto lease = pool.acquire();
  for (const char* sql : {"copy copy_two from stdin; delete from copy_two",
                          "copy copy_two from stdin /* ; */ ;delete from copy_two;"}) {
    SCOPED_TRACE(sql);
    try {
      pgpipe::blocking_copy_in in(lease, sql);
      in.write("3\n");
      in.finish();
      ADD_FAILURE() << "a COPY followed by another statement was run";
    } catch (const pgpipe::error& e) {
      EXPECT_EQ(e.code(), pgpipe::errc::invalid_argument) << e.what();
      EXPECT_NE(std::string(e.what()).find("one statement"), std::string::npos) << e.what();
    }
    EXPECT_EQ(pg.query_value("select string_agg(id::text, ',' order by id) from copy_two"), "1,2");
  }
  try {
    pgpipe::blocking_copy_out out(lease, "copy copy_two to stdout; delete from copy_two");
    std::string chunk;
    while (out.next(chunk)) {
    }
    ADD_FAILURE() << "a COPY followed by another statement was run";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::errc::invalid_argument) << e.what();
  }
  EXPECT_EQ(pg.query_value("select count(*) from copy_two"), "2");
  // A trailing semicolon is still one statement.
  {
    pgpipe::blocking_copy_in in(lease, "copy copy_two from stdin;");
    in.write("3\n");
    EXPECT_EQ(in.finish(), 1u);
  }
  EXPECT_EQ(select_one(lease), "42");
}
