// Failover through both drivers' read routers, end to end: a router over the
// primary (its pool's conninfo lists the primary and the standby with
// target_session_attrs=read-write) and the standby as its replica. Readers
// (marked read-only) and a writer run throughout while the primary is
// killed and the standby promoted. Every request completes once, with a
// result or a clear error, within its bound; reads keep being served (by the
// standby; a read lost with the crashed primary runs again there; once the
// standby is promoted it leaves the replica set and reads reach it as the new
// primary, through the router's read-only pool); writes fail clearly while no
// primary exists and resume on their own. The read errors and the
// write gap are printed and recorded as test properties (docs/scaling.md).
#include "support/cluster_fixture.hpp"
#include "support/failover_errors.hpp"
#include "support/kit.hpp"
#include "support/router_adapter.hpp"
#include "support/standby.hpp"
#include "support/wait.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using pgpipe::test::outcome;
using steady = std::chrono::steady_clock;

template <class Router>
class scaleout_failover_routing : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    unsetenv("PGPASSWORD");
    setenv("PGPASSFILE", "/nonexistent/pgpipe-test-pgpass", 1);
  }
};
TYPED_TEST_SUITE(scaleout_failover_routing, pgpipe::test::routers, pgpipe::test::router_names);

// Asked by every read: where it ran, and whether that server was in recovery.
constexpr const char* where_sql = "select case when pg_is_in_recovery() then 'standby' else 'primary' end";

