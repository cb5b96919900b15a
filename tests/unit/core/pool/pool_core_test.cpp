// pool_core policy tests with a fake clock and a fake connection driver: no
// sockets, no threads, no sleeping. Time moves only when a test advances it.
#include "pool_core_harness.hpp"

#include "core/pool/pool_core.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <set>
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


// ---- helpers --------------------------------------------------------------

slot_id granted_slot(const harness& h, waiter_id w) {
  auto it = h.granted.find(w);
  return it == h.granted.end() ? 0 : it->second;
}

// ---- granting ---------------------------------------------------------------

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

// ---- waiters: FIFO, deadlines, queue_full, closed ---------------------------

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

// ---- connect failures -------------------------------------------------------

TEST(pool_core, backoff_doubles_up_to_the_cap_and_resets_on_success) {
  auto p = base_params();
  p.min_size = 1;
  harness h(p);
  h.start();
  ASSERT_EQ(h.pending_opens.size(), 1u);
  EXPECT_EQ(h.pool.current_backoff(), 0ms);
  const std::vector<std::chrono::milliseconds> expected{50ms, 100ms, 200ms, 400ms, 400ms, 400ms};
  for (auto b : expected) {
    ASSERT_EQ(h.pending_opens.size(), 1u);
    h.fail_open(h.pending_opens[0], errc::server_unreachable);
    EXPECT_EQ(h.pool.current_backoff(), b);
    ASSERT_EQ(h.pool.next_timer(), h.now + b) << "retry driven by the timer";
    h.advance(b - 1ms);
    EXPECT_TRUE(h.pending_opens.empty()) << "no retry before the back-off elapsed";
    h.advance(1ms);
    ASSERT_EQ(h.pending_opens.size(), 1u) << "retry once it elapsed";
  }
  h.succeed_open(h.pending_opens[0]);
  EXPECT_EQ(h.pool.current_backoff(), 0ms);
  // A new outage starts again from the initial back-off.
  const slot_id last = h.opened_ever.back();
  h.broken(last);
  ASSERT_EQ(h.pending_opens.size(), 1u) << "min_size replacement";
  h.fail_open(h.pending_opens[0], errc::server_unreachable);
  EXPECT_EQ(h.pool.current_backoff(), 50ms);
}

