// pool_core's close with a fake clock and a fake driver: waiters fail, new
// requests are rejected, and every slot in flight (busy, checking,
// connecting) is closed once it answers, so the pool drains.
#include "pool_core_harness.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace {
using namespace pgpipe::test::pool_harness;

TEST(pool_core, close_fails_waiters_rejects_new_requests_and_drains_busy_slots) {
  auto p = base_params();
  p.max_size = 2;
  harness h(p);
  const auto ids = h.warm(2);
  auto busy = h.req();
  auto w = h.req();  // takes the other idle slot
  auto q = h.req();
  ASSERT_EQ(q.what, request_outcome::kind::queued);
  h.release(w.slot);  // one idle, one busy
  ASSERT_TRUE(h.granted.contains(q.waiter));
  const slot_id idle_after = q.slot == 0 ? granted_slot(h, q.waiter) : q.slot;
  auto q2 = h.req();
  ASSERT_EQ(q2.what, request_outcome::kind::queued);
  h.release(idle_after);
  // q2 took it; queue another one to be failed by close.
  auto q3 = h.req();
  ASSERT_EQ(q3.what, request_outcome::kind::queued);
  h.pool.close(h.now);
  h.pump();
  EXPECT_TRUE(h.pool.is_closed());
  EXPECT_EQ(h.failed[q3.waiter], errc::closed);
  EXPECT_EQ(h.req().ec, errc::closed);
  EXPECT_FALSE(h.pool.is_drained()) << "work in flight completes";
  EXPECT_EQ(h.pool.state_of(busy.slot), slot_state::draining);
  EXPECT_TRUE(h.closed.empty()) << "no busy connection closed under its work";
  h.release(busy.slot);
  h.release(idle_after);
  EXPECT_TRUE(h.pool.is_drained());
  EXPECT_EQ(h.closed.size(), 2u);
  EXPECT_FALSE(h.pool.next_timer().has_value());
}

TEST(pool_core, close_closes_idle_slots_at_once_and_answers_late_connects) {
  auto p = base_params();
  harness h(p);
  h.warm(1);
  h.req();
  h.req();  // grows: a connect in flight
  ASSERT_EQ(h.pending_opens.size(), 1u);
  const slot_id connecting = h.pending_opens[0];
  auto granted = h.granted;
  h.pool.close(h.now);
  h.pump();
  EXPECT_FALSE(h.pool.is_drained());
  h.succeed_open(connecting);
  EXPECT_NE(std::find(h.closed.begin(), h.closed.end(), connecting), h.closed.end())
      << "a connect that completes after close() is closed at once";
}

TEST(pool_core, close_during_a_check_closes_the_slot_when_it_answers) {
  auto p = base_params();
  p.health_check_interval = 1'000ms;
  harness h(p);
  const slot_id s = h.warm(1)[0];
  h.run_until(h.now + 1'000ms);
  ASSERT_EQ(h.pending_checks.size(), 1u);
  h.pool.close(h.now);
  h.pump();
  EXPECT_FALSE(h.pool.is_drained());
  h.check_done(s, true);
  EXPECT_EQ(h.closed, std::vector<slot_id>{s});
  EXPECT_TRUE(h.pool.is_drained());
}

TEST(pool_core, failed_connect_after_close_completes_the_drain) {
  harness h(base_params());
  h.req();
  ASSERT_EQ(h.pending_opens.size(), 1u);
  h.pool.close(h.now);
  h.pump();
  EXPECT_FALSE(h.pool.is_drained());
  h.fail_open(h.pending_opens[0], errc::server_unreachable);
  EXPECT_TRUE(h.pool.is_drained());
  EXPECT_TRUE(h.pending_opens.empty()) << "no retry after close";
  h.run_until(h.now + 10'000ms);
  EXPECT_TRUE(h.pending_opens.empty());
}

}  // namespace
