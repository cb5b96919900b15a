// Sync coalescing for reads (pool_params::read_batch_max) against a real
// PostgreSQL: read-only-marked queries on read-only sessions share Syncs; a
// failing one fails alone (the ones the server skipped behind it are re-sent
// and get their own right values); a marked write fails with 25006 and writes
// nothing; unmarked queries and read-write sessions keep one Sync each.
//
// How many Syncs a run used is read from the server: now() is the start of
// the transaction, and every Sync ends one, so the distinct (backend pid,
// now()) pairs among the answers count the transactions the queries ran in.
#include <pgpipe/pgpipe.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"

#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <future>
#include <tuple>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace asio = boost::asio;

namespace {

using namespace pgpipe::test;

pgpipe::pool_params coalesce_params(bool read_only_sessions) {
  auto p = params_for(shared_cluster().conninfo(), 2);
  p.read_only_sessions = read_only_sessions;
  p.read_batch_max = 10;
  return p;
}

struct run_result {
  std::size_t ok = 0, failed_22012 = 0, other = 0, wrong = 0, calls = 0;
  std::set<std::pair<int, std::string>> transactions;  ///< (pid, now()) of the answers
  std::map<std::pair<int, std::string>, std::size_t> per_transaction;  ///< answers in each
  std::size_t largest_batch() const {
    std::size_t m = 0;
    for (const auto& [t, n] : per_transaction) m = std::max(m, n);
    return m;
  }
};

// n queries at once: query i divides 1000 + i by its divisor, 0 for every
// 50th; each answer is checked against its own expected value.
run_result divide_many(pgpipe::async_client& client, std::size_t n, bool marked) {
  run_result out;
  std::mutex mu;
  std::vector<int> calls(n, 0);
  latch_counter done(n);
  pgpipe::query_options opts;
  opts.read_only = marked;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t num = 1000 + static_cast<std::int64_t>(i);
    const std::int64_t div = i % 50 == 0 ? 0 : 1 + static_cast<std::int64_t>(i % 7);
    client.async_query(opts, "select $1::int8 / $2::int8, pg_backend_pid(), now()::text", num, div,
                       [&, i, num, div](std::error_code ec, pgpipe::result r) {
                         {
                           std::lock_guard lk(mu);
                           ++calls[i];
                           if (div == 0 && ec == pgpipe::make_sqlstate("22012")) {
                             ++out.failed_22012;
                           } else if (ec) {
                             ++out.other;
                             ADD_FAILURE() << "query " << i << ": " << r.diag().to_string();
                           } else if (div == 0 || r.size() != 1 || r[0].get<std::int64_t>(0) != num / div) {
                             ++out.wrong;
                           } else {
                             ++out.ok;
                             out.transactions.emplace(r[0].get<int>(1), r[0].get<std::string>(2));
                             ++out.per_transaction[{r[0].get<int>(1), r[0].get<std::string>(2)}];
                           }
                         }
                         done.arrive();
                       });
  }
  EXPECT_TRUE(done.wait());
  std::lock_guard lk(mu);
  for (int c : calls) out.calls += c == 1 ? 1 : 0;
  return out;
}

// One Sync per query: every answer came from a transaction of its own.
void expect_one_sync_each(const run_result& r, const char* what) {
  EXPECT_EQ(r.transactions.size(), r.ok) << what;
  EXPECT_EQ(r.largest_batch(), 1u) << what;
}

// Coalesced: far fewer transactions (Syncs) than queries, and never more
// answers in one than read_batch_max (10). PostgreSQL 13 reports no
// default_transaction_read_only, so no session counts as read-only there and
// every query keeps its own Sync (pool_params::read_batch_max).
void expect_coalescing_as_the_server_allows(const run_result& r) {
  if (pgpipe::devcluster::cluster::server_major() >= 14) {
    EXPECT_LT(r.transactions.size(), r.ok / 3) << r.transactions.size() << " transactions for " << r.ok << " answers";
    EXPECT_LE(r.largest_batch(), 10u) << "a batch went past read_batch_max";
    EXPECT_GT(r.largest_batch(), 1u);
  } else {
    expect_one_sync_each(r, "queries shared Syncs on PostgreSQL 13");
  }
}

}  // namespace

TEST(async_coalesce, one_in_fifty_divides_by_zero_and_only_those_fail) {
  pgpipe::async_client client(coalesce_params(true));
  constexpr std::size_t n = 3000;
  auto r = divide_many(client, n, true);
  EXPECT_EQ(r.calls, n);  // every handler ran exactly once
  EXPECT_EQ(r.failed_22012, n / 50);
  EXPECT_EQ(r.ok, n - n / 50);
  EXPECT_EQ(r.wrong, 0u);
  EXPECT_EQ(r.other, 0u);
  expect_coalescing_as_the_server_allows(r);
}

TEST(async_coalesce, unmarked_queries_and_read_write_sessions_keep_one_sync_each) {
  constexpr std::size_t n = 1000;
  {
    pgpipe::async_client client(coalesce_params(true));
    auto r = divide_many(client, n, false);
    EXPECT_EQ(r.ok, n - n / 50);
    expect_one_sync_each(r, "unmarked queries shared Syncs");
  }
  {
    pgpipe::async_client client(coalesce_params(false));
    auto r = divide_many(client, n, true);
    EXPECT_EQ(r.ok, n - n / 50);
    expect_one_sync_each(r, "marked queries shared Syncs on a read-write session");
  }
}