TEST(pool_core, only_one_connect_in_flight_while_connects_fail) {
  auto p = base_params();
  p.max_size = 8;
  harness h(p);
  for (int i = 0; i < 20; ++i) h.req(shared, 60'000ms);
  const auto first_wave = h.pending_opens;
  EXPECT_EQ(first_wave.size(), 8u) << "demand opens up to max_size at once";
  for (slot_id s : first_wave) h.fail_open(s, errc::server_unreachable);
  std::size_t attempts = 0;
  for (int step = 0; step < 200; ++step) {
    h.advance(37ms);
    ASSERT_LE(h.pending_opens.size(), 1u) << "connection storm against a down server";
    if (!h.pending_opens.empty()) {
      ++attempts;
      h.fail_open(h.pending_opens[0], errc::server_unreachable);
    }
  }
  EXPECT_GT(attempts, 5u) << "retries keep happening";
  // Recovery: the probe succeeds, then the pool ramps up to serve the demand.
  h.advance(500ms);
  ASSERT_EQ(h.pending_opens.size(), 1u);
  h.succeed_open(h.pending_opens[0]);
  EXPECT_GT(h.pending_opens.size(), 1u) << "after a success the pool opens what demand needs";
  EXPECT_LE(h.pool.slot_count(), 8u);
}

TEST(pool_core, waiter_gets_connect_error_when_server_is_down) {
  auto p = base_params();
  harness h(p);
  auto w = h.req(shared, 1000ms);
  ASSERT_EQ(h.pending_opens.size(), 1u);
  h.fail_open(h.pending_opens[0], errc::server_unreachable);
  EXPECT_FALSE(h.failed.contains(w.waiter)) << "transient error: the waiter keeps waiting";
  h.run_until(h.now + 999ms);
  EXPECT_FALSE(h.failed.contains(w.waiter));
  // Each retry fails too.
  while (!h.pending_opens.empty()) h.fail_open(h.pending_opens[0], errc::server_unreachable);
  h.run_until(h.now + 2000ms);
  ASSERT_TRUE(h.failed.contains(w.waiter));
  EXPECT_EQ(h.failed[w.waiter], errc::server_unreachable) << "'server down' must not read as 'pool exhausted'";
  pgpipe::pool_stats st;
  h.pool.fill_stats(st);
  EXPECT_EQ(st.errors.pool_timeout, 0u);
  EXPECT_GE(st.errors.connect, 1u);
}

TEST(pool_core, too_many_connections_sqlstate_is_transient_and_reported) {
  auto p = base_params();
  harness h(p);
  auto w = h.req(shared, 300ms);
  h.fail_open(h.pending_opens[0], pgpipe::make_sqlstate("53300"));
  EXPECT_FALSE(h.failed.contains(w.waiter));
  for (int i = 0; i < 20 && !h.failed.contains(w.waiter); ++i) {
    h.advance(25ms);
    while (!h.pending_opens.empty()) h.fail_open(h.pending_opens[0], pgpipe::make_sqlstate("53300"));
  }
  ASSERT_TRUE(h.failed.contains(w.waiter));
  EXPECT_EQ(pgpipe::sqlstate_of(h.failed[w.waiter]), "53300");
}

TEST(pool_core, waiter_gets_pool_timeout_when_connections_exist_but_are_busy) {
  auto p = base_params();
  p.max_size = 2;
  harness h(p);
  h.warm(1);
  h.req();
  auto w = h.req(shared, 100ms);
  ASSERT_EQ(h.pending_opens.size(), 1u);
  // Growth fails (e.g. max_connections reached server-side) but a usable slot exists.
  h.fail_open(h.pending_opens[0], pgpipe::make_sqlstate("53300"));
  h.run_until(h.now + 200ms);
  while (!h.pending_opens.empty()) h.fail_open(h.pending_opens[0], pgpipe::make_sqlstate("53300"));
  h.run_until(h.now + 200ms);
  EXPECT_EQ(h.failed[w.waiter], errc::pool_timeout);
}

TEST(pool_core, server_down_after_connections_broke_reports_the_connect_error) {
  auto p = base_params();
  p.max_size = 1;
  harness h(p);
  const slot_id s = h.warm(1)[0];
  h.req();
  auto w = h.req(shared, 500ms);
  h.broken(s);  // server restarted
  EXPECT_EQ(h.closed, std::vector<slot_id>{s});
  ASSERT_EQ(h.pending_opens.size(), 1u) << "replacement for the queued demand";
  h.fail_open(h.pending_opens[0], errc::server_unreachable);
  for (int i = 0; i < 40 && !h.failed.contains(w.waiter); ++i) {
    h.advance(20ms);
    while (!h.pending_opens.empty()) h.fail_open(h.pending_opens[0], errc::server_unreachable);
  }
  EXPECT_EQ(h.failed[w.waiter], errc::server_unreachable);
}

class permanent_error : public ::testing::TestWithParam<std::error_code> {};

TEST_P(permanent_error, fails_all_queued_waiters_at_once) {
  auto p = base_params();
  harness h(p);
  auto a = h.req(shared, 60'000ms);
  auto b = h.req(exclusive, 60'000ms);
  ASSERT_FALSE(h.pending_opens.empty());
  const auto opens = h.pending_opens;
  h.fail_open(opens[0], GetParam());
  EXPECT_EQ(h.failed[a.waiter], GetParam());
  EXPECT_EQ(h.failed[b.waiter], GetParam());
  EXPECT_EQ(h.fail_order, (std::vector<waiter_id>{a.waiter, b.waiter}));
  for (std::size_t i = 1; i < opens.size(); ++i) h.fail_open(opens[i], GetParam());
  // A request arriving now is queued, and a retry is made once the back-off allows...
  auto c = h.req(shared, 60'000ms);
  EXPECT_EQ(c.what, request_outcome::kind::queued);
  EXPECT_TRUE(h.pending_opens.empty()) << "back-off still applies";
  h.run_until(h.now + 50ms);
  ASSERT_EQ(h.pending_opens.size(), 1u);
  // ...failing at once when that retry fails permanently too: no hang until the deadline.
  h.fail_open(h.pending_opens[0], GetParam());
  EXPECT_EQ(h.failed[c.waiter], GetParam());
  // And when the configuration is fixed, the next retry serves new requests.
  auto d = h.req(shared, 60'000ms);
  h.run_until(h.now + 100ms);
  ASSERT_EQ(h.pending_opens.size(), 1u);
  h.succeed_open(h.pending_opens[0]);
  EXPECT_TRUE(h.granted.contains(d.waiter));
}

INSTANTIATE_TEST_SUITE_P(pool_core, permanent_error,
                         ::testing::Values(make_error_code(errc::auth_failed), make_error_code(errc::bad_conninfo),
                                           pgpipe::make_sqlstate("28P01"), pgpipe::make_sqlstate("28000"),
                                           pgpipe::make_sqlstate("3D000")));

TEST(pool_core, permanent_error_keeps_waiters_when_a_usable_slot_exists) {
  auto p = base_params();
  p.max_size = 2;
  harness h(p);
  const slot_id s = h.warm(1)[0];
  h.req();
  auto w = h.req();
  ASSERT_EQ(h.pending_opens.size(), 1u);
  h.fail_open(h.pending_opens[0], errc::auth_failed);
  EXPECT_FALSE(h.failed.contains(w.waiter)) << "the working connection will serve it";
  h.release(s);
  EXPECT_EQ(granted_slot(h, w.waiter), s);
}

// ---- lifetime, idle timeout, health checks, broken ---------------------------

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

// ---- stats --------------------------------------------------------------------

TEST(pool_core, stats_count_states_requests_and_churn) {
  auto p = base_params();
  p.max_size = 3;
  p.health_check_interval = 1'000ms;
  harness h(p, 2);
  const auto ids = h.warm(3);
  auto a = h.req();
  auto b = h.req();
  auto c = h.req();
  (void)c;
  auto d = h.req();  // on a busy slot
  ASSERT_EQ(a.what, request_outcome::kind::granted);
  h.release(b.slot);
  h.release(a.slot == d.slot ? c.slot : d.slot);
  pgpipe::pool_stats st;
  h.pool.fill_stats(st);
  EXPECT_EQ(st.connects, 3u);
  EXPECT_EQ(st.disconnects, 0u);
  EXPECT_EQ(st.in_flight, 2u);
  EXPECT_EQ(st.idle + st.busy, 3u);
  EXPECT_EQ(st.connecting, 0u);
  h.broken(ids[0]);
  h.pool.fill_stats(st);
  EXPECT_EQ(st.disconnects, 1u);
  EXPECT_EQ(st.connecting + st.idle + st.busy + st.draining + st.checking, h.pool.slot_count());
}

// ---- invariants under random churn ------------------------------------------

TEST(pool_core, random_churn_keeps_max_size_and_completes_every_waiter_once) {
  for (std::uint32_t seed : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 42u, 1234u}) {
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    auto p = base_params();
    // Vary the shape per seed: tiny pools hit max_size constantly.
    p.max_size = 1 + seed % 6;
    p.min_size = seed % (p.max_size + 1);
    p.max_queued = 30;
    p.max_lifetime = seed % 5 == 0 ? 0ms : 3'000ms;
    p.idle_timeout = seed % 7 == 0 ? 0ms : 1'500ms;
    p.health_check_interval = seed % 3 == 0 ? 0ms : 700ms;
    const std::size_t capacity = 1 + seed % 4;
    harness h(p, capacity);
    h.start();
    struct held {
      slot_id slot;
      request_kind kind;
    };
    std::vector<held> grants;
    std::set<waiter_id> queued;  // queued, not cancelled
    std::set<waiter_id> cancelled;
    std::size_t seen_grants = 0;
    std::map<waiter_id, request_kind> kind_of;
    auto pick = [&](auto& v) { return v[rng() % v.size()]; };
    for (int step = 0; step < 5000; ++step) {
      const unsigned ev = rng() % 100;
      if (ev < 30) {
        const auto k = rng() % 4 == 0 ? exclusive : shared;
        auto r = h.req(k, std::chrono::milliseconds(rng() % 2000));
        if (r.what == request_outcome::kind::granted) grants.push_back({r.slot, k});
        if (r.what == request_outcome::kind::queued) {
          queued.insert(r.waiter);
          kind_of[r.waiter] = k;
        }
      } else if (ev < 55 && !grants.empty()) {
        const std::size_t i = rng() % grants.size();
        h.release(grants[i].slot, grants[i].kind);
        grants.erase(grants.begin() + static_cast<std::ptrdiff_t>(i));
      } else if (ev < 70 && !h.pending_opens.empty()) {
        const slot_id s = pick(h.pending_opens);
        if (rng() % 3 == 0)
          h.fail_open(s, rng() % 2 ? make_error_code(errc::server_unreachable) : pgpipe::make_sqlstate("28P01"));
        else
          h.succeed_open(s);
      } else if (ev < 76 && !h.pending_checks.empty()) {
        h.check_done(pick(h.pending_checks), rng() % 4 != 0);
      } else if (ev < 79 && h.pool.slot_count() > 0) {
        h.broken(h.opened_ever[rng() % h.opened_ever.size()]);
      } else if (ev < 83 && !queued.empty()) {
        auto it = queued.begin();
        std::advance(it, static_cast<std::ptrdiff_t>(rng() % queued.size()));
        const waiter_id w = *it;
        const bool was_queued = !h.granted.contains(w) && !h.failed.contains(w);
        EXPECT_EQ(h.pool.cancel(w), was_queued);
        if (was_queued) cancelled.insert(w);
        queued.erase(it);
      } else {
        h.advance(std::chrono::milliseconds(rng() % 300));
        auto t = h.pool.next_timer();
        if (t) {
          ASSERT_GT(*t, h.now) << "after on_tick nothing may be due already (busy loop)";
        }
      }
      // Grants of queued waiters, with their kinds.
      for (; seen_grants < h.grant_order.size(); ++seen_grants) {
        const waiter_id w = h.grant_order[seen_grants];
        grants.push_back({h.granted[w], kind_of[w]});
      }
      ASSERT_LE(h.pool.slot_count(), p.max_size) << "step " << step;
      pgpipe::pool_stats st;
      h.pool.fill_stats(st);
      ASSERT_EQ(st.connecting + st.idle + st.busy + st.draining + st.checking, h.pool.slot_count());
      ASSERT_EQ(st.connecting, h.pending_opens.size());
      for (slot_id s : h.opened_ever) ASSERT_LE(h.pool.load_of(s), capacity);
    }
    // Wind down: close, finish all work and pending answers; everything completes.
    h.pool.close(h.now);
    h.pump();
    for (auto& g : grants) h.release(g.slot, g.kind);
    while (!h.pending_opens.empty()) h.succeed_open(h.pending_opens[0]);
    while (!h.pending_checks.empty()) h.check_done(h.pending_checks[0], true);
    EXPECT_TRUE(h.pool.is_drained());
    for (waiter_id w : cancelled) {
      EXPECT_FALSE(h.granted.contains(w)) << "cancelled waiter " << w << " granted";
      EXPECT_FALSE(h.failed.contains(w)) << "cancelled waiter " << w << " failed";
    }
    for (auto& [w, k] : kind_of)
      if (!cancelled.contains(w)) {
        EXPECT_TRUE(h.granted.contains(w) || h.failed.contains(w)) << "waiter " << w << " hangs";
      }
    pgpipe::pool_stats st;
    h.pool.fill_stats(st);
    EXPECT_EQ(st.in_flight, 0u);
    EXPECT_EQ(st.queued, 0u);
  }
}

}  // namespace
