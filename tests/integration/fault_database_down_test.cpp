// Database down: the test HikariCP's authors use to compare pools.
//
// One operation every 200 ms through each driver (blocking_pool and
// async_client, side by side in the same outage), each bounded by a 1 s
// timeout (acquire_timeout, query_timeout, connect_timeout). The server is
// stopped in immediate mode for 10 s, then started again. A user relies on:
//  - every operation during the outage fails, within its timeout plus a small
//    margin: none hangs;
//  - the first success comes soon after the server accepts connections again
//    (the pool does not sit in a long back-off).
// The worst failure latency and the recovery time are printed as
// "[figure] database_down.<driver>.<name>=<value>" lines for docs/reliability.md.
#include <pgpipe/async_client.hpp>
#include <pgpipe/blocking_pool.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"

#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

constexpr auto op_period = 200ms;
constexpr auto op_timeout = 1s;
constexpr auto outage = 10s;
// Generous bounds for a shared 2-core CI machine; the real figures are printed.
constexpr auto failure_bound = 3s;
constexpr auto recovery_bound = 3s;
// An operation that has not completed after this long counts as hung.
constexpr auto hang_guard = 15s;

struct op_record {
  steady::time_point start;
  steady::time_point end;
  std::error_code ec;
  std::string message;
  bool hung = false;
  std::chrono::milliseconds latency() const { return std::chrono::duration_cast<std::chrono::milliseconds>(end - start); }
};

pgpipe::pool_params one_second_params(const std::string& conninfo) {
  pgpipe::pool_params p;
  p.conninfo = conninfo;
  p.max_size = 2;
  p.acquire_timeout = op_timeout;
  p.query_timeout = op_timeout;
  p.connect_timeout = op_timeout;
  return p;
}

op_record blocking_op(pgpipe::blocking_pool& pool) {
  op_record r;
  r.start = steady::now();
  try {
    auto rows = pool.exec("select 1");
    if (rows.size() != 1 || rows[0][0].get<int>() != 1) r.ec = std::make_error_code(std::errc::bad_message);
  } catch (const pgpipe::error& e) {
    r.ec = e.code();
    r.message = e.what();
  } catch (const std::exception& e) {
    // Anything that is not a pgpipe::error is a contract violation; record it.
    r.ec = std::make_error_code(std::errc::state_not_recoverable);
    r.message = std::string("non-pgpipe exception: ") + e.what();
  }
  r.end = steady::now();
  return r;
}

op_record async_op(pgpipe::async_client& client) {
  op_record r;
  r.start = steady::now();
  auto f = client.async_query("select 1", pgpipe::test::use_future_ec);
  if (f.wait_for(hang_guard) != std::future_status::ready) {
    r.hung = true;
    r.end = steady::now();
    // The handler still owns the shared state; leaving the future is safe.
    return r;
  }
  auto [ec, res] = f.get();
  r.end = steady::now();
  r.ec = ec;
  if (ec) r.message = ec.message() + ": " + res.diag().to_string();
  else if (res.size() != 1) r.ec = std::make_error_code(std::errc::bad_message);
  return r;
}

// Runs `op` every op_period (a fixed schedule; an operation that overruns its
// slot is followed at once by the next) until `stop` is set.
template <class Op>
std::vector<op_record> run_schedule(Op op, const std::atomic<bool>& stop) {
  std::vector<op_record> out;
  auto next = steady::now();
  while (!stop.load()) {
    out.push_back(op());
    if (out.back().hung) break;  // the test fails on it; do not pile up more
    next += op_period;
    const auto now = steady::now();
    if (next > now) std::this_thread::sleep_until(next);  // the schedule, not a wait for a condition
    else next = now;
  }
  return out;
}

