// The async pool's timer schedule (async/pool/tick_schedule.hpp), driven the
// way client_impl drives it: pool_core's next deadline aimed after every
// call, arm orders delivered later (and possibly out of order) to a fake
// timer, ticks fired by the test's clock. Pins the rules numbered in the
// header: only a sooner deadline issues an order, a newer order makes older
// ones stale, a tick leaves the schedule unaimed, stop() cancels once.
#include "async/pool/tick_schedule.hpp"

#include "core/pool/pool_core.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <vector>

namespace {

using namespace std::chrono_literals;
using pgpipe::errc;
using pgpipe::detail::pool_action;
using pgpipe::detail::pool_core;
using pgpipe::detail::request_kind;
using pgpipe::detail::request_outcome;
using pgpipe::detail::tick_schedule;
using pgpipe::detail::time_point;

const time_point t0{std::chrono::seconds(1000)};

// The steady_timer and the posts between the pool mutex and the pool's
// executor: orders wait in `posted` until delivered; a delivered order aims
// the timer only when still current (client_impl::arm_tick).
struct fake_timer {
  std::vector<tick_schedule::arm_order> posted;
  std::optional<time_point> expiry;
  int cancels = 0;

  void deliver(const tick_schedule& s, const tick_schedule::arm_order& o) {
    if (s.current(o.gen)) expiry = o.at;
  }
};

TEST(tick_schedule, only_a_sooner_deadline_issues_an_order) {
  tick_schedule s;
  EXPECT_TRUE(s.unaimed());
  EXPECT_FALSE(s.aim(std::nullopt)) << "nothing to time";
  auto first = s.aim(t0 + 200ms);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->at, t0 + 200ms);
  EXPECT_FALSE(s.unaimed());
  EXPECT_FALSE(s.aim(t0 + 300ms)) << "the earlier tick aims again when it runs";
  EXPECT_FALSE(s.aim(t0 + 200ms)) << "already aimed there";
  auto sooner = s.aim(t0 + 100ms);
  ASSERT_TRUE(sooner);
  EXPECT_EQ(sooner->at, t0 + 100ms);
  EXPECT_NE(sooner->gen, first->gen);
}

TEST(tick_schedule, an_order_overtaken_by_a_newer_one_does_not_touch_the_timer) {
  tick_schedule s;
  fake_timer timer;
  timer.posted.push_back(*s.aim(t0 + 200ms));
  timer.posted.push_back(*s.aim(t0 + 100ms));
  // The executor runs the newer post first, then the stale one.
  timer.deliver(s, timer.posted[1]);
  timer.deliver(s, timer.posted[0]);
  ASSERT_TRUE(timer.expiry);
  EXPECT_EQ(*timer.expiry, t0 + 100ms) << "the stale order re-aimed the timer later than the sooner deadline";
  EXPECT_FALSE(s.current(timer.posted[0].gen));
  EXPECT_TRUE(s.current(timer.posted[1].gen));
}

TEST(tick_schedule, a_tick_leaves_it_unaimed_so_pool_cores_next_deadline_is_aimed) {
  // A real pool_core with two waiters whose deadlines are 100 ms apart: the
  // first tick fails the first waiter, and the second deadline, later than
  // the one just served, must still get a timer.
  pgpipe::pool_params p;
  p.max_size = 1;
  p.min_size = 0;
  p.acquire_timeout = 1000ms;
  p.max_lifetime = 0ms;
  p.idle_timeout = 0ms;
  p.health_check_interval = 0ms;
  pool_core core(p, 1);
  tick_schedule s;
  time_point now = t0;
  auto held = core.request(now, request_kind::exclusive, now + 1s);
  for (const pool_action& a : core.take_actions())
    if (a.what == pool_action::kind::open) core.on_open_succeeded(now, a.slot);
  (void)core.take_actions();
  (void)held;
  const request_outcome w1 = core.request(now, request_kind::exclusive, t0 + 100ms);
  const request_outcome w2 = core.request(now, request_kind::exclusive, t0 + 200ms);
  ASSERT_EQ(w1.what, request_outcome::kind::queued);
  ASSERT_EQ(w2.what, request_outcome::kind::queued);
  auto order = s.aim(core.next_timer());
  ASSERT_TRUE(order);
  EXPECT_EQ(order->at, t0 + 100ms);

  now = order->at;  // the timer fires: client_impl::on_tick
  s.fired();
  core.on_tick(now);
  int failed = 0;
  for (const pool_action& a : core.take_actions())
    if (a.what == pool_action::kind::fail && a.waiter == w1.waiter && a.ec == errc::pool_timeout) ++failed;
  EXPECT_EQ(failed, 1);
  EXPECT_TRUE(s.unaimed());
  auto next = s.aim(core.next_timer());
  ASSERT_TRUE(next) << "the second waiter's deadline got no timer: it would wait forever";
  EXPECT_EQ(next->at, t0 + 200ms);
}

TEST(tick_schedule, stop_makes_pending_orders_stale_and_cancels_once) {
  tick_schedule s;
  fake_timer timer;
  auto pending = *s.aim(t0 + 100ms);
  EXPECT_TRUE(s.stop()) << "a timer was aimed: it must be cancelled";
  timer.deliver(s, pending);
  EXPECT_FALSE(timer.expiry) << "an order issued before close re-armed the timer after it";
  EXPECT_TRUE(s.unaimed());
  EXPECT_FALSE(s.stop()) << "nothing aimed since: no second cancel";
  auto later = s.aim(t0 + 300ms);  // a deadline appears again (a connect in flight)
  ASSERT_TRUE(later);
  EXPECT_TRUE(s.stop());
  timer.deliver(s, *later);
  EXPECT_FALSE(timer.expiry);
}

TEST(tick_schedule, stop_on_a_schedule_never_aimed_still_cancels_once) {
  // client_impl cancels the timer the first time the pool is found closed
  // and drained, aimed or not: a wait may be pending from an earlier tick.
  tick_schedule s;
  EXPECT_TRUE(s.stop());
  EXPECT_FALSE(s.stop());
}

}  // namespace
