// Faults only the blocking driver has: a hung backend (no
// client-side timeout), an error inside BEGIN...COMMIT, and connect back-off
// under a role connection limit. Each prints "[figure] ..." lines for
// docs/reliability.md. The faults both drivers share are written once in
// fault_drivers_test.cpp.
#include <pgpipe/blocking_pool.hpp>

#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"
#include "support/wait.hpp"

#include <gtest/gtest.h>
#include <pqxx/except>
#include <pqxx/nontransaction>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using pgpipe::blocking_pool;
using pgpipe::errc;
using pgpipe::pool_params;
using pgpipe::devcluster::cluster;
using namespace pgpipe::test;  // the shared kit (tests/support)
using steady = std::chrono::steady_clock;

long long ms_since(steady::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t).count();
}

// The blocking driver has no client-side query timeout (blocking_pool.hpp:
// a blocked thread cannot time itself out). What it does promise against a
// hung server: the caller waits, nothing else is disturbed, and once the
// backend resumes the caller gets the right answer, once.
TEST(fault_blocking, hung_backend_blocks_only_its_caller_and_the_answer_arrives_when_it_resumes) {
  auto& pg = pgpipe::test::shared_cluster();
  const std::string app = "fault_b_hung";
  auto params = fault_params(with_options(pg.conninfo(), "application_name=" + app), 2);
  params.min_size = 2;
  blocking_pool pool{params};
  ASSERT_TRUE(wait_until([&] { return pool.stats().idle == 2; }));
  pid_t hung = 0;
  std::future<int> stuck;
  long long blocked_ms = 0;
  {
    auto lease = pool.acquire();
    hung = std::stoi(pqxx::nontransaction{*lease}.exec("select pg_backend_pid()")[0][0].c_str());
    pg.signal_backend(hung, SIGSTOP);
    struct cont_guard {
      const cluster& pg;
      pid_t pid;
      ~cont_guard() {
        try {
          pg.signal_backend(pid, SIGCONT);
        } catch (...) {
        }
      }
    } guard{pg, hung};
    const auto t0 = steady::now();
    stuck = std::async(std::launch::async, [l = std::move(lease)]() mutable {
      return pqxx::nontransaction{*l}.exec("select 41 + 1")[0][0].as<int>();
    });
    EXPECT_EQ(stuck.wait_for(1s), std::future_status::timeout) << "the query on a stopped backend returned";
    // The other connection serves meanwhile.
    for (int i = 0; i < 20; ++i) {
      auto r = pool.exec("select pg_backend_pid()");
      EXPECT_NE(r[0][0].get<int>(), hung);
    }
    blocked_ms = ms_since(t0);
  }  // SIGCONT
  ASSERT_EQ(stuck.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(stuck.get(), 42);
  EXPECT_EQ(pool.exec("select 1").value<int>(), 1);
  std::printf("[figure] hung_server.blocking.caller_blocked_while_stopped_ms>=%lld (no client-side timeout)\n", blocked_ms);
}

TEST(fault_blocking, error_inside_begin_commit_fails_only_what_depends_on_it_and_the_session_is_usable) {
  auto& pg = pgpipe::test::shared_cluster();
  pg.exec("drop table if exists fault_b_tx; create table fault_b_tx(n int)");
  blocking_pool pool{fault_params(pg.conninfo(), 1)};
  {
    auto lease = pool.acquire();
    pqxx::nontransaction tx{*lease};
    tx.exec("begin");
    tx.exec("insert into fault_b_tx values (1)");
    try {
      tx.exec("select 1/0");
      ADD_FAILURE() << "division by zero succeeded";
    } catch (...) {
      std::error_code ec;
      try {
        pgpipe::detail::rethrow_translated(nullptr);
      } catch (const pgpipe::error& e) {
        ec = e.code();
      }
      EXPECT_EQ(pgpipe::sqlstate_of(ec), "22012");
    }
    // Depends on the failed statement (same transaction): 25P02.
    try {
      tx.exec("insert into fault_b_tx values (2)");
      ADD_FAILURE() << "insert in an aborted transaction succeeded";
    } catch (const pqxx::sql_error& e) {
      EXPECT_EQ(e.sqlstate(), "25P02");
    }
    // COMMIT of a failed transaction rolls back.
    tx.exec("commit");
    EXPECT_EQ(tx.exec("select count(*) from fault_b_tx")[0][0].as<int>(), 0);
    // Implicit transactions on the same session: only the failing one fails.
    EXPECT_THROW(tx.exec("select 1/0"), pqxx::sql_error);
    EXPECT_EQ(tx.exec("select 2")[0][0].as<int>(), 2);
  }
  // The pool's transaction(): an error rolls back, the connection is reused.
  std::error_code ec;
  try {
    pool.transaction([](pqxx::work& tx) {
      tx.exec("insert into fault_b_tx values (3)");
      tx.exec("select 1/0");
    });
  } catch (const pgpipe::error& e) {
    ec = e.code();
  }
  EXPECT_EQ(pgpipe::sqlstate_of(ec), "22012");
  pool.transaction([](pqxx::work& tx) { tx.exec("insert into fault_b_tx values (4)"); });
  EXPECT_EQ(pool.exec("select array_agg(n)::text from fault_b_tx").value<std::string>(), "{4}");
  EXPECT_EQ(pool.stats().connects, 1u);  // the one connection survived every error
}

TEST(fault_blocking, connection_limit_2_with_a_pool_of_10_backs_off_and_serves_on_two) {
  auto& pg = pgpipe::test::shared_cluster();
  limited_role role(pg, "fault_b_lim2", "lim-pw-8812");
  constexpr int max_size = 10;
  auto params = fault_params(role.conninfo("fault_b_lim2"), max_size);
  blocking_pool pool{params};
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  std::string first_error;
  std::mutex mu;
  // Sample the server side: the role never holds more than its limit.
  std::atomic<int> max_server{0};
  // When each failed attempt happened (to 5 ms), to show the back-off schedule.
  std::vector<std::pair<steady::time_point, std::uint64_t>> attempt_times;
  std::thread sampler([&] {
    std::uint64_t last = pool.stats().errors.connect;
    int tick = 0;
    while (!stop) {
      if (tick++ % 2 == 0) max_server = std::max(max_server.load(), server_connections_where(pg, "usename = 'fault_b_lim2'"));
      const auto now_errors = pool.stats().errors.connect;
      if (now_errors != last) attempt_times.emplace_back(steady::now(), now_errors - last);
      last = now_errors;
      std::this_thread::sleep_for(5ms);  // sampling period
    }
  });
  const auto errors_before = pool.stats().errors.connect;
  const auto t0 = steady::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < max_size; ++t) {
    ts.emplace_back([&] {
      while (!stop) {
        try {
          (void)pool.exec("select pg_sleep(0.01)");
          ++ok;
        } catch (const std::exception& e) {
          ++failed;
          std::lock_guard lk(mu);
          if (first_error.empty()) first_error = e.what();
        }
      }
    });
  }
  // The observation windows, timed from the first refused connect (slow
  // builds such as TSan reach it later): its first second holds the start-up
  // burst (the pool opens connects for its queued callers in parallel, at
  // most max_size) and the back-off doubling 50..400 ms; the two seconds
  // after it are the steady state.
  EXPECT_TRUE(wait_until([&] { return pool.stats().errors.connect > errors_before; }));
  std::this_thread::sleep_for(1s);
  const auto errors_mid = pool.stats().errors.connect;
  const auto t_mid = steady::now();
  // At least two seconds of steady state, and on until the callers have been
  // served enough to judge: a TSan build on a loaded machine is slower, and
  // the attempt bound below scales with the window's measured length.
  std::this_thread::sleep_for(2s);
  EXPECT_TRUE(wait_until([&] { return ok.load() > 50; }, 60s));
  const auto steady_attempts = pool.stats().errors.connect - errors_mid;
  const double steady_seconds = std::chrono::duration<double>(steady::now() - t_mid).count();
  stop = true;
  for (auto& t : ts) t.join();
  sampler.join();
  const double seconds = std::chrono::duration<double>(steady::now() - t0).count();
  const auto attempts = pool.stats().errors.connect - errors_before;
  EXPECT_EQ(failed.load(), 0) << first_error;
  EXPECT_GT(ok.load(), 50);
  EXPECT_LE(max_server.load(), 2);
  EXPECT_GE(attempts, 1u) << "the pool never tried to grow past the limit";
  // At start the queued callers open up to max_size connects at once (the
  // limit refuses max_size - 2); after that the pool keeps one attempt in
  // flight, spaced by a back-off doubling from 50 ms to 500 ms: about 2 per
  // second. A storm would be hundreds.
  const double per_second = 1000.0 / static_cast<double>(params.connect_backoff_max.count());
  const double bound = (max_size - 2) + seconds * per_second + 5;  // + the doubling steps 50..400 ms
  const double steady_bound = steady_seconds * per_second + 2;
  EXPECT_LE(static_cast<double>(attempts), bound);
  EXPECT_LE(static_cast<double>(steady_attempts), steady_bound);
  std::printf("[figure] connection_limit.blocking.queries_ok=%d in %.1f s\n", ok.load(), seconds);
  std::printf("[figure] connection_limit.blocking.failed_connect_attempts=%llu in %.1f s (bound %.0f)\n",
              static_cast<unsigned long long>(attempts), seconds, bound);
  std::printf("[figure] connection_limit.blocking.steady_failed_attempts=%llu in %.1f s (bound %.1f)\n",
              static_cast<unsigned long long>(steady_attempts), steady_seconds, steady_bound);
  std::printf("[figure] connection_limit.blocking.max_server_connections=%d\n", max_server.load());
  std::string timeline;
  for (const auto& [at, k] : attempt_times)
    timeline += std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(at - t0).count()) + "ms" +
                (k > 1 ? "x" + std::to_string(k) : "") + " ";
  std::printf("[figure] connection_limit.blocking.failed_attempts_at=%s\n", timeline.c_str());
}

}  // namespace
