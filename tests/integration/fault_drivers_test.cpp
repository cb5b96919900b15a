// Faults both drivers must survive the same way, written once over
// tests/support/driver_adapter.hpp and run against each: backends
// terminated or SIGKILLed with work in flight, a server restarted under an
// idle pool, a role connection limit that refuses every connect, pool
// exhaustion told apart from a server that is down, and connect errors no
// retry can fix (unknown host, no such database or role) failing callers at
// once while a refused port keeps the acquire_timeout contract. Each prints
// "[figure] <scenario>.<driver>...." lines for docs/reliability.md.
// Driver-specific faults stay in fault_async_test.cpp (hung server with
// stall/query timeouts, errors mid-pipeline, retry safety) and
// fault_blocking_test.cpp (hung backend, errors inside BEGIN...COMMIT).
#include "support/cluster_fixture.hpp"
#include "support/driver_adapter.hpp"
#include "support/kit.hpp"
#include "support/wait.hpp"

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <netdb.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <future>
#include <system_error>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using namespace pgpipe::test;  // the shared kit (tests/support)
using pgpipe::errc;
using pgpipe::devcluster::cluster;
using steady = std::chrono::steady_clock;

long long ms_since(steady::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t).count();
}

template <class D>
class fault_drivers : public ::testing::Test {};
TYPED_TEST_SUITE(fault_drivers, drivers, driver_names);

// Every query of `b` ended exactly once. Call after the driver is destroyed:
// nothing can complete any more, so a second completion would be counted.
void expect_each_completed_once(const batch& b) {
  for (std::size_t i = 0; i < b.size(); ++i) EXPECT_EQ(b.calls(i), 1) << "query " << i;
}

// How many queries each connection of a killed pair has in flight: the async
// driver pipelines them (all written: the pipeline is deeper), the blocking
// one runs one per connection.
template <class D>
constexpr std::size_t per_connection = D::pipelined ? 50 : 1;

