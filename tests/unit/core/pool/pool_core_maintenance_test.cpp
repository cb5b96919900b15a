// pool_core's upkeep of its connections with a fake clock and a fake driver:
// max_lifetime rotation, idle_timeout, health checks, and broken
// connections leaving and being replaced.
#include "pool_core_harness.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <set>
#include <vector>

namespace {
using namespace pgpipe::test::pool_harness;

TEST(pool_core, lifetime_drains_busy_slot_without_failing_its_work_then_replaces_it) {
  auto p = base_params();
  p.max_lifetime = 10'000ms;
  p.min_size = 1;
  p.max_size = 1;
  harness h(p, 4);
  h.start();
  h.succeed_all_opens();
  const slot_id s = h.opened_ever[0];
  auto a = h.req();
  auto b = h.req();
  ASSERT_EQ(a.slot, s);
  ASSERT_EQ(b.slot, s);
  h.now += 9'749ms;  // before the earliest jittered expiry (2.5% of 10s = 250ms)
  h.tick();
  EXPECT_EQ(h.pool.state_of(s), slot_state::busy);
  h.run_until(h.now + 251ms);
  EXPECT_EQ(h.pool.state_of(s), slot_state::draining);
  EXPECT_TRUE(h.failed.empty());
  EXPECT_TRUE(h.closed.empty()) << "work in flight is not cut";
  EXPECT_EQ(h.pool.load_of(s), 2u);
  // New work does not go to the draining slot; with max_size 1 it waits for
  // the replacement instead of exceeding max_size.
  auto w = h.req();
  ASSERT_EQ(w.what, request_outcome::kind::queued);
  EXPECT_TRUE(h.pending_opens.empty()) << "the draining slot still counts toward max_size";
  h.release(s);
  EXPECT_TRUE(h.closed.empty());
  EXPECT_FALSE(h.granted.contains(w.waiter));
  h.release(s);
  EXPECT_EQ(h.closed, std::vector<slot_id>{s}) << "closed once its load reaches 0";
  EXPECT_FALSE(h.pool.state_of(s).has_value());
  ASSERT_EQ(h.pending_opens.size(), 1u) << "replacement opened at once";
  const slot_id replacement = h.pending_opens[0];
  h.succeed_open(replacement);
  EXPECT_EQ(granted_slot(h, w.waiter), replacement);
}

TEST(pool_core, exclusive_lease_past_lifetime_drains_and_closes_on_release) {
  auto p = base_params();
  p.max_lifetime = 10'000ms;
  harness h(p, 8);
  const slot_id s = h.warm(1)[0];
  auto lease = h.req(exclusive);
  ASSERT_EQ(lease.slot, s);
  h.run_until(h.now + 10'000ms);
  EXPECT_EQ(h.pool.state_of(s), slot_state::draining);
  h.release(s, exclusive);
  EXPECT_EQ(h.closed, std::vector<slot_id>{s});
}

TEST(pool_core, lifetime_closes_idle_slot_and_min_size_replaces_it) {
  auto p = base_params();
  p.max_lifetime = 10'000ms;
  p.min_size = 1;
  harness h(p);
  h.start();
  h.succeed_all_opens();
  const slot_id s = h.opened_ever[0];
  h.run_until(h.now + 10'000ms);
  EXPECT_NE(std::find(h.closed.begin(), h.closed.end(), s), h.closed.end());
  ASSERT_EQ(h.pending_opens.size(), 1u) << "replacement for min_size";
  EXPECT_LE(h.pool.slot_count(), p.max_size);
}

TEST(pool_core, lifetime_jitter_spreads_rotation_of_slots_opened_together) {
  auto p = base_params();
  p.max_lifetime = 100'000ms;
  p.min_size = 4;
  harness h(p);
  h.start();
  h.succeed_all_opens();
  std::set<time_point> expiries;
  // Each idle slot closes at its own jittered expiry; record when.
  while (h.closed.size() < 4) {
    auto t = h.pool.next_timer();
    ASSERT_TRUE(t.has_value());
    const std::size_t before = h.closed.size();
    h.now = *t;
    h.tick();
    if (h.closed.size() > before) expiries.insert(h.now);
    ASSERT_LE(h.now, time_point{std::chrono::seconds(1000)} + 100'000ms);
  }
  EXPECT_GT(expiries.size(), 1u) << "slots opened together must not all rotate in the same instant";
  EXPECT_GE(*expiries.begin(), time_point{std::chrono::seconds(1000)} + 97'500ms);
}

TEST(pool_core, idle_timeout_closes_idle_slots_down_to_min_size) {
  auto p = base_params();
  p.idle_timeout = 5'000ms;
  p.min_size = 1;
  harness h(p);
  const auto ids = h.warm(4);
  ASSERT_EQ(ids.size(), 4u);
  h.run_until(h.now + 4'999ms);
  EXPECT_TRUE(h.closed.empty());
  h.run_until(h.now + 1ms);
  EXPECT_EQ(h.closed.size(), 3u);
  EXPECT_EQ(h.pool.slot_count(), 1u);
  h.run_until(h.now + 60'000ms);
  EXPECT_EQ(h.pool.slot_count(), 1u) << "min_size is kept";
  EXPECT_TRUE(h.pending_opens.empty());
}

TEST(pool_core, idle_timeout_spares_slots_in_use) {
  auto p = base_params();
  p.idle_timeout = 5'000ms;
  harness h(p);
  const auto ids = h.warm(2);
  auto r = h.req();
  h.run_until(h.now + 6'000ms);
  EXPECT_EQ(h.pool.state_of(r.slot), slot_state::busy);
  EXPECT_EQ(h.pool.slot_count(), 1u);
  h.release(r.slot);
  h.run_until(h.now + 5'000ms);
  EXPECT_EQ(h.pool.slot_count(), 0u);
}

TEST(pool_core, idle_slot_gets_a_health_check_and_returns_when_healthy) {
  auto p = base_params();
  p.health_check_interval = 1'000ms;
  harness h(p);
  const slot_id s = h.warm(1)[0];
  h.run_until(h.now + 999ms);
  EXPECT_TRUE(h.pending_checks.empty());
  h.run_until(h.now + 1ms);
  ASSERT_EQ(h.pending_checks, std::vector<slot_id>{s});
  EXPECT_EQ(h.pool.state_of(s), slot_state::checking);
  auto r = h.req();
  EXPECT_NE(r.slot, s) << "a slot under check is not granted";
  EXPECT_EQ(r.what, request_outcome::kind::queued);
  h.check_done(s, true);
  EXPECT_EQ(granted_slot(h, r.waiter), s) << "a healthy slot serves the waiter";
  h.release(s);
  h.run_until(h.now + 999ms);
  EXPECT_TRUE(h.pending_checks.empty()) << "the interval restarts after use";
}

TEST(pool_core, failed_health_check_closes_and_replaces_the_slot) {
  auto p = base_params();
  p.health_check_interval = 1'000ms;
  p.min_size = 1;
  harness h(p);
  h.start();
  h.succeed_all_opens();
  const slot_id s = h.opened_ever[0];
  h.run_until(h.now + 1'000ms);
  ASSERT_EQ(h.pending_checks.size(), 1u);
  h.check_done(s, false);
  EXPECT_EQ(h.closed, std::vector<slot_id>{s});
  ASSERT_EQ(h.pending_opens.size(), 1u);
  EXPECT_NE(h.pending_opens[0], s);
}

TEST(pool_core, slot_past_lifetime_during_its_check_is_closed_when_the_check_answers) {
  auto p = base_params();
  p.health_check_interval = 1'000ms;
  p.max_lifetime = 1'000'000ms;
  harness h(p);
  const slot_id s = h.warm(1)[0];
  h.run_until(h.now + 1'000ms);
  ASSERT_EQ(h.pending_checks, std::vector<slot_id>{s});
  h.now += 1'000'000ms;  // the check takes "for ever"
  h.tick();
  EXPECT_EQ(h.pool.state_of(s), slot_state::checking) << "a check in progress is not cut";
  h.check_done(s, true);
  EXPECT_EQ(h.closed, std::vector<slot_id>{s}) << "healthy but too old: retired";
}

TEST(pool_core, stale_idle_slot_is_checked_before_it_is_handed_out) {
  auto p = base_params();
  p.health_check_interval = 1'000ms;
  p.max_size = 1;
  harness h(p);
  const slot_id s = h.warm(1)[0];
  h.now += 5'000ms;  // the driver's timer has not fired yet
  auto r = h.req();
  EXPECT_EQ(r.what, request_outcome::kind::queued);
  EXPECT_EQ(h.pending_checks, std::vector<slot_id>{s});
  h.check_done(s, true);
  EXPECT_EQ(granted_slot(h, r.waiter), s);
}

TEST(pool_core, broken_slot_leaves_at_once_and_is_replaced_for_waiters) {
  auto p = base_params();
  p.max_size = 1;
  harness h(p, 2);
  const slot_id s = h.warm(1)[0];
  h.req();
  h.req();
  auto w = h.req();
  ASSERT_EQ(w.what, request_outcome::kind::queued);
  h.broken(s);
  EXPECT_EQ(h.closed, std::vector<slot_id>{s});
  EXPECT_FALSE(h.pool.state_of(s).has_value());
  pgpipe::pool_stats st;
  h.pool.fill_stats(st);
  EXPECT_EQ(st.in_flight, 0u) << "the grants on a broken slot are forgotten";
  h.release(s);  // late releases for the dead slot are ignored
  h.release(s);
  ASSERT_EQ(h.pending_opens.size(), 1u);
  h.succeed_all_opens();
  EXPECT_NE(granted_slot(h, w.waiter), 0u);
  EXPECT_NE(granted_slot(h, w.waiter), s);
}

TEST(pool_core, broken_idle_slot_without_demand_is_not_replaced_above_min_size) {
  auto p = base_params();
  harness h(p);
  const slot_id s = h.warm(1)[0];
  h.broken(s);
  EXPECT_TRUE(h.pending_opens.empty());
  EXPECT_EQ(h.pool.slot_count(), 0u);
}

}  // namespace
