// What happens when things go wrong: backends killed and servers restarted
// with hundreds of queries in flight, backpressure, cancellation, timeouts,
// a hung backend, and connect failures (without leaking the password).
#include <pgpipe/pgpipe.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"
#include "support/wait.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <future>
#include <mutex>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

using namespace pgpipe::test;  // the shared kit (tests/support)

// Fires `n` slow-ish queries and records, per query, how many times its
// handler ran and with what error.
struct flight {
  explicit flight(std::size_t n) : calls(n), ecs(n), done(n) {}
  std::vector<std::atomic<int>> calls;
  std::vector<std::error_code> ecs;
  latch_counter done;

  void launch(pgpipe::async_client& c, const char* sql) {
    for (std::size_t i = 0; i < calls.size(); ++i) {
      c.async_query(sql, static_cast<int>(i), [this, i](std::error_code ec, pgpipe::result r) {
        if (!ec && r.value<int>() != static_cast<int>(i)) ec = make_error_code(pgpipe::errc::protocol_error);
        ecs[i] = ec;
        calls[i].fetch_add(1);
        done.arrive();
      });
    }
  }
  // Every handler ran exactly once; successes carried their own value; the
  // failures are connection losses. Returns how many failed.
  std::size_t check(const char* what) {
    std::size_t failed = 0;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(calls[i].load(), 1) << what << " request " << i;
      if (ecs[i]) {
        ++failed;
        EXPECT_TRUE(pgpipe::is_connection_lost(ecs[i])) << what << " request " << i << ": " << ecs[i].message();
      }
    }
    return failed;
  }
};

void expect_recovers(pgpipe::async_client& client) {
  // The pool replaces the dead connections: later queries succeed. The first
  // query may still race the detection of a dead idle connection (not_sent,
  // safe to retry), so retry that case only, a bounded number of times.
  std::error_code ec;
  for (int attempt = 0; attempt < 50; ++attempt) {
    auto [e, r] = client.async_query("select 1", pgpipe::test::use_future_ec).get();
    ec = e;
    if (!ec) break;
    ASSERT_TRUE(pgpipe::is_connection_lost(ec) || ec == pgpipe::errc_condition::connect_error) << ec.message();
  }
  ASSERT_FALSE(ec) << ec.message();
  flight after(200);
  after.launch(client, "select $1::int");
  ASSERT_TRUE(after.done.wait());
  EXPECT_EQ(after.check("after recovery"), 0u);
}

}  // namespace

TEST(async_failure, terminated_backends_with_hundreds_in_flight_complete_once_and_pool_recovers) {
  auto& pg = pgpipe::test::shared_cluster();
  pgpipe::async_client client(params_for(app_conninfo("async_kill"), 2));
  constexpr std::size_t n = 600;
  flight f(n);
  // ~5 ms each, serialised per backend: the pipelines stay full for a while.
  f.launch(client, "select $1::int from pg_sleep(0.005)");
  ASSERT_TRUE(pgpipe::test::wait_until([&] { return pg.backend_pids("async_kill").size() == 2; }));
  for (pid_t pid : pg.backend_pids("async_kill")) pg.terminate_backend(pid);
  ASSERT_TRUE(f.done.wait()) << "some requests never completed";
  const auto failed = f.check("terminate");
  EXPECT_GT(failed, 0u) << "the backends were killed with work in flight";
  EXPECT_GE(client.stats().errors.connection_lost, failed);
  expect_recovers(client);
}

TEST(async_failure, server_restart_with_hundreds_in_flight_completes_once_and_pool_recovers) {
  auto pg = pgpipe::test::fresh_cluster();
  auto params = params_for(pg->conninfo(), 2);
  params.acquire_timeout = 20s;
  pgpipe::async_client client(params);
  constexpr std::size_t n = 400;
  flight f(n);
  f.launch(client, "select $1::int from pg_sleep(0.005)");
  ASSERT_TRUE(pgpipe::test::wait_until([&] { return pg->connection_count() >= 1; }));
  pg->restart(pgpipe::devcluster::stop_mode::fast);
  ASSERT_TRUE(f.done.wait()) << "some requests never completed";
  const auto failed = f.check("restart");
  // The server went away with the pipelines full: some requests were lost,
  // and the client's counters saw each loss its callers saw.
  EXPECT_GT(failed, 0u) << "the restart hit no request in flight";
  EXPECT_GE(client.stats().errors.connection_lost, failed);
  expect_recovers(client);
}