// Kills the backends while every connection of a pool of two runs a
// 30-second query (`sigkill`: one SIGKILL, which makes the postmaster end
// every backend; otherwise pg_terminate_backend on each). Every query ends
// once, promptly, as a connection loss; the pool refills without exceeding
// max_size on the server.
template <class D>
void run_killed_with_work_in_flight(cluster& pg, const std::string& app, bool sigkill) {
  constexpr std::size_t max_size = 2;
  auto params = fault_params(with_options(pg.conninfo(), "application_name=" + app), max_size);
  params.min_size = max_size;
  auto driver = std::make_unique<D>(params);
  ASSERT_TRUE(wait_until([&] { return driver->stats().idle == max_size; }));
  connection_sampler sampler(pg, *driver, app);
  const std::size_t n = max_size * per_connection<D>;
  // run_all waits for every query: it runs on its own thread while this one kills.
  std::future<batch> work = std::async(std::launch::async, [&] { return driver->run_all("select pg_sleep(30)", n); });
  ASSERT_TRUE(wait_until([&] {
    return server_connections_where(pg, "application_name = '" + app + "' and state = 'active' and query like '%pg_sleep%'") ==
           static_cast<int>(max_size);
  }));
  const auto pids = pg.backend_pids(app);
  ASSERT_EQ(pids.size(), max_size);
  const auto killed_at = steady::now();
  if (sigkill) pg.signal_backend(pids.front(), SIGKILL);
  else
    for (pid_t pid : pids) EXPECT_TRUE(pg.terminate_backend(pid));
  ASSERT_EQ(work.wait_for(60s), std::future_status::ready);
  const batch b = work.get();
  ASSERT_TRUE(b.wait(0s)) << b.codes();
  const auto all_failed_ms = ms_since(killed_at);
  // Every query was on a killed backend: all of them fail (none is left
  // hanging for the 30 s of its sleep), each as a lost connection. The async
  // driver reports the head of each terminated pipeline with the server's
  // own FATAL (57P01 terminated by administrator; after a SIGKILL, the
  // postmaster's 57P02 crash shutdown); the blocking driver translates it.
  std::size_t server_said = 0;
  const auto outs = b.outcomes();
  for (std::size_t i = 0; i < n; ++i) {
    const auto& o = outs[i];
    ASSERT_TRUE(o.ec) << "query " << i << " succeeded after its backend was killed";
    const std::string state = pgpipe::sqlstate_of(o.ec);
    if (state == "57P01" || state == "57P02") {
      ++server_said;
      continue;
    }
    if (sigkill) {
      EXPECT_TRUE(pgpipe::is_connection_lost(o.ec)) << "query " << i << ": " << o.text;
    } else {
      EXPECT_EQ(o.ec, errc::connection_lost) << "query " << i << ": " << o.text;
    }
    // Written before the kill (the pipeline is deeper than the batch): "may have executed".
    EXPECT_TRUE(pgpipe::may_have_executed(o.ec)) << "query " << i << ": " << o.text;
  }
  EXPECT_LE(server_said, D::pipelined ? max_size : 0) << b.codes();
  // The pool refills and serves: every next query succeeds (waiting through
  // crash recovery after SIGKILL).
  const auto refill_start = steady::now();
  const batch after = driver->run_all("select pg_backend_pid()", 200);
  ASSERT_TRUE(after.wait(0s));
  EXPECT_EQ(after.failed(), 0u) << after.codes();
  const auto refill_ms = ms_since(refill_start);
  sampler.stop();
  const auto s = driver->stats();
  EXPECT_LE(sampler.max_server(), static_cast<int>(max_size));
  EXPECT_LE(sampler.max_pool(), max_size);
  // The pool's own record agrees with its callers: every loss they saw is
  // counted (a check that can fail for the blocking driver too, where each
  // query ends once by construction of its thread).
  EXPECT_GE(s.errors.connection_lost, b.failed() - server_said) << b.codes();
  driver.reset();  // waits for everything in flight: no completion can come after this
  expect_each_completed_once(b);
  expect_each_completed_once(after);
  const char* kind = sigkill ? "backend_sigkill" : "backend_terminated";
  std::printf("[figure] %s.%s.in_flight=%zu failed=%zu codes: %s\n", kind, D::name, n, b.failed(), b.codes().c_str());
  std::printf("[figure] %s.%s.all_failed_ms=%lld\n", kind, D::name, all_failed_ms);
  std::printf("[figure] %s.%s.next_200_queries_ms=%lld\n", kind, D::name, refill_ms);
  std::printf("[figure] %s.%s.max_server_connections=%d max_pool=%zu (max_size %zu) connects=%llu\n", kind, D::name,
              sampler.max_server(), sampler.max_pool(), max_size, static_cast<unsigned long long>(s.connects));
  std::fflush(stdout);
}

TYPED_TEST(fault_drivers, terminated_backends_fail_every_query_in_flight_once_and_the_pool_refills) {
  run_killed_with_work_in_flight<TypeParam>(shared_cluster(), std::string("fault_term_") + TypeParam::name, false);
}

TYPED_TEST(fault_drivers, sigkilled_backend_crash_restarts_the_server_and_every_query_completes_once) {
  // SIGKILL makes the postmaster reset every backend: a private cluster.
  auto pg = fresh_cluster();
  run_killed_with_work_in_flight<TypeParam>(*pg, std::string("fault_kill_") + TypeParam::name, true);
}

