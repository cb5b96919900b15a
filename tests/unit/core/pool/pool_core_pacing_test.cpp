// Paced growth (pool_params::growth_connects, growth_interval) with a fake
// clock and a fake driver: while a connection serves, connects beyond
// min_size are bounded in number and spaced in time; startup, recovery and
// the min_size deficit are not paced.
#include "pool_core_harness.hpp"

#include <gtest/gtest.h>

namespace {
using namespace pgpipe::test::pool_harness;

pool_params paced(std::size_t connects, std::chrono::milliseconds interval) {
  auto p = base_params();
  p.max_size = 10;
  p.growth_connects = connects;
  p.growth_interval = interval;
  return p;
}

TEST(pool_core_pacing, growth_on_demand_keeps_at_most_growth_connects_in_flight) {
  harness h(paced(3, 0ms), 100);
  h.warm(1);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(h.req().what, request_outcome::kind::granted);
  EXPECT_EQ(h.pending_opens.size(), 3u) << "busy slot: grows, but growth_connects at a time";
  h.succeed_open(h.pending_opens.front());
  EXPECT_EQ(h.req().what, request_outcome::kind::granted);  // the new idle slot: no growth
  EXPECT_EQ(h.pending_opens.size(), 2u);
  EXPECT_EQ(h.req().what, request_outcome::kind::granted);  // busy again: one more
  EXPECT_EQ(h.pending_opens.size(), 3u);
}

TEST(pool_core_pacing, growth_interval_spaces_growth_connects) {
  harness h(paced(5, 100ms), 100);
  h.warm(1);
  h.req();
  h.req();  // busy slot: first growth connect
  ASSERT_EQ(h.pending_opens.size(), 1u);
  h.req();
  EXPECT_EQ(h.pending_opens.size(), 1u) << "within growth_interval of the last start";
  h.now += 99ms;
  h.req();
  EXPECT_EQ(h.pending_opens.size(), 1u);
  h.now += 1ms;
  h.req();
  EXPECT_EQ(h.pending_opens.size(), 2u) << "growth_interval elapsed";
}

TEST(pool_core_pacing, queued_demand_is_paced_while_a_connection_serves) {
  harness h(paced(2, 0ms), 1);  // capacity 1: every extra caller queues
  h.warm(1);
  EXPECT_EQ(h.req().what, request_outcome::kind::granted);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(h.req().what, request_outcome::kind::queued);
  EXPECT_EQ(h.pending_opens.size(), 2u) << "6 callers want 6 connects; growth_connects = 2";
  h.succeed_open(h.pending_opens.front());
  EXPECT_EQ(h.granted.size(), 1u);
  EXPECT_EQ(h.pending_opens.size(), 2u) << "an answer frees a place for the next paced connect";
  // The pace is full: the next answer moves it, not a timer (the only timer
  // left is the waiters' deadline).
  EXPECT_EQ(h.pool.next_timer(), h.now + 1000ms);
}

TEST(pool_core_pacing, queued_demand_held_back_by_the_interval_starts_from_the_timer) {
  harness h(paced(10, 100ms), 1);
  h.warm(1);
  h.req();
  for (int i = 0; i < 3; ++i) h.req();  // 3 queued callers
  ASSERT_EQ(h.pending_opens.size(), 1u);
  const time_point first = h.now;
  ASSERT_TRUE(h.pool.next_timer().has_value());
  EXPECT_EQ(*h.pool.next_timer(), first + 100ms);
  h.run_until(first + 250ms);
  EXPECT_EQ(h.pending_opens.size(), 3u) << "one more at +100 ms and +200 ms";
  h.run_until(first + 1000ms);
  EXPECT_EQ(h.pending_opens.size(), 3u) << "demand met: no further connect";
}

TEST(pool_core_pacing, startup_opens_min_size_at_once) {
  auto p = paced(1, 1000ms);
  p.min_size = 8;
  harness h(p, 4);
  h.start();
  EXPECT_EQ(h.pending_opens.size(), 8u);
}

TEST(pool_core_pacing, min_size_deficit_is_not_paced_while_serving) {
  auto p = paced(1, 1000ms);
  p.min_size = 4;
  harness h(p, 4);
  h.start();
  h.succeed_all_opens();
  h.req();
  // Two connections die while the other two serve: both come back at once.
  std::vector<slot_id> ids(h.opened_ever.begin(), h.opened_ever.end());
  h.broken(ids[0]);
  h.broken(ids[1]);
  EXPECT_EQ(h.pending_opens.size(), 2u);
}

TEST(pool_core_pacing, nothing_usable_means_no_pacing) {
  // Recovery: every connection broke while callers wait (no connect failed,
  // so no back-off): all the connects they need start at once.
  harness h(paced(1, 1000ms), 1);
  const auto ids = h.warm(2);
  h.req();
  h.req();
  for (int i = 0; i < 4; ++i) h.req();  // queued
  h.broken(ids[0]);
  h.broken(ids[1]);
  EXPECT_EQ(h.pending_opens.size(), 4u) << "nothing serves: the 4 waiting callers each get a connect";
}

TEST(pool_core_pacing, first_success_after_an_outage_opens_the_demand_at_once) {
  // After an outage the single back-off probe comes first; once it succeeds
  // the callers who waited through the outage get their connects at once.
  harness h(paced(1, 1000ms), 1);
  for (int i = 0; i < 5; ++i) h.req(shared, 10'000ms);
  ASSERT_EQ(h.pending_opens.size(), 5u) << "startup: unpaced";
  for (int i = 0; i < 5; ++i) h.fail_open(h.pending_opens.front(), make_error_code(errc::server_unreachable));
  h.run_until(h.now + 60ms);
  ASSERT_EQ(h.pending_opens.size(), 1u) << "back-off: one probe";
  h.succeed_open(h.pending_opens.front());
  EXPECT_EQ(h.granted.size(), 1u);
  EXPECT_EQ(h.pending_opens.size(), 4u) << "4 callers still wait: recovery is not paced";
  // Once recovered, a further connect is paced again.
  h.succeed_open(h.pending_opens.front());
  h.req();
  h.req();
  EXPECT_EQ(h.pending_opens.size(), 3u) << "3 in flight >= growth_connects: no growth";
}

}  // namespace
