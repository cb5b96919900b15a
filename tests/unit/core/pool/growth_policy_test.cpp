// growth_policy on its own: how many connects a pool shape wants, what the
// pace lets start and when, and the connect back-off. Time is a fake clock
// (time_points the test makes); nothing sleeps.
#include "core/pool/growth_policy.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

#include <chrono>

namespace {

using namespace std::chrono_literals;
using pgpipe::errc;
using pgpipe::pool_params;
using pgpipe::detail::growth_policy;
using pgpipe::detail::pool_shape;
using pgpipe::detail::time_point;

const time_point t0{std::chrono::seconds(1000)};

pool_params params(std::size_t min_size, std::size_t max_size) {
  pool_params p;
  p.min_size = min_size;
  p.max_size = max_size;
  p.growth_connects = 1;
  p.growth_interval = 0ms;
  p.connect_backoff_initial = 50ms;
  p.connect_backoff_max = 400ms;
  return p;
}

pool_params paced(std::size_t connects, std::chrono::milliseconds interval) {
  auto p = params(0, 10);
  p.growth_connects = connects;
  p.growth_interval = interval;
  return p;
}

// slots counts every slot; usable and connecting are among them.
pool_shape shape(std::size_t usable, std::size_t connecting, std::size_t shared_waiting = 0,
                 std::size_t exclusive_waiting = 0) {
  return {usable + connecting, usable, connecting, shared_waiting, exclusive_waiting};
}

// ---- connects wanted ----------------------------------------------------------

TEST(growth_policy, wants_the_min_size_deficit) {
  growth_policy g(params(3, 10), 1);
  EXPECT_EQ(g.wanted(shape(0, 0)), 3u);
  EXPECT_EQ(g.wanted(shape(1, 1)), 1u) << "connecting slots count toward min_size";
  EXPECT_EQ(g.wanted(shape(3, 0)), 0u);
}

TEST(growth_policy, queued_demand_wants_a_slot_per_exclusive_waiter_and_per_capacity_of_shared_ones) {
  growth_policy g(params(0, 100), 4);
  EXPECT_EQ(g.wanted(shape(0, 0, 1)), 1u);
  EXPECT_EQ(g.wanted(shape(0, 0, 4)), 1u);
  EXPECT_EQ(g.wanted(shape(0, 0, 5)), 2u) << "rounded up";
  EXPECT_EQ(g.wanted(shape(0, 0, 0, 3)), 3u);
  EXPECT_EQ(g.wanted(shape(0, 0, 5, 3)), 5u);
  EXPECT_EQ(g.wanted(shape(0, 2, 5, 3)), 3u) << "connects in flight serve demand";
}

TEST(growth_policy, the_larger_of_deficit_and_demand_within_max_size) {
  growth_policy g(params(2, 4), 1);
  EXPECT_EQ(g.wanted(shape(0, 0, 3)), 3u);
  EXPECT_EQ(g.wanted(shape(0, 0, 1)), 2u);
  EXPECT_EQ(g.wanted(shape(0, 0, 9)), 4u) << "max_size caps it";
  EXPECT_EQ(g.wanted({4, 1, 0, 9, 0}), 0u) << "draining slots count against max_size too";
}

// ---- opening and pacing -------------------------------------------------------

TEST(growth_policy, with_nothing_usable_everything_wanted_opens_at_once) {
  growth_policy g(paced(1, 1'000ms), 1);
  EXPECT_EQ(g.open_now(t0, shape(0, 0, 6)), 6u) << "startup/recovery is not paced";
}

TEST(growth_policy, while_serving_demand_beyond_min_size_is_paced) {
  auto p = paced(2, 100ms);
  p.min_size = 2;
  growth_policy g(p, 1);
  EXPECT_EQ(g.open_now(t0, shape(1, 0, 9)), 2u) << "the min_size deficit (1) now, then one paced start";
  EXPECT_EQ(g.open_now(t0 + 50ms, shape(1, 2, 9)), 0u) << "growth_connects in flight";
  EXPECT_EQ(g.open_now(t0 + 50ms, shape(2, 1, 9)), 0u) << "within growth_interval of the last start";
  EXPECT_EQ(g.open_now(t0 + 100ms, shape(2, 1, 9)), 1u);
}

TEST(growth_policy, growth_interval_zero_fills_growth_connects_at_once) {
  growth_policy g(paced(3, 0ms), 1);
  EXPECT_EQ(g.open_now(t0, shape(1, 0, 9)), 3u);
  EXPECT_EQ(g.open_now(t0, shape(1, 2, 9)), 1u) << "one answered: one more";
}

TEST(growth_policy, a_burst_opens_everything_wanted_unpaced) {
  growth_policy g(paced(1, 1'000ms), 1);
  EXPECT_EQ(g.open_now(t0, shape(1, 0, 5), true), 5u);
}

TEST(growth_policy, held_back_demand_sets_the_timer_to_the_next_paced_start) {
  growth_policy g(paced(2, 100ms), 1);
  EXPECT_FALSE(g.next_timer(shape(1, 0)).has_value()) << "nothing wanted";
  ASSERT_EQ(g.open_now(t0, shape(1, 0, 5)), 1u);
  EXPECT_EQ(g.next_timer(shape(1, 1, 5)), t0 + 100ms);
  EXPECT_FALSE(g.next_timer(shape(1, 2, 5)).has_value()) << "growth_connects in flight: an answer comes first";
  EXPECT_FALSE(g.next_timer(shape(0, 1, 5)).has_value()) << "nothing usable: not paced, nothing held back";
}

TEST(growth_policy, on_demand_growth_is_paced_while_serving) {
  growth_policy g(paced(1, 100ms), 1);
  EXPECT_TRUE(g.open_on_demand(t0, shape(1, 0)));
  EXPECT_FALSE(g.open_on_demand(t0 + 200ms, shape(1, 1))) << "growth_connects in flight";
  EXPECT_FALSE(g.open_on_demand(t0 + 50ms, shape(2, 0))) << "within growth_interval";
  EXPECT_TRUE(g.open_on_demand(t0 + 100ms, shape(2, 0)));
}

TEST(growth_policy, on_demand_growth_with_nothing_usable_keeps_one_connect_in_flight) {
  growth_policy g(paced(5, 0ms), 1);
  EXPECT_TRUE(g.open_on_demand(t0, shape(0, 0)));
  EXPECT_FALSE(g.open_on_demand(t0, shape(0, 1)));
}

TEST(growth_policy, on_demand_growth_stops_at_max_size) {
  growth_policy g(params(0, 2), 1);
  EXPECT_FALSE(g.open_on_demand(t0, shape(2, 0)));
  EXPECT_FALSE(g.open_on_demand(t0, {2, 1, 0, 0, 0})) << "a draining slot still counts";
}

// ---- back-off -----------------------------------------------------------------

TEST(growth_policy, backoff_starts_at_initial_doubles_on_failed_probes_and_caps) {
  growth_policy g(params(0, 10), 1);
  EXPECT_FALSE(g.failing());
  EXPECT_EQ(g.backoff(), 0ms);
  g.connect_failed(t0, make_error_code(errc::server_unreachable), false);
  EXPECT_TRUE(g.failing());
  EXPECT_EQ(g.backoff(), 50ms);
  g.connect_failed(t0, make_error_code(errc::server_unreachable), false);
  EXPECT_EQ(g.backoff(), 50ms) << "an attempt already in flight is the same outage";
  for (auto want : {100ms, 200ms, 400ms, 400ms}) {
    g.connect_failed(t0, make_error_code(errc::server_unreachable), true);
    EXPECT_EQ(g.backoff(), want);
  }
}

TEST(growth_policy, a_success_resets_the_backoff_and_says_it_ended_an_outage) {
  growth_policy g(params(0, 10), 1);
  EXPECT_FALSE(g.connect_succeeded()) << "no outage to end";
  g.connect_failed(t0, make_error_code(errc::auth_failed), false);
  g.connect_failed(t0, make_error_code(errc::auth_failed), true);
  EXPECT_TRUE(g.connect_succeeded());
  EXPECT_FALSE(g.failing());
  EXPECT_EQ(g.backoff(), 0ms);
  EXPECT_FALSE(g.last_error());
  g.connect_failed(t0, make_error_code(errc::server_unreachable), false);
  EXPECT_EQ(g.backoff(), 50ms) << "starts over from connect_backoff_initial";
}

TEST(growth_policy, the_last_error_names_the_failure) {
  growth_policy g(params(0, 10), 1);
  g.connect_failed(t0, pgpipe::make_sqlstate("53300"), false);
  EXPECT_EQ(g.last_error(), pgpipe::make_sqlstate("53300"));
  g.connect_failed(t0, {}, true);
  EXPECT_EQ(g.last_error(), errc::connect_failed) << "a failure without an error still says it failed";
}

TEST(growth_policy, while_failing_one_probe_at_a_time_after_the_backoff) {
  growth_policy g(params(2, 10), 1);
  g.connect_failed(t0, make_error_code(errc::server_unreachable), false);
  EXPECT_EQ(g.open_now(t0 + 49ms, shape(0, 0, 5)), 0u);
  EXPECT_EQ(g.next_timer(shape(0, 0, 5)), t0 + 50ms);
  EXPECT_EQ(g.open_now(t0 + 50ms, shape(0, 0, 5)), 1u) << "one probe, not a storm";
  EXPECT_EQ(g.open_now(t0 + 60ms, shape(0, 1, 5)), 0u) << "the probe is in flight";
  EXPECT_FALSE(g.next_timer(shape(0, 1, 5)).has_value());
  EXPECT_FALSE(g.open_on_demand(t0 + 60ms, shape(0, 0))) << "no on-demand growth while failing";
}

TEST(growth_policy, nothing_wanted_sets_no_retry_timer) {
  growth_policy g(params(0, 10), 1);
  g.connect_failed(t0, make_error_code(errc::server_unreachable), false);
  EXPECT_FALSE(g.next_timer(shape(0, 0)).has_value());
}

}  // namespace