TYPED_TEST(fault_drivers, server_restarted_under_an_idle_pool_is_noticed_and_the_pool_refills_without_a_storm) {
  using D = TypeParam;
  auto pg = fresh_cluster();
  const std::string app = std::string("fault_restart_") + D::name;
  constexpr std::size_t max_size = 4;
  auto params = fault_params(with_options(pg->conninfo(), "application_name=" + app), max_size);
  params.min_size = max_size;
  auto driver = std::make_unique<D>(params);
  ASSERT_TRUE(wait_until([&] { return driver->stats().idle == max_size; }));
  const auto connects_before = driver->stats().connects;
  pg->restart(pgpipe::devcluster::stop_mode::immediate);
  const auto restarted = steady::now();
  connection_sampler sampler(*pg, *driver, app);
  // The blocking pool checks a connection before handing it out: no query
  // fails. The async driver may have written a query to a socket that had
  // not yet reported its end: such a query fails as a lost connection, and
  // nothing else may fail.
  const batch b = driver->run_all("select pg_backend_pid()", D::pipelined ? 1000 : 120);
  ASSERT_TRUE(b.wait(0s)) << b.codes();
  const auto first_wave_ms = ms_since(restarted);
  const auto outs = b.outcomes();
  for (std::size_t i = 0; i < outs.size(); ++i) {
    if (outs[i].ec) {
      EXPECT_TRUE(pgpipe::is_connection_lost(outs[i].ec)) << i << ": " << outs[i].text;
    }
  }
  if (!D::pipelined) {
    EXPECT_EQ(b.failed(), 0u) << b.codes();
  }
  // Each dead connection is noticed and replaced: the pool is back to
  // min_size, serving, and never exceeded max_size on the server.
  ASSERT_TRUE(wait_until([&] { return driver->stats().idle == max_size; }));
  const auto next = driver->run("select 1");
  EXPECT_FALSE(next.ec) << next.text;
  sampler.stop();
  const auto reconnects = driver->stats().connects - connects_before;
  EXPECT_LE(sampler.max_server(), static_cast<int>(max_size));
  EXPECT_LE(sampler.max_pool(), max_size);
  // No reconnect loop: each dead connection replaced about once.
  EXPECT_LE(reconnects, 2 * max_size);
  EXPECT_GE(reconnects, 1u);
  driver.reset();
  expect_each_completed_once(b);
  std::printf("[figure] server_restart_idle_pool.%s.%zu_queries_ms=%lld failed=%zu codes: %s\n", D::name, b.size(),
              first_wave_ms, b.failed(), b.codes().c_str());
  std::printf("[figure] server_restart_idle_pool.%s.reconnects=%llu (max_size %zu) max_server_connections=%d\n", D::name,
              static_cast<unsigned long long>(reconnects), max_size, sampler.max_server());
}

TYPED_TEST(fault_drivers, connection_limit_reports_53300_when_nothing_can_be_opened) {
  using D = TypeParam;
  auto& pg = shared_cluster();
  const std::string role_name = std::string("fault_lim1_") + D::name;
  constexpr const char* password = "lim-pw-4471";
  limited_role role(pg, role_name, password);
  // Two outside connections use up the role's limit.
  std::vector<std::unique_ptr<PGconn, decltype(&PQfinish)>> held;
  for (int i = 0; i < 2; ++i) {
    held.emplace_back(PQconnectdb(role.conninfo("outside").c_str()), &PQfinish);
    ASSERT_EQ(PQstatus(held.back().get()), CONNECTION_OK) << PQerrorMessage(held.back().get());
  }
  auto params = fault_params(role.conninfo(role_name), 10);
  params.acquire_timeout = 1s;
  D driver(params);
  const auto o = driver.run("select 1");
  EXPECT_EQ(pgpipe::sqlstate_of(o.ec), "53300") << o.text;
  EXPECT_NE(o.text.find("too many connections for role"), std::string::npos) << o.text;
  const std::string log = driver.log();
  if (D::pipelined) {  // the async driver logs; the blocking one has no logger
    EXPECT_NE(log.find("too many connections for role"), std::string::npos) << log;
  }
  expect_no_secret(o.text, {password}, "the error");
  expect_no_secret(log, {password}, "the log");
}

TYPED_TEST(fault_drivers, pool_exhaustion_and_server_down_are_two_different_errors) {
  using D = TypeParam;
  auto pg = fresh_cluster();
  auto params = fault_params(pg->conninfo(), 1);
  params.acquire_timeout = 300ms;
  D driver(params);
  outcome exhausted;
  std::error_code second_lease;
  {
    auto lease = driver.hold();
    // The only connection is held: neither a second lease nor a query gets one.
    try {
      auto again = driver.hold();
    } catch (const std::system_error& e) {  // pgpipe::error is one
      second_lease = e.code();
    }
    exhausted = driver.run("select 1");
  }
  EXPECT_EQ(second_lease, errc::pool_timeout) << second_lease.message();
  pg->stop(pgpipe::devcluster::stop_mode::immediate);
  // The async driver sees its idle connection close; the blocking one finds
  // the dead connection when it next uses it, and may report that one use as
  // a lost connection before the next acquire names the cause.
  if (D::watches_idle_connections) {
    ASSERT_TRUE(wait_until([&] { return driver.stats().idle == 0; }));
  }
  auto down = driver.run("select 1");
  if (!D::watches_idle_connections && pgpipe::is_connection_lost(down.ec)) down = driver.run("select 1");
  EXPECT_EQ(exhausted.ec, errc::pool_timeout) << exhausted.text;
  EXPECT_EQ(down.ec, errc::server_unreachable) << down.text;
  EXPECT_NE(exhausted.ec, down.ec);
  EXPECT_NE(down.text.find("Connection refused"), std::string::npos) << down.text;
}

