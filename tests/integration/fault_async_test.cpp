// Faults only the async (pipelined) driver has: a hung server
// (SIGSTOP) under stall and query timeouts, the retry-safety split of a
// broken pipeline (written: connection_lost, unwritten: not_sent), an error
// mid-pipeline (implicit transactions and BEGIN...COMMIT on a lease), and
// connect back-off under a role connection limit. Each prints "[figure] ..."
// lines for docs/reliability.md. The faults both drivers share are written
// once in fault_drivers_test.cpp; cancellation races are in
// fault_cancel_test.cpp.
#include <pgpipe/async_client.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"
#include "support/raw_connection.hpp"
#include "support/wait.hpp"

#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pgpipe::async_client;
using pgpipe::errc;
using pgpipe::pool_params;
using pgpipe::devcluster::cluster;
using namespace pgpipe::test;  // the shared kit (tests/support)
using steady = std::chrono::steady_clock;

long long ms_between(steady::time_point a, steady::time_point b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

// Outcome of every request of a batch: how many times its handler ran (must
// be exactly once), its code and the backend that answered.
class tally {
 public:
  explicit tally(std::size_t n) : calls_(n), codes_(n), pids_(n, 0), values_(n, -1), done_at_(n) {}

  // A handler for request i of a "select pg_backend_pid(), ..." query.
  auto handler(std::size_t i) {
    return [this, i](std::error_code ec, pgpipe::result r) {
      std::lock_guard lk(mu_);
      ++calls_[i];
      codes_[i] = ec;
      done_at_[i] = steady::now();
      if (!ec && r.size() == 1) pids_[i] = r.value<int>(0, 0);
      if (!ec && r.size() == 1 && r.columns() >= 2) values_[i] = r.value<int>(0, 1);
      if (!ec) ++ok_;
      if (++completions_ == calls_.size()) cv_.notify_all();
    };
  }
  bool wait_all(std::chrono::seconds timeout = 30s) {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, timeout, [this] { return completions_ >= calls_.size(); });
  }
  // Called once nothing can complete any more (after the client is gone).
  void expect_each_completed_once() {
    std::lock_guard lk(mu_);
    for (std::size_t i = 0; i < calls_.size(); ++i) ASSERT_EQ(calls_[i], 1) << "request " << i;
  }
  std::map<std::string, int> codes() {
    std::lock_guard lk(mu_);
    std::map<std::string, int> m;
    for (auto& c : codes_) ++m[c ? c.message() : "ok"];
    return m;
  }
  std::error_code code(std::size_t i) {
    std::lock_guard lk(mu_);
    return codes_[i];
  }
  int pid(std::size_t i) {
    std::lock_guard lk(mu_);
    return pids_[i];
  }
  // The second column of a successful answer (the value the query sent), else -1.
  int value(std::size_t i) {
    std::lock_guard lk(mu_);
    return values_[i];
  }
  steady::time_point done_at(std::size_t i) {
    std::lock_guard lk(mu_);
    return done_at_[i];
  }
  std::size_t ok() {
    std::lock_guard lk(mu_);
    return ok_;
  }
  std::size_t size() const { return calls_.size(); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> calls_;
  std::vector<std::error_code> codes_;
  std::vector<int> pids_;
  std::vector<int> values_;
  std::vector<steady::time_point> done_at_;
  std::size_t completions_ = 0;
  std::size_t ok_ = 0;
};

std::string codes_text(const std::map<std::string, int>& m) {
  std::string s;
  for (auto& [k, v] : m) s += k + "=" + std::to_string(v) + "; ";
  return s;
}

// Collects the driver's log lines.
struct log_sink {
  std::mutex mu;
  std::vector<std::string> lines;
  std::vector<steady::time_point> times;
  pgpipe::logger_fn fn() {
    return [this](pgpipe::log_level, std::string_view line) {
      std::lock_guard lk(mu);
      lines.emplace_back(line);
      times.push_back(steady::now());
    };
  }
  // "<ms since t0> " for every line containing needle.
  std::string timeline(const std::string& needle, steady::time_point t0) {
    std::lock_guard lk(mu);
    std::string s;
    for (std::size_t i = 0; i < lines.size(); ++i)
      if (lines[i].find(needle) != std::string::npos) s += std::to_string(ms_between(t0, times[i])) + "ms ";
    return s;
  }
  std::size_t count(const std::string& needle) {
    std::lock_guard lk(mu);
    return static_cast<std::size_t>(
        std::count_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(needle) != std::string::npos; }));
  }
};

