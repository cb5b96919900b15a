// blocking_pool::transaction(options, fn): isolation, retries of
// serialization failures, rollback on a throw.
#include <pgpipe/blocking_pool.hpp>

#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"

#include <gtest/gtest.h>
#include <pqxx/except>

#include <atomic>
#include <barrier>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using pgpipe::test::app_conninfo;
using pgpipe::test::shared_cluster;

namespace {

pgpipe::pool_params tx_params(const std::string& app, std::size_t max_size) {
  pgpipe::pool_params p = pgpipe::test::params_for(app_conninfo(app), max_size);
  p.acquire_timeout = 20s;
  return p;
}

struct counter_run {
  int committed = 0;
  std::vector<std::string> failure_states;
  int work_runs = 0;
};

// 20 threads each running a serializable read-then-write increment; a barrier
// makes every first run read before any writes, so conflicts are certain.
counter_run run_increments(pgpipe::blocking_pool& pool, const std::string& table, unsigned max_attempts) {
  constexpr int n = 20;
  std::barrier gate(n);
  std::atomic<int> runs{0};
  std::atomic<int> committed{0};
  std::mutex mu;
  counter_run out;
  pgpipe::transaction_options opts;
  opts.isolation = pgpipe::isolation_level::serializable;
  opts.retry = {.max_attempts = max_attempts, .initial_backoff = 1ms, .max_backoff = 20ms};
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&] {
      bool first_run = true;
      try {
        pool.transaction(opts, [&](pqxx::work& tx) {
          runs.fetch_add(1);
          const int seen = tx.exec("select n from " + table)[0][0].as<int>();
          if (first_run) {
            first_run = false;
            gate.arrive_and_wait();
          }
          pgpipe::detail::pqxx_exec_params(tx, "update " + table + " set n = $1", seen + 1);
        });
        committed.fetch_add(1);
      } catch (const pgpipe::error& e) {
        std::lock_guard lk(mu);
        out.failure_states.push_back(pgpipe::sqlstate_of(e.code()));
      }
    });
  }
  for (auto& t : threads) t.join();
  out.committed = committed.load();
  out.work_runs = runs.load();
  return out;
}

}  // namespace

TEST(blocking_transaction, serializable_increments_with_retries_all_commit) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists btx_retry; create table btx_retry(n int); insert into btx_retry values (0)");
  pgpipe::blocking_pool pool(tx_params("btx_retry", 20));
  counter_run run = run_increments(pool, "btx_retry", 200);
  EXPECT_EQ(run.committed, 20);
  EXPECT_TRUE(run.failure_states.empty());
  EXPECT_GT(run.work_runs, 20) << "the barrier forces conflicts: some transactions must have been retried";
  EXPECT_EQ(pg.query_value("select n from btx_retry"), "20");
}

TEST(blocking_transaction, without_retries_conflicts_surface_as_40001) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists btx_once; create table btx_once(n int); insert into btx_once values (0)");
  pgpipe::blocking_pool pool(tx_params("btx_once", 20));
  counter_run run = run_increments(pool, "btx_once", 1);
  EXPECT_EQ(run.work_runs, 20);
  EXPECT_GE(run.committed, 1);
  EXPECT_FALSE(run.failure_states.empty());
  for (const auto& s : run.failure_states) EXPECT_EQ(s, "40001");
  EXPECT_EQ(pg.query_value("select n from btx_once"), std::to_string(run.committed));
}

TEST(blocking_transaction, a_throw_rolls_back_and_the_connection_serves_the_next_caller) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists btx_throw; create table btx_throw(v text)");
  pgpipe::blocking_pool pool(tx_params("btx_throw", 1));
  pgpipe::transaction_options opts;
  opts.retry.max_attempts = 5;  // a throw that is not 40001/40P01 is never retried
  int runs = 0;
  EXPECT_THROW(pool.transaction(opts,
                                [&](pqxx::work& tx) {
                                  ++runs;
                                  tx.exec("insert into btx_throw values ('thrown')");
                                  throw std::runtime_error("the work gave up");
                                }),
               std::runtime_error);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(pg.query_value("select count(*) from btx_throw"), "0");
  pool.transaction(opts, [](pqxx::work& tx) { tx.exec("insert into btx_throw values ('next')"); });
  EXPECT_EQ(pg.query_value("select string_agg(v, ',') from btx_throw"), "next");
}