// Connect errors a retry cannot fix fail a caller at once, with the error and
// its diagnostics, however long acquire_timeout is. The bound is generous
// (a third of acquire_timeout): what is checked is "not waiting it out".
constexpr auto permanent_acquire_timeout = 60s;
constexpr long long at_once_bound_ms = 20'000;

TYPED_TEST(fault_drivers, an_unknown_host_fails_a_query_at_once_with_server_unreachable) {
  using D = TypeParam;
  constexpr const char* host = "no-such-host.invalid";
  addrinfo* ai = nullptr;
  const int gai = ::getaddrinfo(host, "5432", nullptr, &ai);
  if (ai != nullptr) ::freeaddrinfo(ai);
  if (gai != EAI_NONAME && gai != EAI_NODATA)
    GTEST_SKIP() << "this machine's resolver does not give a final answer for " << host << ": " << ::gai_strerror(gai);
  constexpr const char* password = "unknown-host-pw-77";
  auto params = fault_params(std::string("host=") + host + " port=5432 user=app dbname=app password=" + password, 2);
  params.acquire_timeout = permanent_acquire_timeout;
  D driver(params);
  for (int i = 0; i < 2; ++i) {  // the first query, and one after the pool has seen the answer
    const auto started = steady::now();
    const auto o = driver.run("select 1");
    const long long waited = ms_since(started);
    EXPECT_EQ(o.ec, errc::server_unreachable) << o.text;
    EXPECT_EQ(o.ec, pgpipe::errc_condition::connect_error) << o.text;
    EXPECT_NE(o.diag.client_message.find(host), std::string::npos) << o.text;
    EXPECT_LT(waited, at_once_bound_ms) << "query " << i << " waited for acquire_timeout: " << o.text;
    expect_no_secret(o.text, {password}, "the error");
  }
}

TYPED_TEST(fault_drivers, a_database_or_role_that_does_not_exist_fails_at_once_with_its_sqlstate) {
  using D = TypeParam;
  auto& pg = shared_cluster();
  const struct {
    std::string options, sqlstate, words;
  } cases[] = {{"dbname=no_such_db_fd", "3D000", "database \"no_such_db_fd\" does not exist"},
               // With password authentication the server does not say that a
               // role is missing (that would tell a stranger which exist).
               {"user=no_such_role_fd", "28P01", "password authentication failed for user \"no_such_role_fd\""}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.options);
    auto params = fault_params(with_options(pg.conninfo(), c.options), 2);
    params.acquire_timeout = permanent_acquire_timeout;
    D driver(params);
    const auto started = steady::now();
    const auto o = driver.run("select 1");
    EXPECT_LT(ms_since(started), at_once_bound_ms) << o.text;
    EXPECT_EQ(pgpipe::sqlstate_of(o.ec), c.sqlstate) << o.text;
    EXPECT_EQ(o.diag.sqlstate, c.sqlstate) << o.text;
    EXPECT_NE(o.diag.message.find(c.words), std::string::npos) << o.text;
  }
}

TYPED_TEST(fault_drivers, a_refused_port_waits_out_acquire_timeout_with_the_transient_error) {
  using D = TypeParam;
  auto params = fault_params("host=127.0.0.1 port=" + std::to_string(refused_port()) + " user=app dbname=app", 1);
  params.acquire_timeout = 1500ms;
  D driver(params);
  const auto started = steady::now();
  const auto o = driver.run("select 1");
  // The server may come up meanwhile: the caller is told only when its
  // acquire_timeout is over.
  EXPECT_GE(ms_since(started), 1500) << o.text;
  EXPECT_EQ(o.ec, errc::server_unreachable) << o.text;
  EXPECT_NE(o.text.find("Connection refused"), std::string::npos) << o.text;
}

}  // namespace
