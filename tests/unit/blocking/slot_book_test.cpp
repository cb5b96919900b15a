// The blocking pool's slot book (blocking/pool/slot_book.hpp) with a fake
// connection that counts its live instances, and a fake clock. Driven, where
// the rule involves pool_core, the way blocking_pool_impl drives it: a real
// pool_core's open/check/close/grant actions applied to the book. Pins:
// close_pending (a slot closed while a connect, a lease or a health check
// holds it is closed by that holder, and pool_core never hears of it
// again), nothing leaks, and the liveness bypass at hand-out.
#include "blocking/pool/slot_book.hpp"

#include "core/pool/pool_core.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <vector>

namespace {

using namespace std::chrono_literals;
using pgpipe::errc;
using pgpipe::detail::liveness_bypass;
using pgpipe::detail::pool_action;
using pgpipe::detail::pool_core;
using pgpipe::detail::request_kind;
using pgpipe::detail::request_outcome;
using pgpipe::detail::slot_id;
using pgpipe::detail::time_point;
using pgpipe::detail::waiter_id;

struct fake_conn {
  static inline int live = 0;
  fake_conn() { ++live; }
  ~fake_conn() { --live; }
  fake_conn(const fake_conn&) = delete;
  fake_conn& operator=(const fake_conn&) = delete;
};

using book = pgpipe::detail::slot_book<fake_conn>;

const time_point t0{std::chrono::seconds(1000)};

class slot_book_test : public ::testing::Test {
 protected:
  void SetUp() override { fake_conn::live = 0; }
  void TearDown() override { EXPECT_EQ(fake_conn::live, 0) << "a connection leaked"; }
};

// A slot connected and idle in `b`.
void connect(book& b, slot_id s) {
  b.open(s);
  auto c = std::make_unique<fake_conn>();
  ASSERT_EQ(b.open_ended(s, c), book::open_verdict::connected);
  EXPECT_EQ(c, nullptr) << "the book took the connection";
}

TEST_F(slot_book_test, an_idle_slot_closes_at_once) {
  book b;
  connect(b, 1);
  auto r = b.close(1);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->slot, 1u);
  EXPECT_NE(r->conn, nullptr);
  EXPECT_EQ(r->why, nullptr) << "closed by the pool, not a failure";
  EXPECT_FALSE(b.holds(1));
}

TEST_F(slot_book_test, a_leased_slot_closed_by_the_pool_is_closed_by_its_lease) {
  book b;
  connect(b, 1);
  b.lease(1);
  EXPECT_FALSE(b.close(1)) << "closed under the lease's feet";
  EXPECT_EQ(fake_conn::live, 1);
  const auto end = b.lease_ended(1, true, "broken", t0);
  EXPECT_FALSE(end.tell_pool) << "pool_core forgot the slot at its close action";
  ASSERT_TRUE(end.closed);
  EXPECT_NE(end.closed->conn, nullptr);
  EXPECT_FALSE(b.holds(1));
}

TEST_F(slot_book_test, a_slot_closed_during_its_health_check_is_closed_by_the_check) {
  book b;
  connect(b, 1);
  ASSERT_TRUE(b.check(1));
  EXPECT_FALSE(b.close(1));
  const auto end = b.check_ended(1, "health check failed");
  EXPECT_FALSE(end.tell_pool);
  ASSERT_TRUE(end.closed);
  EXPECT_STREQ(end.closed->why, "health check failed");
  EXPECT_FALSE(b.holds(1));
}

TEST_F(slot_book_test, a_slot_closed_while_connecting_discards_the_new_connection) {
  book b;
  b.open(1);
  EXPECT_FALSE(b.close(1)) << "nothing to close yet";
  auto c = std::make_unique<fake_conn>();
  EXPECT_EQ(b.open_ended(1, c), book::open_verdict::closed_meanwhile);
  EXPECT_NE(c, nullptr) << "left to the caller to close";
  EXPECT_FALSE(b.holds(1));
}