std::pair<std::error_code, pgpipe::result> run_sync(async_client& c, std::string_view sql) {
  auto f = c.async_query(sql, pgpipe::test::use_future_ec);
  if (f.wait_for(30s) != std::future_status::ready) return {make_error_code(std::errc::timed_out), pgpipe::result{}};
  auto [ec, r] = f.get();
  return {ec, std::move(r)};
}

// Sends SIGCONT when it goes out of scope, so a failing test never leaves a
// backend stopped (the cluster could not shut down cleanly otherwise).
struct sigcont_guard {
  const cluster& pg;
  pid_t pid;
  ~sigcont_guard() {
    try {
      pg.signal_backend(pid, SIGCONT);
    } catch (...) {
    }
  }
};

// Client with two connections open and idle, and their backend pids.
std::vector<pid_t> wait_for_idle_pair(const cluster& pg, async_client& client, const std::string& app) {
  EXPECT_TRUE(wait_until([&] { return client.stats().idle == 2; }));
  std::vector<pid_t> pids;
  EXPECT_TRUE(wait_until([&] {
    pids = pg.backend_pids(app);
    return pids.size() == 2;
  }));
  return pids;
}

void run_hung_server(std::chrono::milliseconds stall, std::chrono::milliseconds query_timeout, errc expected,
                     const char* figure) {
  auto& pg = pgpipe::test::shared_cluster();
  const std::string app = std::string("fault_a_hung_") + figure;
  auto params = fault_params(with_options(pg.conninfo(), "application_name=" + app), 2);
  params.min_size = 2;
  params.stall_timeout = stall;
  params.query_timeout = query_timeout;
  log_sink logs;
  pgpipe::async_client_options opts;
  opts.loops = 1;
  opts.logger = logs.fn();
  async_client client(params, opts);
  const auto pids = wait_for_idle_pair(pg, client, app);
  ASSERT_EQ(pids.size(), 2u);
  const pid_t hung = pids[0];

  constexpr std::size_t n = 40;
  tally t(n);
  steady::time_point sent;
  {
    pg.signal_backend(hung, SIGSTOP);
    sigcont_guard cont{pg, hung};
    sent = steady::now();
    // One burst: least-loaded placement alternates between the two connections.
    for (std::size_t i = 0; i < n; ++i) client.async_query("select pg_backend_pid(), $1::int", static_cast<int>(i), t.handler(i));
    ASSERT_TRUE(t.wait_all(20s)) << codes_text(t.codes());
    // The other connection kept serving while the hung one was stuck.
    EXPECT_GT(t.ok(), 0u);
    // The hung connection is declared broken and closed (logged with its reason).
    EXPECT_TRUE(wait_until([&] { return logs.count("stall_timeout") >= 1; }, 10s));
    // More work is served while the backend is still stopped.
    for (int i = 0; i < 50; ++i) {
      auto [ec, r] = run_sync(client, "select pg_backend_pid()");
      ASSERT_FALSE(ec) << ec.message() << ": " << r.diag().to_string();
      EXPECT_NE(r.value<int>(), hung);
    }
  }
  // SIGCONT sent: the stopped backend finds its client gone and exits.
  EXPECT_TRUE(wait_until([&] {
    auto now = pg.backend_pids(app);
    return std::find(now.begin(), now.end(), hung) == now.end();
  }));
  // Every request is accounted for: an answer from the healthy backend
  // carrying the value it sent, or the expected failure within the timeout
  // that applies plus a bound generous enough for a loaded 2-core machine
  // under TSan (the measured figure is in docs/reliability.md).
  const auto fires = expected == errc::query_timeout ? query_timeout : stall;
  constexpr long long bound_ms = 5000;
  long long worst_fail_ms = 0;
  std::size_t failed = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto ec = t.code(i);
    if (!ec) {
      EXPECT_NE(t.pid(i), hung);
      EXPECT_EQ(t.value(i), static_cast<int>(i)) << "request " << i << " got another request's answer";
      continue;
    }
    ++failed;
    EXPECT_EQ(ec, expected) << "request " << i << ": " << ec.message();
    EXPECT_TRUE(pgpipe::may_have_executed(ec));
    const auto fail_ms = ms_between(sent, t.done_at(i));
    EXPECT_LE(fail_ms, fires.count() + bound_ms) << "request " << i;
    // A query timeout never fires early (its clock starts at submission,
    // after `sent`); the stall clock starts at the last input, before it.
    if (expected == errc::query_timeout) {
      EXPECT_GE(fail_ms, query_timeout.count()) << "request " << i;
    }
    worst_fail_ms = std::max(worst_fail_ms, fail_ms);
  }
  EXPECT_GT(failed, 0u) << "no request went to the hung connection";
  const auto s = client.stats();
  // The hung connection, and only it, was closed.
  EXPECT_EQ(s.disconnects, 1u);
  client.close();
  std::printf("[figure] hung_server.async.%s.failed=%zu ok=%zu codes: %s\n", figure, failed, n - failed,
              codes_text(t.codes()).c_str());
  std::printf("[figure] hung_server.async.%s.worst_failure_ms=%lld (stall_timeout %lld, query_timeout %lld)\n", figure,
              worst_fail_ms, static_cast<long long>(stall.count()), static_cast<long long>(query_timeout.count()));
  std::printf("[figure] hung_server.async.%s.disconnects=%llu\n", figure, static_cast<unsigned long long>(s.disconnects));
  std::fflush(stdout);
  t.expect_each_completed_once();
}