TEST(blocking_transaction, options_reach_the_server) {
  pgpipe::blocking_pool pool(tx_params("btx_opts", 1));
  pgpipe::transaction_options opts;
  opts.isolation = pgpipe::isolation_level::serializable;
  opts.read_only = true;
  opts.deferrable = true;
  std::string seen;
  try {
    pool.transaction(opts, [&](pqxx::work& tx) {
      seen = tx.exec("select current_setting('transaction_isolation') || ',' || "
                     "current_setting('transaction_read_only') || ',' || "
                     "current_setting('transaction_deferrable')")[0][0]
                 .as<std::string>();
      tx.exec("create table btx_ro_refused(v int)");
    });
    ADD_FAILURE() << "a read-only transaction created a table";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(pgpipe::sqlstate_of(e.code()), "25006") << e.what();
  }
  EXPECT_EQ(seen, "serializable,on,on");
}

TEST(blocking_transaction, a_swallowed_error_is_not_reported_as_committed) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists btx_swallow; create table btx_swallow(v int)");
  pgpipe::blocking_pool pool(tx_params("btx_swallow", 1));
  try {
    pool.transaction(pgpipe::transaction_options{}, [](pqxx::work& tx) {
      tx.exec("insert into btx_swallow values (1)");
      try {
        tx.exec("select 1 / 0");
      } catch (const pqxx::sql_error&) {
        // swallowed: the transaction is failed on the server anyway
      }
    });
    ADD_FAILURE() << "a failed transaction was reported as committed";
  } catch (const pgpipe::error& e) {
    // The same code as the async helper: the transaction had failed (25P02).
    EXPECT_EQ(pgpipe::sqlstate_of(e.code()), "25P02") << e.what();
    EXPECT_NE(e.diag().client_message.find("rolled back"), std::string::npos) << e.what();
  }
  // The connection serves the next caller.
  EXPECT_EQ(pool.exec("select 1").value<int>(), 1);
  EXPECT_EQ(pg.query_value("select count(*) from btx_swallow"), "0");
}

TEST(blocking_transaction, the_report_counts_attempts_and_keeps_the_failure) {
  pgpipe::blocking_pool pool(tx_params("btx_report", 1));
  pgpipe::transaction_options opts;
  opts.retry = {.max_attempts = 3, .initial_backoff = 1ms, .max_backoff = 5ms};
  // Fails with a serialization failure until the third run.
  int runs = 0;
  pgpipe::blocking_transaction_report report;
  const int got = pool.transaction(
      opts,
      [&](pqxx::work& tx) {
        if (++runs < 3) tx.exec("do $$ begin raise exception 'conflict' using errcode = 'serialization_failure'; end $$");
        return tx.exec("select 7")[0][0].as<int>();
      },
      report);
  EXPECT_EQ(got, 7);
  EXPECT_EQ(report.attempts, 3u);
  EXPECT_FALSE(report.code);

  // Out of attempts: the report says how many ran, and what failed.
  runs = 0;
  opts.retry.max_attempts = 2;
  EXPECT_THROW(pool.transaction(
                   opts,
                   [&](pqxx::work& tx) {
                     ++runs;
                     tx.exec("do $$ begin raise exception 'conflict' using errcode = 'serialization_failure'; end $$");
                   },
                   report),
               pgpipe::error);
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(report.attempts, 2u);
  EXPECT_EQ(report.code, pgpipe::make_sqlstate("40001"));
  EXPECT_EQ(report.diag.message, "conflict");
}

TEST(blocking_transaction, a_work_on_the_lease_commits_and_reports_a_swallowed_error) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists btx_lease; create table btx_lease(v int)");
  pgpipe::blocking_pool pool(tx_params("btx_lease", 1));
  pgpipe::transaction_options opts;
  opts.isolation = pgpipe::isolation_level::repeatable_read;
  const std::string level = pool.transaction(opts, [](pgpipe::blocking_lease& lease) {
    (void)lease.exec("insert into btx_lease values ($1)", 1);
    return lease.exec("select current_setting('transaction_isolation')").value<std::string>();
  });
  EXPECT_EQ(level, "repeatable read");
  EXPECT_EQ(pg.query_value("select count(*) from btx_lease"), "1");
  try {
    pool.transaction([](pgpipe::blocking_lease& lease) {
      (void)lease.exec("insert into btx_lease values ($1)", 2);
      try {
        (void)lease.exec("select 1 / 0");
      } catch (const pgpipe::error&) {
        // swallowed: the transaction is failed on the server anyway
      }
    });
    ADD_FAILURE() << "a failed transaction was reported as committed";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(pgpipe::sqlstate_of(e.code()), "25P02") << e.what();
  }
  EXPECT_EQ(pg.query_value("select count(*) from btx_lease"), "1");
  EXPECT_EQ(pool.exec("select 1").value<int>(), 1);
}