TEST_F(slot_book_test, a_slot_opened_again_after_a_close_order_is_not_closed_by_it) {
  book b;
  b.open(1);
  EXPECT_FALSE(b.close(1));
  b.open(1);
  auto c = std::make_unique<fake_conn>();
  EXPECT_EQ(b.open_ended(1, c), book::open_verdict::connected);
  ASSERT_TRUE(b.close(1));
}

TEST_F(slot_book_test, a_lease_or_check_on_a_slot_still_in_the_pool_tells_the_pool) {
  book b;
  connect(b, 1);
  b.lease(1);
  auto end = b.lease_ended(1, true, "broken", t0);
  EXPECT_TRUE(end.tell_pool);
  EXPECT_FALSE(end.closed);
  ASSERT_TRUE(b.check(1));
  end = b.check_ended(1, nullptr);
  EXPECT_TRUE(end.tell_pool);
  EXPECT_FALSE(end.closed);
  EXPECT_TRUE(b.holds(1));
  // The failure's reason is the one logged at the close that follows.
  b.lease(1);
  (void)b.lease_ended(1, false, "broken", t0);
  auto r = b.close(1);
  ASSERT_TRUE(r);
  EXPECT_STREQ(r->why, "broken");
}

TEST_F(slot_book_test, a_failed_connect_forgets_the_slot) {
  book b;
  b.open(1);
  std::unique_ptr<fake_conn> none;
  EXPECT_EQ(b.open_ended(1, none), book::open_verdict::failed);
  EXPECT_FALSE(b.holds(1));
}

TEST_F(slot_book_test, shutdown_takes_every_idle_connection_and_leaves_the_leased_ones) {
  book b;
  connect(b, 1);
  connect(b, 2);
  connect(b, 3);
  b.lease(2);
  auto idle = b.take_idle();
  EXPECT_EQ(idle.size(), 2u);
  EXPECT_TRUE(b.holds(2));
  idle.clear();
  EXPECT_EQ(fake_conn::live, 1);
  const auto end = b.lease_ended(2, true, nullptr, t0);
  EXPECT_TRUE(end.tell_pool);  // pool_core (closed) drains it on release
  auto r = b.close(2);
  ASSERT_TRUE(r);
}

TEST_F(slot_book_test, a_connection_returned_within_the_bypass_is_handed_out_unprobed) {
  book b;
  connect(b, 1);
  EXPECT_TRUE(b.hand_out(1, t0).probe) << "a new connection was never returned: probe it";
  b.lease(1);
  (void)b.lease_ended(1, true, nullptr, t0);
  EXPECT_FALSE(b.hand_out(1, t0 + liveness_bypass / 2).probe);
  EXPECT_FALSE(b.hand_out(1, t0 + liveness_bypass - 1us).probe);
  EXPECT_TRUE(b.hand_out(1, t0 + liveness_bypass).probe) << "sat long enough for its backend to die";
  EXPECT_TRUE(b.hand_out(1, t0 + 1s).probe);
  EXPECT_NE(b.hand_out(1, t0).conn, nullptr);
  EXPECT_EQ(b.hand_out(7, t0).conn, nullptr) << "an unknown slot hands out nothing";
}

TEST_F(slot_book_test, a_connection_returned_broken_is_probed_at_its_next_hand_out) {
  // Only a reuse restarts the bypass window: a lease that ended broken (the
  // pool replaces the connection) leaves the last reuse time.
  book b;
  connect(b, 1);
  b.lease(1);
  (void)b.lease_ended(1, false, "broken", t0);
  EXPECT_TRUE(b.hand_out(1, t0 + 1us).probe);
}

