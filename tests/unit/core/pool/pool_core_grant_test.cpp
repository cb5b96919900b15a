// pool_core's grants with a fake clock and a fake driver: the least-loaded
// slot, exclusive leases and the reservation that keeps shared work from
// starving them, releases, and the growth a request sets off.
#include "pool_core_harness.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

namespace {
using namespace pgpipe::test::pool_harness;

TEST(pool_core, grants_at_once_when_an_idle_slot_exists) {
  harness h(base_params());
  h.req();
  ASSERT_EQ(h.pending_opens.size(), 1u);
  h.succeed_all_opens();
  ASSERT_EQ(h.granted.size(), 1u);
  const slot_id s = h.granted.begin()->second;
  h.release(s);
  EXPECT_EQ(h.pool.state_of(s), slot_state::idle);
  auto r = h.req();
  EXPECT_EQ(r.what, request_outcome::kind::granted);
  EXPECT_EQ(r.slot, s);
  EXPECT_EQ(h.pool.load_of(s), 1u);
}

TEST(pool_core, shared_request_goes_to_the_least_loaded_slot) {
  auto p = base_params();
  p.max_size = 2;  // no growth beyond the two slots under test
  harness h(p, 4);
  const auto ids = h.warm(2);
  ASSERT_EQ(ids.size(), 2u);
  // Load slot A with 3 and slot B with 1.
  std::vector<request_outcome> held;
  for (int i = 0; i < 4; ++i) held.push_back(h.req());
  // Two idle slots: the first two requests take one each (idle first).
  EXPECT_NE(held[0].slot, held[1].slot);
  EXPECT_EQ(h.pool.load_of(ids[0]), 2u);
  EXPECT_EQ(h.pool.load_of(ids[1]), 2u);
  h.release(ids[1]);
  auto r = h.req();
  ASSERT_EQ(r.what, request_outcome::kind::granted);
  EXPECT_EQ(r.slot, ids[1]) << "slot with load 1 must win over slot with load 2";
  h.release(ids[0]);
  h.release(ids[0]);
  r = h.req();
  EXPECT_EQ(r.slot, ids[0]) << "slot with load 0 must win over slot with load 2";
}

TEST(pool_core, idle_slot_preferred_over_busy_one_with_room) {
  auto p = base_params();
  p.max_size = 2;
  harness h(p, 8);
  const auto ids = h.warm(2);
  auto a = h.req();
  auto b = h.req();
  EXPECT_NE(a.slot, b.slot) << "second request must take the idle slot, not pile on the busy one";
}

TEST(pool_core, pipelined_slot_carries_capacity_then_queues) {
  auto p = base_params();
  p.max_size = 1;
  harness h(p, 3);
  const auto ids = h.warm(1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(h.req().what, request_outcome::kind::granted);
  EXPECT_EQ(h.pool.load_of(ids[0]), 3u);
  auto q = h.req();
  ASSERT_EQ(q.what, request_outcome::kind::queued);
  h.release(ids[0]);
  EXPECT_EQ(granted_slot(h, q.waiter), ids[0]);
  EXPECT_EQ(h.pool.load_of(ids[0]), 3u);
}

TEST(pool_core, grows_toward_max_size_when_no_slot_is_idle) {
  auto p = base_params();
  p.max_size = 3;
  harness h(p, 4);
  h.warm(1);
  EXPECT_EQ(h.req().what, request_outcome::kind::granted);  // takes the idle slot
  EXPECT_TRUE(h.pending_opens.empty()) << "an idle slot served it: no growth";
  EXPECT_EQ(h.req().what, request_outcome::kind::granted);  // busy slot with room
  EXPECT_EQ(h.pending_opens.size(), 1u) << "no idle slot: the pool grows (HikariCP-like)";
  EXPECT_EQ(h.req().what, request_outcome::kind::granted);
  EXPECT_EQ(h.pending_opens.size(), 1u) << "one growth connect in flight at a time";
  h.succeed_all_opens();
  EXPECT_EQ(h.req().what, request_outcome::kind::granted);  // the new idle slot
  EXPECT_TRUE(h.pending_opens.empty());
  EXPECT_EQ(h.req().what, request_outcome::kind::granted);
  EXPECT_EQ(h.pending_opens.size(), 1u);
  h.succeed_all_opens();
  EXPECT_EQ(h.pool.slot_count(), 3u);
  for (int i = 0; i < 8; ++i) h.req();
  EXPECT_EQ(h.pool.slot_count(), 3u) << "never beyond max_size";
  EXPECT_TRUE(h.pending_opens.empty());
}

TEST(pool_core, exclusive_request_needs_a_slot_with_zero_load) {
  auto p = base_params();
  p.max_size = 1;
  harness h(p, 4);
  const auto ids = h.warm(1);
  auto s1 = h.req();
  ASSERT_EQ(s1.what, request_outcome::kind::granted);
  auto e = h.req(exclusive);
  ASSERT_EQ(e.what, request_outcome::kind::queued) << "a lease cannot share a busy pipelined slot";
  h.release(ids[0]);
  EXPECT_EQ(granted_slot(h, e.waiter), ids[0]);
  EXPECT_EQ(h.pool.load_of(ids[0]), 4u) << "an exclusive grant takes the whole slot";
  auto s2 = h.req();
  EXPECT_EQ(s2.what, request_outcome::kind::queued) << "nothing shares a leased slot";
  h.release(ids[0], exclusive);
  EXPECT_EQ(granted_slot(h, s2.waiter), ids[0]);
  EXPECT_EQ(h.pool.load_of(ids[0]), 1u);
}

TEST(pool_core, exclusive_waiter_reserves_a_slot_so_shared_load_cannot_starve_it) {
  auto p = base_params();
  p.max_size = 1;
  harness h(p, 2);
  const slot_id s = h.warm(1)[0];
  ASSERT_EQ(h.req().what, request_outcome::kind::granted);  // load 1
  auto e = h.req(exclusive);
  ASSERT_EQ(e.what, request_outcome::kind::queued);
  // Without the reservation this would be granted (load 1 < 2) and, repeated,
  // would keep the slot busy for ever.
  auto later = h.req();
  EXPECT_EQ(later.what, request_outcome::kind::queued);
  EXPECT_EQ(h.pool.load_of(s), 1u);
  h.release(s);
  EXPECT_EQ(granted_slot(h, e.waiter), s) << "the lease gets the slot once its load drains";
  EXPECT_FALSE(h.granted.contains(later.waiter));
  h.release(s, exclusive);
  EXPECT_EQ(granted_slot(h, later.waiter), s);
}

TEST(pool_core, reservation_holds_a_full_slot_as_its_units_free_up) {
  auto p = base_params();
  p.max_size = 1;
  harness h(p, 2);
  const slot_id s = h.warm(1)[0];
  h.req();
  h.req();  // full: load 2 of 2
  auto e = h.req(exclusive);
  auto sh = h.req();
  ASSERT_EQ(e.what, request_outcome::kind::queued);
  ASSERT_EQ(sh.what, request_outcome::kind::queued);
  h.release(s);
  EXPECT_FALSE(h.granted.contains(sh.waiter)) << "the freed unit stays with the lease's reservation";
  EXPECT_EQ(h.pool.load_of(s), 1u);
  h.release(s);
  EXPECT_EQ(granted_slot(h, e.waiter), s);
  h.release(s, exclusive);
  EXPECT_EQ(granted_slot(h, sh.waiter), s);
}

TEST(pool_core, reserved_slot_past_lifetime_hands_the_reservation_to_another_slot) {
  auto p = base_params();
  p.max_size = 2;
  p.max_lifetime = 100'000ms;
  harness h(p, 2);
  const auto ids = h.warm(2);
  h.now += 50'000ms;
  h.tick();
  ASSERT_EQ(h.req().slot, ids[0]);
  ASSERT_EQ(h.req().slot, ids[1]);
  auto e = h.req(exclusive, 200'000ms);
  ASSERT_EQ(e.what, request_outcome::kind::queued);
  h.now += 50'000ms;  // both slots past lifetime: both drain, nothing new is granted on them
  h.tick();
  EXPECT_EQ(h.pool.state_of(ids[0]), slot_state::draining);
  EXPECT_EQ(h.pool.state_of(ids[1]), slot_state::draining);
  h.release(ids[0]);
  EXPECT_FALSE(h.granted.contains(e.waiter)) << "a drained slot is closed, not leased";
  ASSERT_EQ(h.pending_opens.size(), 1u) << "its replacement is opened for the lease";
  h.succeed_all_opens();
  EXPECT_EQ(granted_slot(h, e.waiter), h.opened_ever.back());
}

TEST(pool_core, consecutive_leases_are_served_in_order_with_shared_work_in_between) {
  auto p = base_params();
  p.max_size = 1;
  harness h(p, 4);
  const slot_id s = h.warm(1)[0];
  h.req();
  auto e1 = h.req(exclusive);
  auto e2 = h.req(exclusive);
  auto sh = h.req();
  h.release(s);
  ASSERT_EQ(h.grant_order, (std::vector<waiter_id>{e1.waiter}));
  h.release(s, exclusive);
  ASSERT_EQ(h.grant_order, (std::vector<waiter_id>{e1.waiter, e2.waiter})) << "e2 is older than sh";
  h.release(s, exclusive);
  EXPECT_EQ(h.grant_order, (std::vector<waiter_id>{e1.waiter, e2.waiter, sh.waiter}));
}

TEST(pool_core, shared_waiters_behind_an_exclusive_one_use_other_busy_slots) {
  auto p = base_params();
  p.max_size = 2;
  harness h(p, 2);
  const auto ids = h.warm(2);
  ASSERT_EQ(h.req().slot, ids[0]);
  ASSERT_EQ(h.req().slot, ids[1]);
  auto e = h.req(exclusive);
  ASSERT_EQ(e.what, request_outcome::kind::queued);
  // One slot is reserved for the lease; the other still takes shared work.
  auto s = h.req();
  EXPECT_EQ(s.what, request_outcome::kind::granted);
  const slot_id other = s.slot;
  const slot_id reserved = other == ids[0] ? ids[1] : ids[0];
  EXPECT_EQ(h.pool.load_of(reserved), 1u);
  h.release(reserved);
  EXPECT_EQ(granted_slot(h, e.waiter), reserved);
}

TEST(pool_core, cancelled_exclusive_waiter_frees_its_reservation) {
  auto p = base_params();
  p.max_size = 1;
  harness h(p, 2);
  const slot_id s = h.warm(1)[0];
  h.req();
  auto e = h.req(exclusive);
  auto sh = h.req();
  ASSERT_EQ(sh.what, request_outcome::kind::queued);
  EXPECT_TRUE(h.pool.cancel(e.waiter));
  EXPECT_FALSE(h.pool.cancel(e.waiter)) << "second cancel: no longer queued";
  h.pump();
  EXPECT_FALSE(h.granted.contains(e.waiter));
  EXPECT_FALSE(h.failed.contains(e.waiter));
  auto more = h.req();
  // The shared waiter is older than this request and both fit: FIFO.
  h.release(s);
  EXPECT_EQ(granted_slot(h, sh.waiter), s);
  EXPECT_TRUE(more.what == request_outcome::kind::granted || h.granted.contains(more.waiter));
  EXPECT_FALSE(h.granted.contains(e.waiter));
}

TEST(pool_core, cancel_of_a_granted_waiter_returns_false) {
  auto p = base_params();
  p.max_size = 1;
  harness h(p);
  const slot_id s = h.warm(1)[0];
  h.req();
  auto w = h.req();
  h.release(s);
  ASSERT_EQ(granted_slot(h, w.waiter), s);
  EXPECT_FALSE(h.pool.cancel(w.waiter)) << "driver must release the grant it already received";
}

TEST(pool_core, release_with_the_wrong_kind_still_frees_the_slot) {
  auto p = base_params();
  p.max_size = 1;
  harness h(p, 4);
  const slot_id s = h.warm(1)[0];
  h.req(exclusive);
  h.release(s, shared);  // driver bug; the slot must not stay busy for ever
  EXPECT_EQ(h.pool.load_of(s), 0u);
  EXPECT_EQ(h.pool.state_of(s), slot_state::idle);
}

TEST(pool_core, release_of_unknown_slot_is_ignored) {
  harness h(base_params());
  const slot_id s = h.warm(1)[0];
  h.release(s + 1000);
  h.release(s);  // not granted: no outstanding grant to release
  EXPECT_EQ(h.pool.state_of(s), slot_state::idle);
  EXPECT_EQ(h.pool.load_of(s), 0u);
}

TEST(pool_core, min_size_opened_at_start_and_kept) {
  auto p = base_params();
  p.min_size = 3;
  harness h(p);
  h.start();
  EXPECT_EQ(h.pending_opens.size(), 3u);
  h.succeed_all_opens();
  h.broken(h.opened_ever[1]);
  EXPECT_EQ(h.pending_opens.size(), 1u);
}

}  // namespace
