// pool_core while connects fail, with a fake clock and a fake driver: the
// back-off, one attempt at a time, and the error a waiter is told (the
// connect error when the server is down, pool_timeout when the pool is busy,
// at once for a permanent error).
#include "pool_core_harness.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <vector>

namespace {
using namespace pgpipe::test::pool_harness;

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

TEST(pool_core, an_unknown_host_fails_queued_waiters_at_once_and_a_refused_port_does_not) {
  using pgpipe::detail::connect_failure_kind;
  auto p = base_params();
  harness h(p);
  auto refused = h.req(shared, 60'000ms);
  ASSERT_EQ(h.pending_opens.size(), 1u);
  h.fail_open(h.pending_opens[0], errc::server_unreachable, connect_failure_kind::transient);
  EXPECT_FALSE(h.failed.contains(refused.waiter)) << "a refused port may open: the waiter keeps its deadline";
  h.run_until(h.now + 50ms);
  ASSERT_EQ(h.pending_opens.size(), 1u) << "retried after the back-off";
  // The resolver's final answer: the same code, but no retry will change it.
  h.fail_open(h.pending_opens[0], errc::server_unreachable, connect_failure_kind::permanent);
  ASSERT_TRUE(h.failed.contains(refused.waiter)) << "failed at once, not at its deadline";
  EXPECT_EQ(h.failed[refused.waiter], errc::server_unreachable);
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

}  // namespace