// pool_core and the book together, applied the way blocking_pool_impl
// applies pool_core's actions, with close() while a connect, a lease and a
// health check are in flight: every waiter is answered, every connection
// is closed once its holder is done, and pool_core drains.
TEST_F(slot_book_test, close_with_connect_lease_and_check_in_flight_answers_everyone_and_leaks_nothing) {
  pgpipe::pool_params p;
  p.max_size = 3;
  p.min_size = 0;
  p.max_queued = 10;
  p.acquire_timeout = 1000ms;
  p.max_lifetime = 0ms;
  p.idle_timeout = 0ms;
  p.health_check_interval = 100ms;
  pool_core core(p, 1);
  book b;
  time_point now = t0;
  std::vector<slot_id> opening;
  std::vector<slot_id> checking;
  std::vector<book::retired> closed_now;
  std::map<waiter_id, std::error_code> answered;
  std::map<waiter_id, int> answers;

  auto apply = [&] {
    for (const pool_action& a : core.take_actions()) {
      switch (a.what) {
        case pool_action::kind::open:
          b.open(a.slot);
          opening.push_back(a.slot);
          break;
        case pool_action::kind::check:
          if (b.check(a.slot)) checking.push_back(a.slot);
          break;
        case pool_action::kind::close:
          if (auto r = b.close(a.slot)) closed_now.push_back(std::move(*r));
          break;
        case pool_action::kind::grant:
          b.lease(a.slot);
          answered[a.waiter] = {};
          ++answers[a.waiter];
          break;
        case pool_action::kind::fail:
          answered[a.waiter] = a.ec;
          ++answers[a.waiter];
          break;
      }
    }
  };
  auto finish_open = [&](slot_id s) {
    auto c = std::make_unique<fake_conn>();
    switch (b.open_ended(s, c)) {
      case book::open_verdict::connected:
        core.on_open_succeeded(now, s);
        break;
      case book::open_verdict::failed:
        FAIL() << "the fake connect cannot fail";
      case book::open_verdict::closed_meanwhile:
        c.reset();  // the driver closes it; pool_core is not told
        break;
    }
    apply();
  };

  // Slot A: leased. Slot B: idle, then health-checked. Slot C: connecting.
  const request_outcome la = core.request(now, request_kind::exclusive, now + 1s);
  const request_outcome lb = core.request(now, request_kind::exclusive, now + 1s);
  apply();
  ASSERT_EQ(opening.size(), 2u);
  auto first_two = opening;
  opening.clear();
  for (slot_id s : first_two) finish_open(s);
  ASSERT_EQ(answers.size(), 2u);
  const slot_id leased = first_two.front();
  const slot_id other = first_two.back();
  core.release(now, other, request_kind::exclusive);
  (void)b.lease_ended(other, true, nullptr, now);
  apply();
  now += 100ms;
  core.on_tick(now);
  apply();
  ASSERT_EQ(checking, std::vector<slot_id>{other}) << "the idle slot is due for its health check";
  const request_outcome lc = core.request(now, request_kind::exclusive, now + 1s);
  const request_outcome ld = core.request(now, request_kind::exclusive, now + 1s);
  apply();
  ASSERT_EQ(opening.size(), 1u) << "one more slot connects for the waiters";
  (void)la;
  (void)lb;

  core.close(now);
  apply();
  EXPECT_TRUE(closed_now.empty()) << "every slot is held: none closes under its holder";
  for (waiter_id w : {lc.waiter, ld.waiter}) {
    if (w == 0) continue;  // granted at once, counted above
    EXPECT_EQ(answers[w], 1);
    EXPECT_EQ(answered[w], errc::closed);
  }

  finish_open(opening.front());
  auto end_hold = [&](book::hold_end end, auto tell) {
    if (end.closed) closed_now.push_back(std::move(*end.closed));
    if (end.tell_pool) tell();
    apply();
  };
  end_hold(b.check_ended(other, nullptr), [&] { core.on_check_done(now, other, true); });
  end_hold(b.lease_ended(leased, true, nullptr, now), [&] { core.release(now, leased, request_kind::exclusive); });
  // pool_core closes a held slot only once its holder answers: the checked,
  // the leased and the newly connected connection all close now.
  EXPECT_EQ(closed_now.size(), 3u);
  closed_now.clear();
  for (const auto& [w, n] : answers) EXPECT_EQ(n, 1) << "waiter " << w;
  EXPECT_EQ(b.size(), 0u);
  EXPECT_TRUE(core.is_drained());
}

}  // namespace
