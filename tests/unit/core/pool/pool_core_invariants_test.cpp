// pool_core's stats and its invariants under seeded random churn, with a
// fake clock and a fake driver: never above max_size, every waiter completed
// exactly once, everything drained after close.
#include "pool_core_harness.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <vector>

namespace {
using namespace pgpipe::test::pool_harness;

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
