// The async transaction helper against a real server: commit, rollback on a
// throw or an error, retries of serialization failures, savepoints.
#include <pgpipe/async_client.hpp>
#include <pgpipe/transaction.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"
#include "support/wait.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pgpipe::test::app_conninfo;
using pgpipe::test::params_for;
using pgpipe::test::shared_cluster;

namespace {

// Holds coroutines until `n` have arrived, so that 20 transactions really
// overlap: each reads the counter before any of them writes it. All waiters
// run on the client's single loop, so a plain counter is enough.
class async_gate {
 public:
  async_gate(asio::any_io_executor ex, int n) : timer_(ex, asio::steady_timer::time_point::max()), left_(n) {}
  asio::awaitable<void> arrive_and_wait() {
    if (--left_ == 0) {
      timer_.cancel();
      co_return;
    }
    co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
  }

 private:
  asio::steady_timer timer_;
  int left_;
};

struct counter_run {
  int committed = 0;
  std::vector<std::error_code> failures;
  int work_runs = 0;
};

// 20 concurrent serializable read-then-write increments of one counter.
counter_run run_increments(pgpipe::async_client& client, const std::string& table, unsigned max_attempts) {
  constexpr int n = 20;
  async_gate gate(client.get_executor(), n);
  std::atomic<int> runs{0};
  pgpipe::transaction_options opts;
  opts.isolation = pgpipe::isolation_level::serializable;
  opts.retry = {.max_attempts = max_attempts, .initial_backoff = 1ms, .max_backoff = 20ms};
  std::vector<std::future<std::tuple<std::error_code, pgpipe::async_transaction_report>>> done;
  for (int i = 0; i < n; ++i) {
    done.push_back(pgpipe::async_transaction(
        client, opts,
        [&](pgpipe::async_lease& l) -> asio::awaitable<void> {
          const bool first_run = runs.fetch_add(1) < n;
          auto [ec, r] = co_await l.async_query("select n from " + table, asio::as_tuple(asio::use_awaitable));
          pgpipe::throw_if_error(ec, r);
          const int seen = r.value<int>();
          if (first_run) co_await gate.arrive_and_wait();
          auto [uec, ur] = co_await l.async_query("update " + table + " set n = $1", seen + 1, asio::as_tuple(asio::use_awaitable));
          pgpipe::throw_if_error(uec, ur);
        },
        pgpipe::test::use_future_ec));
  }
  counter_run out;
  for (auto& f : done) {
    auto [ec, report] = f.get();
    if (ec) {
      out.failures.push_back(ec);
    } else {
      ++out.committed;
    }
  }
  out.work_runs = runs.load();
  return out;
}

}  // namespace

TEST(async_transaction, serializable_increments_with_retries_all_commit) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists tx_counter_retry; create table tx_counter_retry(n int); "
          "insert into tx_counter_retry values (0)");
  pgpipe::async_client client(params_for(app_conninfo("async_tx_retry"), 20), {.loops = 1});
  counter_run run = run_increments(client, "tx_counter_retry", 200);
  EXPECT_EQ(run.committed, 20);
  EXPECT_TRUE(run.failures.empty());
  EXPECT_GT(run.work_runs, 20) << "the gate forces conflicts: some transactions must have been retried";
  EXPECT_EQ(pg.query_value("select n from tx_counter_retry"), "20");
}

TEST(async_transaction, without_retries_conflicts_surface_as_40001) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists tx_counter_once; create table tx_counter_once(n int); "
          "insert into tx_counter_once values (0)");
  pgpipe::async_client client(params_for(app_conninfo("async_tx_once"), 20), {.loops = 1});
  counter_run run = run_increments(client, "tx_counter_once", 1);
  EXPECT_EQ(run.work_runs, 20);
  EXPECT_GE(run.committed, 1);
  EXPECT_FALSE(run.failures.empty());
  for (const auto& ec : run.failures) EXPECT_EQ(pgpipe::sqlstate_of(ec), "40001") << ec.message();
  EXPECT_EQ(pg.query_value("select n from tx_counter_once"), std::to_string(run.committed));
}