TEST(async_failure, queue_full_when_max_queued_are_waiting) {
  auto params = params_for(app_conninfo("async_queue"), 1);
  params.max_queued = 5;
  pgpipe::async_client client(params);
  // Hold the only connection so that everything else has to queue.
  auto [lec, l] = client.async_acquire(pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(lec);
  std::vector<std::future<std::tuple<std::error_code, pgpipe::result>>> queued;
  for (int i = 0; i < 5; ++i) queued.push_back(client.async_query("select $1::int", i, pgpipe::test::use_future_ec));
  auto [ec, r] = client.async_query("select 99", pgpipe::test::use_future_ec).get();
  EXPECT_EQ(ec, pgpipe::errc::queue_full);
  EXPECT_EQ(client.stats().queued, 5u);
  EXPECT_EQ(client.stats().errors.queue_full, 1u);
  l.release();
  for (int i = 0; i < 5; ++i) {
    auto [e, rr] = queued[i].get();
    ASSERT_FALSE(e) << e.message();
    EXPECT_EQ(rr.value<int>(), i);
  }
}

TEST(async_failure, cancelling_a_queued_query_removes_it) {
  pgpipe::async_client client(params_for(app_conninfo("async_cq"), 1));
  auto [lec, l] = client.async_acquire(pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(lec);
  asio::cancellation_signal sig;
  std::promise<std::error_code> p;
  client.async_query("select 1", asio::bind_cancellation_slot(sig.slot(), [&](std::error_code ec, pgpipe::result) {
                       p.set_value(ec);
                     }));
  EXPECT_EQ(client.stats().queued, 1u);
  // Signals are emitted where the handler runs: here, a client loop.
  asio::post(client.get_executor(), [&] { sig.emit(asio::cancellation_type::total); });
  EXPECT_EQ(p.get_future().get(), pgpipe::errc::cancelled);
  EXPECT_EQ(client.stats().queued, 0u);
  EXPECT_EQ(client.stats().errors.cancelled, 1u);
}

TEST(async_failure, cancelling_a_written_query_detaches_it_and_keeps_the_pipeline_in_order) {
  auto& pg = pgpipe::test::shared_cluster();
  pgpipe::async_client client(params_for(app_conninfo("async_cw"), 1));
  asio::cancellation_signal sig;
  std::promise<std::error_code> p;
  client.async_query("select pg_sleep(1), 'slow'::text",
                     asio::bind_cancellation_slot(sig.slot(), [&](std::error_code ec, pgpipe::result) { p.set_value(ec); }));
  ASSERT_TRUE(pgpipe::test::wait_until([&] {
    return pg.query_value("select count(*) from pg_stat_activity where application_name = 'async_cw' and "
                          "state = 'active' and query like 'select pg_sleep(1)%'") == "1";
  }));
  // Queued behind it on the same connection.
  auto next = client.async_query("select 'next'::text", pgpipe::test::use_future_ec);
  asio::post(client.get_executor(), [&] { sig.emit(asio::cancellation_type::terminal); });
  auto f = p.get_future();
  EXPECT_EQ(f.get(), pgpipe::errc::cancelled);
  // The detached result is discarded; the next caller still gets its own.
  auto [ec, r] = next.get();
  ASSERT_FALSE(ec) << r.diag().to_string();
  EXPECT_EQ(r.value<std::string>(), "next");
}

TEST(async_failure, total_cancellation_does_not_touch_a_written_query) {
  auto& pg = pgpipe::test::shared_cluster();
  pgpipe::async_client client(params_for(app_conninfo("async_ct"), 1));
  asio::cancellation_signal sig;
  std::promise<std::tuple<std::error_code, std::string>> p;
  client.async_query("select 'done'::text from pg_sleep(1.5)",
                     asio::bind_cancellation_slot(sig.slot(), [&](std::error_code ec, pgpipe::result r) {
                       p.set_value({ec, ec ? std::string() : r.value<std::string>()});
                     }));
  ASSERT_TRUE(pgpipe::test::wait_until([&] {
    return pg.query_value("select count(*) from pg_stat_activity where application_name = 'async_ct' and "
                          "state = 'active' and query like 'select ''done''%'") == "1";
  }));
  // "Total" promises no side effects; a written query may have had some.
  asio::post(client.get_executor(), [&] { sig.emit(asio::cancellation_type::total); });
  auto [ec, v] = p.get_future().get();
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(v, "done");
}

TEST(async_failure, per_query_timeout_and_pool_default_timeout) {
  auto params = params_for(app_conninfo("async_to"), 1);
  params.query_timeout = 300ms;
  pgpipe::async_client client(params);
  auto [ec, r] = client.async_query("select pg_sleep(3)", pgpipe::test::use_future_ec).get();
  EXPECT_EQ(ec, pgpipe::errc::query_timeout);
  EXPECT_EQ(ec, pgpipe::errc_condition::timeout);
  // A per-call option overrides the default.
  pgpipe::query_options longer{std::chrono::milliseconds(20'000)};
  auto [ec2, r2] = client.async_query(longer, "select 'ok'::text from pg_sleep(0.5)", pgpipe::test::use_future_ec).get();
  // Behind the detached pg_sleep(3) on the same connection: still within 20 s.
  ASSERT_FALSE(ec2) << r2.diag().to_string();
  EXPECT_EQ(r2.value<std::string>(), "ok");
  pgpipe::query_options tiny{std::chrono::milliseconds(50)};
  auto [ec3, r3] = client.async_query(tiny, "select pg_sleep(2)", pgpipe::test::use_future_ec).get();
  EXPECT_EQ(ec3, pgpipe::errc::query_timeout);
  EXPECT_GE(client.stats().errors.query_timeout, 2u);
}

TEST(async_failure, stalled_backend_is_declared_broken_after_stall_timeout) {
  auto& pg = pgpipe::test::shared_cluster();
  auto params = params_for(app_conninfo("async_stall"), 1);
  params.stall_timeout = 500ms;
  pgpipe::async_client client(params);
  ASSERT_FALSE(std::get<0>(client.async_query("select 1", pgpipe::test::use_future_ec).get()));
  auto pids = pg.backend_pids("async_stall");
  ASSERT_EQ(pids.size(), 1u);
  pg.signal_backend(pids[0], SIGSTOP);  // a hung server: the socket stays open, nothing comes back
  auto f = client.async_query("select 2", pgpipe::test::use_future_ec);
  auto [ec, r] = f.get();
  pg.signal_backend(pids[0], SIGCONT);
  EXPECT_EQ(ec, pgpipe::errc::connection_lost) << ec.message();
  pg.terminate_backend(pids[0]);
  expect_recovers(client);
}

TEST(async_failure, wrong_password_is_auth_failed_and_never_echoed) {
  auto& pg = pgpipe::test::shared_cluster();
  const std::string secret = "Wr0ng-S3cret-pw";
  auto params = params_for(pg.conninfo_without_password() + " password=" + secret, 1);
  params.acquire_timeout = 5s;
  std::vector<std::string> logs;
  std::mutex mu;
  pgpipe::async_client_options opts;
  opts.logger = [&](pgpipe::log_level, std::string_view line) {
    std::lock_guard lk(mu);
    logs.emplace_back(line);
  };
  pgpipe::async_client client(params, opts);
  auto [ec, r] = client.async_query("select 1", pgpipe::test::use_future_ec).get();
  EXPECT_EQ(ec, pgpipe::errc_condition::auth_error) << ec.message();
  EXPECT_EQ(ec, pgpipe::errc_condition::connect_error);
  EXPECT_EQ(r.diag().to_string().find(secret), std::string::npos);
  EXPECT_NE(r.diag().client_message.find("password authentication failed"), std::string::npos)
      << r.diag().client_message;
  std::lock_guard lk(mu);
  EXPECT_FALSE(logs.empty());
  for (auto& l : logs) EXPECT_EQ(l.find(secret), std::string::npos) << l;
}

TEST(async_failure, unreachable_server_fails_with_server_unreachable_within_acquire_timeout) {
  // A port nobody listens on: connection refused on loopback.
  auto params = params_for("host=127.0.0.1 port=" + std::to_string(refused_port()) + " user=x password=nope dbname=x", 1);
  params.acquire_timeout = 1s;
  pgpipe::async_client client(params);
  const auto t0 = std::chrono::steady_clock::now();
  auto [ec, r] = client.async_query("select 1", pgpipe::test::use_future_ec).get();
  const auto took = std::chrono::steady_clock::now() - t0;
  // The cause, not a timeout: the caller learns the server is unreachable.
  EXPECT_EQ(ec, pgpipe::errc::server_unreachable) << ec.message() << ": " << r.diag().to_string();
  // Within acquire_timeout plus a bound for a loaded machine under TSan.
  EXPECT_LE(took, params.acquire_timeout + 5s);
  EXPECT_EQ(r.diag().to_string().find("nope"), std::string::npos);
  EXPECT_GE(client.stats().errors.connect, 1u);
}

TEST(async_failure, bad_conninfo_fails_with_bad_conninfo) {
  auto params = params_for("host=127.0.0.1 no_such_option=1", 1);
  params.acquire_timeout = 2s;
  pgpipe::async_client client(params);
  auto [ec, r] = client.async_query("select 1", pgpipe::test::use_future_ec).get();
  EXPECT_EQ(ec, pgpipe::errc::bad_conninfo) << ec.message() << " " << r.diag().to_string();
}

// The shared (non-lease) path must never leave a transaction open on a
// connection other callers share: a neighbour's query would run inside
// it. Whether BEGIN is refused before it is sent or the connection is
// retired after its Sync (pipeline_core's safety net), the caller gets an
// error and the next query runs outside any transaction.
TEST(async_failure, begin_on_the_shared_path_never_leaks_into_neighbours) {
  auto& pg = pgpipe::test::shared_cluster();
  pg.exec("drop table if exists shared_tx");
  pg.exec("create table shared_tx (v int)");
  pgpipe::async_client client(params_for(pg.conninfo(), 1));
  auto [ec, r] = client.async_query("begin", pgpipe::test::use_future_ec).get();
  EXPECT_TRUE(ec) << "a transaction was opened on a shared connection";
  // A neighbour's write: inside a leaked transaction it would stay invisible
  // to every other session (and be lost with the connection).
  auto [ec2, r2] = client.async_query("insert into shared_tx values (1)", pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(ec2) << r2.diag().to_string();
  EXPECT_EQ(pg.query_value("select count(*) from shared_tx"), "1") << "the neighbour ran inside the transaction";
  auto [ec3, r3] = client.async_query("select 1", pgpipe::test::use_future_ec).get();
  EXPECT_FALSE(ec3) << r3.diag().to_string();
}
