// How long a query waits for pool capacity and the code it gets when
// pool_core fails its wait (async/pool/waiter_failure.hpp): it waits until
// the sooner of acquire_timeout and its own deadline; its own deadline, when
// that was the binding limit, is reported as query_timeout; everything else
// as pool_core said it. The last tests run the two rules against a real
// pool_core on a fake clock, as client_impl does.
#include "async/pool/waiter_failure.hpp"

#include "core/pool/pool_core.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

#include <chrono>

namespace {

using namespace std::chrono_literals;
using pgpipe::errc;
using pgpipe::detail::time_point;
using pgpipe::detail::pool_action;
using pgpipe::detail::pool_core;
using pgpipe::detail::query_wait_deadline;
using pgpipe::detail::request_kind;
using pgpipe::detail::request_outcome;
using pgpipe::detail::waiter_failure_code;

const time_point now{std::chrono::seconds(1000)};

TEST(waiter_failure, a_query_whose_own_deadline_passed_hears_query_timeout) {
  EXPECT_EQ(waiter_failure_code(make_error_code(errc::pool_timeout), now - 1ms, now), errc::query_timeout);
  // The deadline reached exactly now is passed too: the tick that failed the
  // wait ran at it.
  EXPECT_EQ(waiter_failure_code(make_error_code(errc::pool_timeout), now, now), errc::query_timeout);
}

TEST(waiter_failure, acquire_timeout_shorter_than_the_query_deadline_stays_pool_timeout) {
  EXPECT_EQ(waiter_failure_code(make_error_code(errc::pool_timeout), now + 1ms, now), errc::pool_timeout);
  EXPECT_EQ(waiter_failure_code(make_error_code(errc::pool_timeout), time_point::max(), now), errc::pool_timeout);
}

TEST(waiter_failure, other_failures_keep_their_code_whatever_the_deadline) {
  for (errc e : {errc::closed, errc::queue_full, errc::server_unreachable}) {
    EXPECT_EQ(waiter_failure_code(make_error_code(e), now - 1s, now), e) << make_error_code(e).message();
  }
}

TEST(waiter_failure, a_query_waits_until_the_sooner_of_acquire_timeout_and_its_own_deadline) {
  EXPECT_EQ(query_wait_deadline(now, 1000ms, now + 50ms), now + 50ms);
  EXPECT_EQ(query_wait_deadline(now, 30ms, now + 50ms), now + 30ms);
  EXPECT_EQ(query_wait_deadline(now, 0ms, now + 50ms), now + 50ms) << "no acquire_timeout: the query's own";
  EXPECT_EQ(query_wait_deadline(now, 0ms, time_point::max()), time_point::max());
}

struct told {
  std::error_code ec;
  time_point at;
};

// One query waiting behind a held connection, as client_impl::submit_query
// queues it and client_impl::fail_locked answers it: the code it is told,
// and when.
told told_after_waiting(std::chrono::milliseconds acquire_timeout, std::chrono::milliseconds query_timeout) {
  pgpipe::pool_params p;
  p.max_size = 1;
  p.min_size = 0;
  p.acquire_timeout = acquire_timeout;
  p.max_lifetime = 0ms;
  p.idle_timeout = 0ms;
  p.health_check_interval = 0ms;
  pool_core core(p, 1);
  time_point t = now;
  (void)core.request(t, request_kind::shared, time_point::max());
  for (const pool_action& a : core.take_actions())
    if (a.what == pool_action::kind::open) core.on_open_succeeded(t, a.slot);
  (void)core.take_actions();
  const time_point query_deadline = t + query_timeout;
  const request_outcome out =
      core.request(t, request_kind::shared, query_wait_deadline(t, acquire_timeout, query_deadline));
  EXPECT_EQ(out.what, request_outcome::kind::queued);
  for (int ticks = 0; ticks < 10; ++ticks) {
    const auto next = core.next_timer();
    if (!next) break;
    t = *next;
    core.on_tick(t);
    for (const pool_action& a : core.take_actions())
      if (a.what == pool_action::kind::fail && a.waiter == out.waiter)
        return {waiter_failure_code(a.ec, query_deadline, t), t};
  }
  ADD_FAILURE() << "the waiter was never answered";
  return {{}, time_point::max()};
}

TEST(waiter_failure, a_query_whose_timeout_is_shorter_than_acquire_timeout_hears_query_timeout_in_time) {
  const told t = told_after_waiting(1000ms, 50ms);
  EXPECT_EQ(t.ec, errc::query_timeout);
  EXPECT_EQ(t.at, now + 50ms) << "the query outwaited its own deadline";
}

TEST(waiter_failure, a_query_whose_acquire_timeout_is_shorter_hears_pool_timeout) {
  const told t = told_after_waiting(30ms, 50ms);
  EXPECT_EQ(t.ec, errc::pool_timeout);
  EXPECT_EQ(t.at, now + 30ms);
}

}  // namespace