TYPED_TEST(scaleout_failover_routing, reads_are_served_throughout_and_writes_resume_after_promotion) {
  PGPIPE_SKIP_WITHOUT_STANDBY();
  auto primary = pgpipe::test::fresh_cluster();
  primary->exec("create table failover_routed (v int primary key)");
  pgpipe::test::standby_instance standby(*primary);
  standby.wait_for_streaming();
  const std::string conninfo = "host=127.0.0.1,127.0.0.1 port=" + std::to_string(primary->port()) + "," +
                               std::to_string(standby.port()) + " target_session_attrs=read-write user=" +
                               primary->user() + " password=" + primary->password() + " dbname=postgres";
  auto p = pgpipe::test::fault_params(conninfo, 4);
  p.acquire_timeout = 3s;
  p.query_timeout = 5s;
  p.connect_timeout = 2s;
  p.connect_backoff_max = 200ms;
  auto r = pgpipe::test::fault_params(standby.conninfo(), 4);
  r.acquire_timeout = 2s;
  r.query_timeout = 5s;
  r.connect_timeout = 1s;
  r.connect_backoff_max = 100ms;
  pgpipe::read_routing_params rp;
  rp.probe_interval = 100ms;
  rp.probe_timeout = 1s;
  // A bound, so the rule "a dead primary does not keep reads off a replica"
  // is exercised too: without it the lag is never looked at.
  rp.max_lag = 5s;
  rp.replica_names = {"standby"};
  TypeParam router(p, r, rp);

  struct event {
    int v;  // the value written; 0 for a read
    steady::time_point start, end;
    outcome o;
  };
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable progressed;
  std::vector<event> writes, reads;
  std::thread writer([&] {
    for (int v = 1; !stop.load(); ++v) {
      const auto start = steady::now();
      outcome o = router.write("insert into failover_routed values (" + std::to_string(v) + ")");
      std::lock_guard lk(mu);
      writes.push_back({v, start, steady::now(), std::move(o)});
      progressed.notify_all();
    }
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        const auto start = steady::now();
        outcome o = router.read(where_sql);
        std::lock_guard lk(mu);
        reads.push_back({0, start, steady::now(), std::move(o)});
        progressed.notify_all();
      }
    });
  }
  auto ok_after = [](const std::vector<event>& v, steady::time_point t) {
    return std::count_if(v.begin(), v.end(), [&](const event& e) { return !e.o.ec && e.start >= t; });
  };
  // Every request's completion wakes the waiter; each request is bounded.
  auto wait_for = [&](auto pred, std::chrono::seconds limit) {
    std::unique_lock lk(mu);
    return progressed.wait_for(lk, limit, pred);
  };
  const bool warmed = wait_for(
      [&] {
        return ok_after(writes, {}) >= 5 &&
               std::count_if(reads.begin(), reads.end(), [](const event& e) { return e.o.first == "standby"; }) >= 20;
      },
      30s);
  if (!warmed) {
    stop.store(true);
    writer.join();
    for (auto& t : readers) t.join();
    FAIL() << "no writes on the primary or no reads on the standby before the failover";
  }
  primary->stop(pgpipe::devcluster::stop_mode::immediate);
  // From here no request can reach the old primary.
  const auto stopped_at = steady::now();
  standby.cluster().promote();
  const auto promoted_at = steady::now();
  const bool resumed = wait_for(
      [&] {
        return ok_after(writes, stopped_at) >= 20 &&
               std::count_if(reads.begin(), reads.end(),
                             [&](const event& e) { return e.start >= stopped_at && e.o.first == "primary"; }) >= 20;
      },
      60s);
  stop.store(true);
  writer.join();
  for (auto& t : readers) t.join();
  const auto stats = router.stats();
  ASSERT_TRUE(resumed) << "writes did not resume, or reads did not reach the promoted standby";

  // Writes: only the errors of a missing primary, every success after the
  // crash stored on the new primary, and the gap as callers saw it (last
  // write done before the crash, first done after).
  std::set<std::string> stored;
  for (const auto& row : standby.cluster().query("select v::text from failover_routed")) stored.insert(row[0]);
  steady::time_point last_before{}, first_after = steady::time_point::max();
  int write_errors = 0;
  std::vector<std::string> bad;
  for (const auto& e : writes) {
    if (e.o.ec) {
      ++write_errors;
      if (!pgpipe::test::acceptable_failover_write_error(e.o.ec)) bad.push_back("write: " + e.o.text);
      // What callers saw, and when: the figures docs/scaling.md explains.
      std::printf("[ %s ] write error %+lld..%+lld ms from the crash: %s\n", TypeParam::name,
                  static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(e.start - stopped_at).count()),
                  static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(e.end - stopped_at).count()),
                  e.o.ec.message().c_str());
      continue;
    }
    if (e.end <= stopped_at) last_before = std::max(last_before, e.end);
    if (e.end > stopped_at) first_after = std::min(first_after, e.end);
    if (e.start >= stopped_at) {
      EXPECT_TRUE(stored.count(std::to_string(e.v))) << e.v;
    }
  }
  // Reads: served throughout. Each ends in time with an answer from the
  // standby or the promoted standby; none is left waiting on the dead
  // primary, since the replica stays healthy (the lag bound does not apply
  // while the primary is gone).
  int read_errors = 0, reads_in_gap = 0;
  for (const auto& e : reads) {
    if (e.o.ec) {
      ++read_errors;
      bad.push_back("read: " + e.o.text);
      std::printf("[ %s ] read error %+lld..%+lld ms from the crash: %s\n", TypeParam::name,
                  static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(e.start - stopped_at).count()),
                  static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(e.end - stopped_at).count()),
                  e.o.text.c_str());
      continue;
    }
    if (e.o.first != "standby" && e.o.first != "primary") bad.push_back("read answered " + e.o.first);
    reads_in_gap += e.start >= stopped_at && e.end <= first_after;
  }
  const auto gap = std::chrono::duration_cast<std::chrono::milliseconds>(first_after - last_before);
  std::printf(
      "[ %s ] through the router: write gap %lld ms, %d write errors of %zu; %d read errors of %zu reads, %d reads "
      "served inside the write gap; reads to replica %llu, to primary %llu, re-run on primary %llu, re-run on "
      "replica %llu; primary probes failed %llu; promote() returned %lld ms after the crash\n",
      TypeParam::name, static_cast<long long>(gap.count()), write_errors, writes.size(), read_errors, reads.size(),
      reads_in_gap, static_cast<unsigned long long>(stats.reads_to_replica),
      static_cast<unsigned long long>(stats.reads_to_primary_no_replica + stats.reads_to_primary_lag),
      static_cast<unsigned long long>(stats.reads_retried_on_primary),
      static_cast<unsigned long long>(stats.reads_retried_on_replica),
      static_cast<unsigned long long>(stats.primary_probes_failed),
      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(promoted_at - stopped_at).count()));
  ::testing::Test::RecordProperty("write_gap_ms", std::to_string(gap.count()));
  ::testing::Test::RecordProperty("write_errors", std::to_string(write_errors));
  ::testing::Test::RecordProperty("read_errors", std::to_string(read_errors));
  ::testing::Test::RecordProperty("reads_in_write_gap", std::to_string(reads_in_gap));
  EXPECT_TRUE(bad.empty()) << bad.size() << " unexpected outcomes, first: " << bad.front();
  EXPECT_EQ(read_errors, 0);
  EXPECT_GT(reads_in_gap, 0) << "no read was served while no primary existed";
  // The router sees its replica promoted (a probe after the promotion says
  // it left recovery): lag 0, still answering probes, out of the replica set.
  EXPECT_TRUE(pgpipe::test::wait_until(
      [&] {
        const auto now = router.stats();
        return !now.replicas[0].in_recovery && now.replicas[0].healthy && now.replicas[0].lag == 0ms;
      },
      30s))
      << "the router did not see its replica promoted";
}

}  // namespace