TEST(fault_async, hung_server_stall_timeout_breaks_the_connection_and_fails_its_requests_with_connection_lost) {
  run_hung_server(500ms, 10s, errc::connection_lost, "stall");
}

TEST(fault_async, hung_server_query_timeout_fires_first_then_the_stalled_connection_is_closed) {
  run_hung_server(1500ms, 300ms, errc::query_timeout, "query_timeout");
}

// The retry-safety contract against a real server (docs/reliability.md): a
// lease with pipeline_depth 1 writes one query and holds the rest in its
// FIFO. The written one waits on a lock another session holds, so nothing
// comes back and the stall timeout breaks the connection: the written query
// fails with connection_lost (it may have executed), each held one with
// not_sent (safe to retry). Then the lock is released. The backend, alive
// all along, runs what it had received before it sees its client gone: the
// written insert stays (n = 0), and any held insert that had been written
// too would stay beside it, so the count of n >= 1 tells whether "not_sent"
// was true.
TEST(fault_async, broken_pipeline_fails_the_written_query_as_connection_lost_and_each_unwritten_one_as_not_sent) {
  auto& pg = pgpipe::test::shared_cluster();
  const std::string app = "fault_a_retry";
  pg.exec("drop table if exists fault_a_retry; create table fault_a_retry(n int)");
  auto holder = pgpipe::test::raw_connect(pg.conninfo());
  ASSERT_EQ(PQstatus(holder.get()), CONNECTION_OK) << PQerrorMessage(holder.get());
  auto exec_holder = [&](const char* sql) {
    PGresult* r = PQexec(holder.get(), sql);
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    return ok;
  };
  auto params = fault_params(with_options(pg.conninfo(), "application_name=" + app), 1);
  params.pipeline_depth = 1;
  params.stall_timeout = 500ms;
  params.query_timeout = 0ms;  // none: only the stall may end the wait
  async_client client(params, {.loops = 1});
  auto [lec, l] = client.async_acquire(pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(lec) << lec.message();
  auto [pec, pr] = l.async_query("select pg_backend_pid()", pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(pec) << pec.message();
  const pid_t backend = pr.value<int>();
  ASSERT_TRUE(exec_holder("begin; lock table fault_a_retry in access exclusive mode"));
  constexpr std::size_t n = 5;
  tally t(n);
  for (std::size_t i = 0; i < n; ++i)
    l.async_query("insert into fault_a_retry values ($1) returning pg_backend_pid(), n", static_cast<int>(i),
                  t.handler(i));
  ASSERT_TRUE(t.wait_all(20s)) << codes_text(t.codes());
  EXPECT_EQ(t.code(0), errc::connection_lost) << t.code(0).message();
  EXPECT_TRUE(pgpipe::may_have_executed(t.code(0)));
  for (std::size_t i = 1; i < n; ++i) {
    EXPECT_EQ(t.code(i), errc::not_sent) << "query " << i << ": " << t.code(i).message();
    EXPECT_FALSE(pgpipe::may_have_executed(t.code(i))) << "query " << i;
    EXPECT_TRUE(pgpipe::is_connection_lost(t.code(i))) << "query " << i;
  }
  l.release();
  ASSERT_TRUE(exec_holder("commit"));
  // The backend runs what reached it, finds its client gone and exits.
  EXPECT_TRUE(wait_until([&] {
    auto now = pg.backend_pids(app);
    return std::find(now.begin(), now.end(), backend) == now.end();
  }));
  EXPECT_EQ(pg.query_value("select count(*) from fault_a_retry where n = 0"), "1")
      << "the written insert ran once the lock was free: what was written runs";
  EXPECT_EQ(pg.query_value("select count(*) from fault_a_retry where n >= 1"), "0")
      << "a query reported not_sent reached the server";
  client.close();
  std::printf("[figure] retry_safety.async.written=1 unwritten=%zu codes: %s\n", n - 1, codes_text(t.codes()).c_str());
}

// Runs the statements pipelined (all submitted before any answer) on a lease
// and returns their codes in order.
std::vector<std::error_code> pipelined_on_lease(pgpipe::async_lease& l, const std::vector<std::string>& sqls) {
  std::vector<std::future<std::tuple<std::error_code, pgpipe::result>>> fs;
  for (const auto& s : sqls) fs.push_back(l.async_query(s, pgpipe::test::use_future_ec));
  std::vector<std::error_code> out;
  for (auto& f : fs) {
    if (f.wait_for(30s) != std::future_status::ready) {
      out.push_back(make_error_code(std::errc::timed_out));
      continue;
    }
    out.push_back(std::get<0>(f.get()));
  }
  return out;
}

TEST(fault_async, error_mid_pipeline_fails_only_the_statement_and_what_depends_on_it) {
  auto& pg = pgpipe::test::shared_cluster();
  pg.exec("drop table if exists fault_a_tx; create table fault_a_tx(n int)");
  async_client client(fault_params(pg.conninfo(), 1), {.loops = 1});
  auto [lec, l] = client.async_acquire(pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(lec) << lec.message();

  // Implicit transactions: each statement has its own Sync, so only the
  // failing one fails and its neighbours commit.
  auto implicit = pipelined_on_lease(l, {"insert into fault_a_tx values (1)", "select 1/0",
                                         "insert into fault_a_tx values (2)", "select count(*) from fault_a_tx"});
  ASSERT_EQ(implicit.size(), 4u);
  EXPECT_FALSE(implicit[0]) << implicit[0].message();
  EXPECT_EQ(pgpipe::sqlstate_of(implicit[1]), "22012") << implicit[1].message();
  EXPECT_FALSE(implicit[2]) << implicit[2].message();
  EXPECT_FALSE(implicit[3]) << implicit[3].message();

  // BEGIN...COMMIT: the failing statement aborts the block; the statements
  // after it in the block depend on it (25P02); COMMIT ends the block as a
  // rollback, reported as 25P02 too (never as committed); what follows the
  // block runs normally.
  auto block = pipelined_on_lease(l, {"begin", "insert into fault_a_tx values (3)", "select 1/0",
                                      "insert into fault_a_tx values (4)", "commit", "select 5"});
  ASSERT_EQ(block.size(), 6u);
  EXPECT_FALSE(block[0]) << block[0].message();
  EXPECT_FALSE(block[1]) << block[1].message();
  EXPECT_EQ(pgpipe::sqlstate_of(block[2]), "22012") << block[2].message();
  EXPECT_EQ(pgpipe::sqlstate_of(block[3]), "25P02") << block[3].message();
  EXPECT_EQ(pgpipe::sqlstate_of(block[4]), "25P02") << block[4].message();
  EXPECT_FALSE(block[5]) << block[5].message();
  auto [ec, r] = l.async_query("select array_agg(n order by n)::text from fault_a_tx", pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(r.value<std::string>(), "{1,2}");
  l.release();

  // The shared pipeline: a failure in one caller's query leaves the others.
  auto shared = std::vector<std::future<std::tuple<std::error_code, pgpipe::result>>>{};
  for (int i = 0; i < 30; ++i) shared.push_back(client.async_query(i == 15 ? "select 1/0" : "select 1", pgpipe::test::use_future_ec));
  for (int i = 0; i < 30; ++i) {
    auto c = std::get<0>(shared[i].get());
    if (i == 15) EXPECT_EQ(pgpipe::sqlstate_of(c), "22012");
    else EXPECT_FALSE(c) << i << ": " << c.message();
  }
  EXPECT_EQ(client.stats().connects, 1u);  // one session survived every error
}

TEST(fault_async, connection_limit_2_with_a_pool_of_10_backs_off_and_serves_on_two) {
  auto& pg = pgpipe::test::shared_cluster();
  limited_role role(pg, "fault_a_lim2", "lim-pw-4471");
  constexpr std::size_t max_size = 10;
  auto params = fault_params(role.conninfo(role.name()), max_size);
  params.pipeline_depth = 4;  // so that the load really asks for more connections
  log_sink logs;
  pgpipe::async_client_options opts;
  opts.loops = 1;
  opts.logger = logs.fn();
  async_client client(params, opts);
  std::atomic<bool> stop{false};
  std::atomic<int> max_server{0};
  std::thread sampler([&] {
    while (!stop) {
      max_server = std::max(max_server.load(), server_connections_where(pg, "usename = 'fault_a_lim2'"));
      std::this_thread::sleep_for(10ms);  // sampling period
    }
  });
  // 40 logical clients in a closed loop, each with one query in flight.
  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  std::mutex mu;
  std::string first_error;
  std::atomic<int> running{0};
  std::condition_variable done_cv;
  std::function<void()> start_one;
  start_one = [&] {
    ++running;
    client.async_query("select pg_sleep(0.01)", [&](std::error_code ec, pgpipe::result r) {
      if (ec) {
        ++failed;
        std::lock_guard lk(mu);
        if (first_error.empty()) first_error = ec.message() + ": " + r.diag().to_string();
      } else {
        ++ok;
      }
      if (!stop) start_one();
      std::lock_guard lk(mu);
      if (--running == 0) done_cv.notify_all();
    });
  };
  const auto t0 = steady::now();
  for (int i = 0; i < 40; ++i) start_one();
  // The observation windows, timed from the first refused connect (slow
  // builds such as TSan reach it later): its first second holds the start-up
  // burst and the back-off doubling 50..400 ms; then two seconds of steady state.
  EXPECT_TRUE(wait_until([&] { return logs.count("connect failed") > 0; }));
  std::this_thread::sleep_for(1s);
  const auto at_mid = logs.count("connect failed");
  const auto t_mid = steady::now();
  const auto mid = client.stats();
  // At least two seconds of steady state, and on until the callers have been
  // served enough to judge: a TSan build on a loaded machine is slower, and
  // the attempt bound below scales with the window's measured length.
  std::this_thread::sleep_for(2s);
  EXPECT_TRUE(wait_until([&] { return ok.load() > 100; }, 60s));
  const auto steady_attempts = logs.count("connect failed") - at_mid;
  const double steady_seconds = std::chrono::duration<double>(steady::now() - t_mid).count();
  stop = true;
  {
    std::unique_lock lk(mu);
    ASSERT_TRUE(done_cv.wait_for(lk, 30s, [&] { return running.load() == 0; }));
  }
  sampler.join();
  const double seconds = std::chrono::duration<double>(steady::now() - t0).count();
  const auto attempts = logs.count("connect failed");
  const auto limit_lines = logs.count("too many connections for role");
  EXPECT_EQ(failed.load(), 0) << first_error;
  EXPECT_GT(ok.load(), 100) << "at 1 s: idle=" << mid.idle << " busy=" << mid.busy << " connecting=" << mid.connecting
                            << " in_flight=" << mid.in_flight << " queued=" << mid.queued << " completed=" << mid.completed;
  EXPECT_LE(max_server.load(), 2);
  EXPECT_GE(limit_lines, 1u) << "no 53300 connect error seen in the log";
  const double per_second = 1000.0 / static_cast<double>(params.connect_backoff_max.count());
  const double bound = static_cast<double>(max_size - 2) + seconds * per_second + 5;
  const double steady_bound = steady_seconds * per_second + 2;
  EXPECT_LE(static_cast<double>(attempts), bound);
  EXPECT_LE(static_cast<double>(steady_attempts), steady_bound);
  const auto s = client.stats();
  std::printf("[figure] connection_limit.async.queries_ok=%d in %.1f s\n", ok.load(), seconds);
  std::printf("[figure] connection_limit.async.failed_connect_attempts=%zu in %.1f s (bound %.0f), stats.errors.connect=%llu\n",
              attempts, seconds, bound, static_cast<unsigned long long>(s.errors.connect));
  std::printf("[figure] connection_limit.async.steady_failed_attempts=%zu in %.1f s (bound %.1f)\n", steady_attempts,
              steady_seconds, steady_bound);
  std::printf("[figure] connection_limit.async.max_server_connections=%d\n", max_server.load());
  std::printf("[figure] connection_limit.async.failed_attempts_at=%s\n", logs.timeline("connect failed", t0).c_str());
}

}  // namespace