TEST(async_coalesce, write_marked_read_only_fails_with_25006_and_writes_nothing) {
  {
    pgpipe::async_client rw(params_for(shared_cluster().conninfo(), 1));
    auto [ec, r] = rw.async_query("create table if not exists coalesce_writes(a int)", pgpipe::test::use_future_ec).get();
    ASSERT_FALSE(ec) << r.diag().to_string();
  }
  pgpipe::async_client client(coalesce_params(true));
  pgpipe::query_options ro;
  ro.read_only = true;
  // A burst so the write sits in a batch between reads, with a failing read behind it.
  std::vector<std::future<std::tuple<std::error_code, pgpipe::result>>> reads;
  for (int i = 0; i < 20; ++i) reads.push_back(client.async_query(ro, "select $1::int", i, pgpipe::test::use_future_ec));
  auto write = client.async_query(ro, "insert into coalesce_writes values (1)", pgpipe::test::use_future_ec);
  auto cte = client.async_query(ro, "with w as (insert into coalesce_writes values (2) returning a) select a from w",
                                pgpipe::test::use_future_ec);
  auto fail = client.async_query(ro, "select 1/0", pgpipe::test::use_future_ec);
  for (int i = 0; i < 20; ++i) reads.push_back(client.async_query(ro, "select $1::int", 20 + i, pgpipe::test::use_future_ec));
  for (int i = 0; i < 40; ++i) {
    auto [ec, r] = reads[static_cast<std::size_t>(i)].get();
    ASSERT_FALSE(ec) << r.diag().to_string();
    EXPECT_EQ(r[0].get<int>(0), i);
  }
  auto [wec, wr] = write.get();
  EXPECT_EQ(wec, pgpipe::make_sqlstate("25006")) << wr.diag().to_string();
  auto [cec, cr] = cte.get();
  EXPECT_EQ(cec, pgpipe::make_sqlstate("25006")) << cr.diag().to_string();
  EXPECT_EQ(std::get<0>(fail.get()), pgpipe::make_sqlstate("22012"));
  auto [kec, kr] = client.async_query("select count(*)::int from coalesce_writes", pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(kec) << kr.diag().to_string();
  EXPECT_EQ(kr[0].get<int>(0), 0);
  // Unmarked, the session still refuses the write: the pool itself is read-only.
  EXPECT_EQ(std::get<0>(client.async_query("insert into coalesce_writes values (3)", pgpipe::test::use_future_ec).get()),
            pgpipe::make_sqlstate("25006"));
}

// A write the statement rule cannot see (a function's body) in a coalesced
// batch: the read-only session refuses it (25006) and it writes nothing. The
// function re-raises 25006 with its transaction's (pid, now()), so the test
// sees that it shared a transaction, hence a Sync, with a marked read: it was
// coalesced, not sent alone.
TEST(async_coalesce, a_coalesced_write_is_refused_with_25006_and_writes_nothing) {
  if (pgpipe::devcluster::cluster::server_major() < 14) {
    GTEST_SKIP() << "PostgreSQL 13 reports no default_transaction_read_only: nothing is coalesced there";
  }
  {
    pgpipe::async_client rw(params_for(shared_cluster().conninfo(), 1));
    for (const char* sql :
         {"create table if not exists coalesce_fn_writes(a int)",
          "create or replace function coalesce_write(v int) returns int language plpgsql as $$ begin "
          "insert into coalesce_fn_writes values (v); return v; exception when read_only_sql_transaction then "
          "raise exception using errcode = '25006', message = 'txn ' || pg_backend_pid() || ' ' || now()::text; "
          "end $$"}) {
      auto [ec, r] = rw.async_query(sql, pgpipe::test::use_future_ec).get();
      ASSERT_FALSE(ec) << r.diag().to_string();
    }
  }
  auto p = coalesce_params(true);
  p.max_size = 1;
  pgpipe::async_client client(p);
  pgpipe::query_options ro;
  ro.read_only = true;
  using reply = std::future<std::tuple<std::error_code, pgpipe::result>>;
  std::vector<reply> reads, writes;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 4; ++i)
      reads.push_back(client.async_query(ro, "select pg_backend_pid(), now()::text", pgpipe::test::use_future_ec));
    writes.push_back(client.async_query(ro, "select coalesce_write($1)", round, pgpipe::test::use_future_ec));
  }
  std::set<std::string> read_transactions;
  for (auto& f : reads) {
    auto [ec, r] = f.get();
    ASSERT_FALSE(ec) << r.diag().to_string();
    read_transactions.insert("txn " + std::to_string(r[0].get<int>(0)) + " " + r[0].get<std::string>(1));
  }
  std::size_t shared_with_a_read = 0;
  for (auto& f : writes) {
    auto [ec, r] = f.get();
    EXPECT_EQ(ec, pgpipe::make_sqlstate("25006")) << r.diag().to_string();
    shared_with_a_read += read_transactions.count(r.diag().message);
  }
  EXPECT_GT(shared_with_a_read, 0u) << "no write was coalesced with a read: the test proves nothing";
  auto [kec, kr] = client.async_query("select count(*)::int from coalesce_fn_writes", pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(kec) << kr.diag().to_string();
  EXPECT_EQ(kr[0].get<int>(0), 0);
}

TEST(async_coalesce, pool_default_marks_every_query_and_batch_bound_is_validated) {
  auto p = coalesce_params(true);
  p.read_only_queries = true;
  pgpipe::async_client client(p);
  auto r = divide_many(client, 1000, false);  // unmarked calls, marked by the pool
  EXPECT_EQ(r.ok, 1000u - 20u);
  EXPECT_EQ(r.wrong, 0u);
  expect_coalescing_as_the_server_allows(r);
  auto bad = coalesce_params(true);
  bad.read_batch_max = 0;
  EXPECT_THROW(pgpipe::validate(bad), pgpipe::error);
}