long long ms(steady::duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

struct outage_times {
  steady::time_point stop_returned;
  steady::time_point start_called;
  steady::time_point start_returned;
};

void check_driver(const char* driver, const std::vector<op_record>& ops, const outage_times& t) {
  SCOPED_TRACE(driver);
  ASSERT_FALSE(ops.empty());
  std::chrono::milliseconds worst_failure{0};
  std::chrono::milliseconds worst_any{0};
  std::size_t during = 0;
  std::size_t failed_during = 0;
  std::size_t lost_during = 0;
  std::optional<steady::time_point> first_success_after;
  std::size_t ok_before = 0;
  std::set<std::string> codes;
  for (const auto& op : ops) {
    ASSERT_FALSE(op.hung) << driver << ": an operation started " << ms(op.start - t.stop_returned)
                          << " ms after the stop never completed";
    worst_any = std::max(worst_any, op.latency());
    EXPECT_LT(op.latency(), failure_bound) << "op at +" << ms(op.start - t.stop_returned) << " ms: " << op.message;
    if (op.ec) worst_failure = std::max(worst_failure, op.latency());
    if (op.end < t.stop_returned && !op.ec) ++ok_before;
    // Entirely inside the outage: must fail (nothing could have served it).
    if (op.start >= t.stop_returned && op.end <= t.start_called) {
      ++during;
      if (op.ec) {
        ++failed_during;
        codes.insert(op.ec.message());
        // The documented kinds (docs/reliability.md): the server is
        // unreachable; or, once, a connection that died with the server is
        // found dead on first use (a connection loss). Not a timeout, not
        // any SQLSTATE.
        if (pgpipe::is_connection_lost(op.ec)) {
          ++lost_during;
        } else {
          EXPECT_EQ(op.ec, pgpipe::errc::server_unreachable) << op.ec.message() << ": " << op.message;
        }
      }
    }
    if (!op.ec && op.end >= t.start_returned && !first_success_after) first_success_after = op.end;
  }
  EXPECT_GT(ok_before, 0u) << "the driver never worked before the outage";
  // A failing operation takes up to its 1 s timeout (the pool waits for a
  // connect to succeed until the deadline), so 10 s hold about 8-50 of them.
  EXPECT_GE(during, 5u);
  EXPECT_EQ(failed_during, during) << "an operation succeeded while the server was down";
  EXPECT_LE(lost_during, 1u) << "more than one operation met a dead connection: the pool kept handing them out";
  ASSERT_TRUE(first_success_after.has_value()) << "no success after the server came back";
  const auto recovery = *first_success_after - t.start_returned;
  EXPECT_LT(recovery, recovery_bound);
  std::printf("[figure] database_down.%s.ops_during_outage=%zu\n", driver, during);
  std::printf("[figure] database_down.%s.worst_failure_ms=%lld\n", driver, static_cast<long long>(worst_failure.count()));
  std::printf("[figure] database_down.%s.worst_any_ms=%lld\n", driver, static_cast<long long>(worst_any.count()));
  std::printf("[figure] database_down.%s.recovery_ms=%lld\n", driver, ms(recovery));
  for (const auto& c : codes) std::printf("[figure] database_down.%s.error_seen=%s\n", driver, c.c_str());
  std::fflush(stdout);
}

TEST(fault_database_down, every_operation_fails_within_its_timeout_and_the_pool_recovers_at_once) {
  auto pg = pgpipe::test::fresh_cluster();
  pgpipe::blocking_pool blocking{one_second_params(pgpipe::test::with_options(pg->conninfo(), "application_name=down_b"))};
  pgpipe::async_client async{one_second_params(pgpipe::test::with_options(pg->conninfo(), "application_name=down_a")), {.loops = 1}};
  // Both work before the fault.
  ASSERT_FALSE(blocking_op(blocking).ec);
  ASSERT_FALSE(async_op(async).ec);

  std::atomic<bool> stop{false};
  std::vector<op_record> blocking_ops;
  std::vector<op_record> async_ops;
  std::thread tb([&] { blocking_ops = run_schedule([&] { return blocking_op(blocking); }, stop); });
  std::thread ta([&] { async_ops = run_schedule([&] { return async_op(async); }, stop); });

  // A second of normal service, then the outage. The sleeps here are the
  // fault's schedule (what is injected when), not waits for a condition.
  std::this_thread::sleep_for(1s);
  outage_times t;
  const auto connects_before_b = blocking.stats().errors.connect;
  const auto connects_before_a = async.stats().errors.connect;
  pg->stop(pgpipe::devcluster::stop_mode::immediate);
  t.stop_returned = steady::now();
  std::this_thread::sleep_for(outage);
  t.start_called = steady::now();
  const std::uint64_t failed_connects_b = blocking.stats().errors.connect - connects_before_b;
  const std::uint64_t failed_connects_a = async.stats().errors.connect - connects_before_a;
  pg->start();  // returns once the server accepts connections
  t.start_returned = steady::now();
  std::this_thread::sleep_for(2s);  // observe recovery
  stop = true;
  tb.join();
  ta.join();

  std::printf("[figure] database_down.server_start_ms=%lld\n", ms(t.start_returned - t.start_called));
  check_driver("blocking", blocking_ops, t);
  check_driver("async", async_ops, t);
  // No connect storm while the server is down: after the first failures the
  // pool keeps one attempt in flight, spaced by a back-off doubling up to
  // connect_backoff_max (500 ms): about 2 a second. The bound doubles that
  // rate and adds the doubling steps; a storm would be hundreds.
  const double outage_s = std::chrono::duration<double>(t.start_called - t.stop_returned).count();
  const double backoff_max_ms = static_cast<double>(one_second_params("").connect_backoff_max.count());
  const double connect_bound = outage_s * 2 * 1000.0 / backoff_max_ms + 10;
  for (auto [driver, n] : {std::pair{"blocking", failed_connects_b}, std::pair{"async", failed_connects_a}}) {
    EXPECT_GE(n, 1u) << driver << ": no connect was tried during the outage";
    EXPECT_LE(static_cast<double>(n), connect_bound) << driver;
    std::printf("[figure] database_down.%s.failed_connects_during_outage=%llu in %.1f s (bound %.0f)\n", driver,
                static_cast<unsigned long long>(n), outage_s, connect_bound);
  }
}

}  // namespace