TEST(async_transaction, a_throw_rolls_back_and_the_connection_serves_the_next_caller) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists tx_throw; create table tx_throw(v text)");
  // One connection: the next transaction must get the very connection the throw left.
  pgpipe::async_client client(params_for(app_conninfo("async_tx_throw"), 1), {.loops = 1});
  auto [ec, report] = pgpipe::async_transaction(
                          client, {},
                          [](pgpipe::async_lease& l) -> asio::awaitable<void> {
                            auto [ec, r] = co_await l.async_query("insert into tx_throw values ('thrown')",
                                                                  asio::as_tuple(asio::use_awaitable));
                            pgpipe::throw_if_error(ec, r);
                            throw std::runtime_error("the work gave up");
                          },
                          pgpipe::test::use_future_ec)
                          .get();
  EXPECT_EQ(ec, std::make_error_code(std::errc::state_not_recoverable));
  EXPECT_NE(report.diag.client_message.find("the work gave up"), std::string::npos) << report.diag.to_string();
  EXPECT_EQ(report.attempts, 1u);
  EXPECT_EQ(pg.query_value("select count(*) from tx_throw"), "0");

  auto [ec2, report2] = pgpipe::async_transaction(
                            client, {},
                            [](pgpipe::async_lease& l) -> asio::awaitable<std::error_code> {
                              auto [ec, r] = co_await l.async_query("insert into tx_throw values ('next')",
                                                                    asio::as_tuple(asio::use_awaitable));
                              co_return ec;
                            },
                            pgpipe::test::use_future_ec)
                            .get();
  EXPECT_FALSE(ec2) << report2.diag.to_string();
  EXPECT_EQ(pg.query_value("select string_agg(v, ',') from tx_throw"), "next");
}

TEST(async_transaction, a_server_error_rolls_back_with_its_diagnostics) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists tx_err; create table tx_err(v int)");
  pgpipe::async_client client(params_for(app_conninfo("async_tx_err"), 1), {.loops = 1});
  pgpipe::transaction_options opts;
  opts.isolation = pgpipe::isolation_level::repeatable_read;
  auto [ec, report] = pgpipe::async_transaction(
                          client, opts,
                          [](pgpipe::async_lease& l) -> asio::awaitable<void> {
                            auto [ec, r] = co_await l.async_query("insert into tx_err values (1)", asio::as_tuple(asio::use_awaitable));
                            pgpipe::throw_if_error(ec, r);
                            auto [ec2, r2] = co_await l.async_query("select 1 / 0", asio::as_tuple(asio::use_awaitable));
                            pgpipe::throw_if_error(ec2, r2);
                          },
                          pgpipe::test::use_future_ec)
                          .get();
  EXPECT_EQ(pgpipe::sqlstate_of(ec), "22012");
  EXPECT_EQ(report.diag.sqlstate, "22012");
  EXPECT_NE(report.diag.message.find("division by zero"), std::string::npos);
  EXPECT_EQ(pg.query_value("select count(*) from tx_err"), "0");
}

// COMMIT slower than query_timeout (a deferred trigger that waits at COMMIT,
// as a synchronous standby that is down holds it): the client stops
// waiting, the server commits. The report must say the transaction may have
// committed, never read as "nothing stayed".
TEST(async_transaction, a_commit_slower_than_query_timeout_is_reported_as_maybe_committed) {
  auto& pg = shared_cluster();
  pg.exec(
      "drop table if exists tx_slow_commit; create table tx_slow_commit(v int);"
      "create or replace function tx_slow_commit_wait() returns trigger language plpgsql as "
      "$$ begin perform pg_sleep(1.5); return null; end $$;"
      "create constraint trigger tx_slow_commit_at_commit after insert on tx_slow_commit "
      "deferrable initially deferred for each row execute function tx_slow_commit_wait()");
  auto p = params_for(app_conninfo("async_tx_slow_commit"), 1);
  p.query_timeout = 300ms;
  pgpipe::async_client client(p, {.loops = 1});
  auto [ec, report] = pgpipe::async_transaction(
                          client, pgpipe::transaction_options{},
                          [](pgpipe::async_lease& l) -> asio::awaitable<void> {
                            auto [ec, r] = co_await l.async_query("insert into tx_slow_commit values (1)",
                                                                  asio::as_tuple(asio::use_awaitable));
                            pgpipe::throw_if_error(ec, r);
                          },
                          pgpipe::test::use_future_ec)
                          .get();
  EXPECT_EQ(ec, pgpipe::errc::query_timeout) << ec.message() << " " << report.diag.to_string();
  EXPECT_NE(report.diag.to_string().find("may have committed"), std::string::npos) << report.diag.to_string();
  // What the report warns of: the server committed.
  EXPECT_TRUE(pgpipe::test::wait_until(
      [&] { return pg.query_value("select count(*) from tx_slow_commit") == "1"; }, 10s, 50ms));
}

TEST(async_transaction, options_reach_the_server) {
  pgpipe::async_client client(params_for(app_conninfo("async_tx_opts"), 1), {.loops = 1});
  auto seen = std::make_shared<std::string>();
  pgpipe::transaction_options opts;
  opts.isolation = pgpipe::isolation_level::serializable;
  opts.read_only = true;
  opts.deferrable = true;
  auto [ec, report] = pgpipe::async_transaction(
                          client, opts,
                          [seen](pgpipe::async_lease& l) -> asio::awaitable<void> {
                            auto [ec, r] = co_await l.async_query(
                                "select current_setting('transaction_isolation') || ',' || "
                                "current_setting('transaction_read_only') || ',' || "
                                "current_setting('transaction_deferrable')",
                                asio::as_tuple(asio::use_awaitable));
                            pgpipe::throw_if_error(ec, r);
                            *seen = r.value<std::string>();
                            auto [wec, wr] = co_await l.async_query("create table tx_ro_refused(v int)",
                                                                    asio::as_tuple(asio::use_awaitable));
                            pgpipe::throw_if_error(wec, wr);
                          },
                          pgpipe::test::use_future_ec)
                          .get();
  EXPECT_EQ(*seen, "serializable,on,on");
  EXPECT_EQ(pgpipe::sqlstate_of(ec), "25006");  // read-only transaction
}

