// pool_core's queue with a fake clock and a fake driver: FIFO order,
// deadlines, queue_full, and requests that cannot wait.
#include "pool_core_harness.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <vector>

namespace {
using namespace pgpipe::test::pool_harness;

TEST(pool_core, waiters_are_served_in_fifo_order) {
  auto p = base_params();
  p.max_size = 1;
  harness h(p);
  const slot_id s = h.warm(1)[0];
  h.req();
  std::vector<waiter_id> ws;
  for (int i = 0; i < 5; ++i) {
    auto r = h.req(i % 2 ? exclusive : shared);
    ASSERT_EQ(r.what, request_outcome::kind::queued);
    ws.push_back(r.waiter);
  }
  for (int i = 0; i < 5; ++i) h.release(s, i == 0 || i % 2 == 1 ? shared : exclusive);
  EXPECT_EQ(h.grant_order, ws);
}

TEST(pool_core, waiters_expire_in_deadline_order_with_pool_timeout) {
  auto p = base_params();
  p.max_size = 1;
  harness h(p);
  h.warm(1);
  h.req();
  auto w300 = h.req(shared, 300ms);
  auto w100 = h.req(shared, 100ms);
  auto w200 = h.req(exclusive, 200ms);
  ASSERT_EQ(h.pool.next_timer(), h.now + 100ms);
  h.advance(99ms);
  EXPECT_TRUE(h.failed.empty()) << "nothing expires before its deadline";
  h.run_until(h.now + 1000ms);
  ASSERT_EQ(h.fail_order, (std::vector<waiter_id>{w100.waiter, w200.waiter, w300.waiter}));
  for (auto& [w, ec] : h.failed) EXPECT_EQ(ec, errc::pool_timeout) << "a usable slot exists: pool exhausted";
  pgpipe::pool_stats st;
  h.pool.fill_stats(st);
  EXPECT_EQ(st.errors.pool_timeout, 3u);
  EXPECT_EQ(st.queued, 0u);
}

TEST(pool_core, expired_waiters_do_not_block_later_ones) {
  auto p = base_params();
  p.max_size = 1;
  harness h(p);
  const slot_id s = h.warm(1)[0];
  h.req();
  auto a = h.req(shared, 100ms);
  auto b = h.req(shared, 5000ms);
  h.advance(150ms);
  ASSERT_TRUE(h.failed.contains(a.waiter));
  h.release(s);
  EXPECT_EQ(granted_slot(h, b.waiter), s);
}

TEST(pool_core, queue_full_rejects_at_once) {
  auto p = base_params();
  p.max_size = 1;
  p.max_queued = 2;
  harness h(p);
  h.warm(1);
  h.req();
  EXPECT_EQ(h.req().what, request_outcome::kind::queued);
  EXPECT_EQ(h.req().what, request_outcome::kind::queued);
  auto r = h.req();
  EXPECT_EQ(r.what, request_outcome::kind::rejected);
  EXPECT_EQ(r.ec, errc::queue_full);
  pgpipe::pool_stats st;
  h.pool.fill_stats(st);
  EXPECT_EQ(st.errors.queue_full, 1u);
  EXPECT_EQ(st.queued, 2u);
}

TEST(pool_core, max_queued_zero_never_waits) {
  auto p = base_params();
  p.max_size = 1;
  p.max_queued = 0;
  p.min_size = 1;
  harness h(p);
  h.start();
  h.succeed_all_opens();
  EXPECT_EQ(h.req().what, request_outcome::kind::granted);
  EXPECT_EQ(h.req().ec, errc::queue_full);
}

TEST(pool_core, fifo_survives_many_cancellations) {
  auto p = base_params();
  p.max_size = 1;
  p.max_queued = 5000;
  harness h(p);
  const slot_id s = h.warm(1)[0];
  h.req();
  std::vector<waiter_id> kept;
  for (int i = 0; i < 3000; ++i) {
    auto r = h.req(i % 3 == 0 ? exclusive : shared, 60'000ms);
    ASSERT_EQ(r.what, request_outcome::kind::queued);
    if (i % 4 == 0) {
      kept.push_back(r.waiter);
    } else {
      ASSERT_TRUE(h.pool.cancel(r.waiter));
    }
  }
  pgpipe::pool_stats st;
  h.pool.fill_stats(st);
  EXPECT_EQ(st.queued, kept.size());
  // Capacity 1: a shared and an exclusive grant are both one unit.
  for (std::size_t i = 0; i < kept.size(); ++i) h.release(s);
  EXPECT_EQ(h.grant_order, kept);
}

TEST(pool_core, request_with_past_deadline_is_answered_at_once) {
  auto p = base_params();
  p.max_size = 2;
  harness h(p);
  auto r = h.req(shared, 0ms);
  EXPECT_EQ(r.what, request_outcome::kind::rejected);
  EXPECT_EQ(r.ec, errc::pool_timeout);
  EXPECT_EQ(h.pending_opens.size(), 1u) << "a try still grows the pool";
  h.succeed_all_opens();
  EXPECT_EQ(h.req(shared, 0ms).what, request_outcome::kind::granted);
}

}  // namespace