TEST(async_transaction, savepoints_undo_only_their_own_work) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists tx_sp; create table tx_sp(v text)");
  pgpipe::async_client client(params_for(app_conninfo("async_tx_sp"), 1), {.loops = 1});
  auto inner_ec = std::make_shared<std::error_code>();
  auto [ec, report] = pgpipe::async_transaction(
                          client, {},
                          [inner_ec](pgpipe::async_lease& l) -> asio::awaitable<void> {
                            auto [e1, r1] = co_await l.async_query("insert into tx_sp values ('a')", asio::as_tuple(asio::use_awaitable));
                            pgpipe::throw_if_error(e1, r1);
                            auto [sec, srep] = co_await pgpipe::async_savepoint(
                                l,
                                [](pgpipe::async_lease& inner) -> asio::awaitable<void> {
                                  auto [e, r] = co_await inner.async_query("insert into tx_sp values ('b')",
                                                                           asio::as_tuple(asio::use_awaitable));
                                  pgpipe::throw_if_error(e, r);
                                  auto [e2, r2] = co_await inner.async_query("insert into tx_sp values (1/0)",
                                                                             asio::as_tuple(asio::use_awaitable));
                                  pgpipe::throw_if_error(e2, r2);
                                },
                                asio::as_tuple(asio::use_awaitable));
                            *inner_ec = sec;
                            // A nested savepoint that succeeds keeps its row.
                            auto [okec, okrep] = co_await pgpipe::async_savepoint(
                                l,
                                [](pgpipe::async_lease& inner) -> asio::awaitable<std::error_code> {
                                  auto [e, r] = co_await inner.async_query("insert into tx_sp values ('c')",
                                                                           asio::as_tuple(asio::use_awaitable));
                                  co_return e;
                                },
                                asio::as_tuple(asio::use_awaitable));
                            if (okec) throw pgpipe::error(okec, okrep.diag);
                          },
                          pgpipe::test::use_future_ec)
                          .get();
  EXPECT_FALSE(ec) << report.diag.to_string();
  EXPECT_EQ(pgpipe::sqlstate_of(*inner_ec), "22012");
  EXPECT_EQ(pg.query_value("select string_agg(v, ',' order by v) from tx_sp"), "a,c");
}

TEST(async_transaction, a_swallowed_error_is_not_reported_as_committed) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists tx_swallow; create table tx_swallow(v int)");
  pgpipe::async_client client(params_for(app_conninfo("async_tx_swallow"), 1), {.loops = 1});
  auto [ec, report] = pgpipe::async_transaction(
                          client, {},
                          [](pgpipe::async_lease& l) -> asio::awaitable<std::error_code> {
                            co_await l.async_query("insert into tx_swallow values (1)", asio::as_tuple(asio::use_awaitable));
                            co_await l.async_query("select 1 / 0", asio::as_tuple(asio::use_awaitable));  // ignored
                            co_return std::error_code{};
                          },
                          pgpipe::test::use_future_ec)
                          .get();
  EXPECT_EQ(pgpipe::sqlstate_of(ec), "25P02") << report.diag.to_string();
  EXPECT_EQ(pg.query_value("select count(*) from tx_swallow"), "0");
}

TEST(async_transaction, a_callback_work_commits_or_rolls_back_by_its_outcome) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists tx_cb; create table tx_cb(v text)");
  pgpipe::async_client client(params_for(app_conninfo("async_tx_cb"), 1), {.loops = 1});
  auto insert_then = [](std::string value, bool fail) {
    return [value, fail](pgpipe::async_lease& l, std::function<void(std::error_code)> done) {
      l.async_query("insert into tx_cb values ($1)", value,
                    [done, fail](std::error_code ec, pgpipe::result) {
                      done(ec ? ec : fail ? make_error_code(pgpipe::errc::cancelled) : std::error_code{});
                      done(std::error_code{});  // a second call is ignored
                    });
    };
  };
  auto [ec, report] = pgpipe::async_transaction(client, {}, insert_then("kept", false), pgpipe::test::use_future_ec).get();
  EXPECT_FALSE(ec) << report.diag.to_string();
  auto [ec2, report2] = pgpipe::async_transaction(client, {}, insert_then("undone", true), pgpipe::test::use_future_ec).get();
  EXPECT_EQ(ec2, pgpipe::errc::cancelled);
  EXPECT_EQ(pg.query_value("select string_agg(v, ',') from tx_cb"), "kept");
}
