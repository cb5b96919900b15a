// pool_core's group preference with a fake clock and a fake driver: a
// request that prefers a group (the async driver's loop its caller runs on)
// goes to that group's least-loaded slot while it is not much busier than the
// least-loaded slot, and to the least-loaded slot otherwise; growth and
// waiters are as without a preference.
#include "pool_core_harness.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {
using namespace pgpipe::test::pool_harness;
using pgpipe::detail::no_slot_group;
using pgpipe::detail::slot_group;

// Two slots per group: ids[0], ids[2] in group 0; ids[1], ids[3] in group 1,
// as the async driver spreads connections round-robin over its loops.
struct grouped {
  harness h;
  std::vector<slot_id> ids;
  explicit grouped(std::size_t capacity, std::size_t slots = 4) : h(params(slots), capacity) {
    ids = h.warm(slots);
    for (std::size_t i = 0; i < ids.size(); ++i) h.pool.set_group(ids[i], i % 2);
  }
  static pool_params params(std::size_t slots) {
    auto p = base_params();
    p.max_size = slots;  // no growth beyond the slots under test
    return p;
  }
  request_outcome req(slot_group prefer, request_kind k = shared) {
    auto r = h.pool.request(h.now, k, h.now + 1000ms, prefer);
    h.pump();
    return r;
  }
  bool in_group(slot_id s, slot_group g) const {
    for (std::size_t i = 0; i < ids.size(); ++i)
      if (ids[i] == s) return i % 2 == g;
    return false;
  }
};

TEST(pool_core_group, shared_requests_stay_on_the_preferred_group_while_it_has_room) {
  grouped t(64);
  // Without a preference, four requests would take one slot each (least
  // loaded first). Preferring group 1, the first two take its two idle slots
  // and the next ones stay there while the skew bound allows.
  for (int i = 0; i < 4; ++i) {
    auto r = t.req(1);
    ASSERT_EQ(r.what, request_outcome::kind::granted);
    EXPECT_TRUE(t.in_group(r.slot, 1)) << "request " << i << " went to slot " << r.slot << ", outside group 1";
  }
  EXPECT_EQ(t.h.pool.load_of(t.ids[1]) + t.h.pool.load_of(t.ids[3]), 4u);
  EXPECT_EQ(t.h.pool.load_of(t.ids[0]) + t.h.pool.load_of(t.ids[2]), 0u);
}

TEST(pool_core_group, callers_gathered_on_one_group_still_spread_with_a_bounded_skew) {
  grouped t(1000);
  // Every caller prefers group 0: group 1's slots must still get work, and
  // no group-0 slot may carry more than twice the least-loaded slot's load
  // plus one when a request lands on it.
  for (int i = 0; i < 200; ++i) {
    std::size_t least = SIZE_MAX;
    for (slot_id s : t.ids) least = std::min(least, t.h.pool.load_of(s));
    auto r = t.req(0);
    ASSERT_EQ(r.what, request_outcome::kind::granted);
    EXPECT_LE(t.h.pool.load_of(r.slot) - 1, 2 * least + 1) << "request " << i;
  }
  const std::size_t other = t.h.pool.load_of(t.ids[1]) + t.h.pool.load_of(t.ids[3]);
  const std::size_t own = t.h.pool.load_of(t.ids[0]) + t.h.pool.load_of(t.ids[2]);
  EXPECT_EQ(own + other, 200u);
  EXPECT_GE(other, 50u) << "group 1 got " << other << " of 200";
  EXPECT_GT(own, other) << "the preference gave group 0 no more than the others";
}

TEST(pool_core_group, a_full_group_falls_back_to_the_least_loaded_slot) {
  grouped t(2);
  // Group 0's two slots take two requests each; the fifth goes elsewhere.
  std::vector<request_outcome> got;
  for (int i = 0; i < 6; ++i) got.push_back(t.req(0));
  for (auto& r : got) ASSERT_EQ(r.what, request_outcome::kind::granted);
  EXPECT_EQ(t.h.pool.load_of(t.ids[0]), 2u);
  EXPECT_EQ(t.h.pool.load_of(t.ids[2]), 2u);
  EXPECT_EQ(t.h.pool.load_of(t.ids[1]) + t.h.pool.load_of(t.ids[3]), 2u);
}

TEST(pool_core_group, no_preference_or_an_unknown_group_takes_the_least_loaded_slot) {
  grouped t(64);
  std::vector<slot_id> seen;
  for (int i = 0; i < 2; ++i) seen.push_back(t.req(no_slot_group).slot);
  for (int i = 0; i < 2; ++i) seen.push_back(t.req(7).slot);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, t.ids) << "four requests must take the four idle slots, one each";
}

TEST(pool_core_group, an_exclusive_request_takes_an_idle_slot_of_its_group) {
  grouped t(4);
  auto r = t.req(1, exclusive);
  ASSERT_EQ(r.what, request_outcome::kind::granted);
  EXPECT_TRUE(t.in_group(r.slot, 1)) << "lease went to slot " << r.slot;
  auto r2 = t.req(1, exclusive);
  ASSERT_EQ(r2.what, request_outcome::kind::granted);
  EXPECT_TRUE(t.in_group(r2.slot, 1));
  // Group 1 has no idle slot left: the next lease takes one elsewhere.
  auto r3 = t.req(1, exclusive);
  ASSERT_EQ(r3.what, request_outcome::kind::granted);
  EXPECT_TRUE(t.in_group(r3.slot, 0));
}

TEST(pool_core_group, a_busy_slot_of_the_group_while_another_is_idle_does_not_grow_the_pool) {
  auto p = base_params();
  p.max_size = 4;
  harness h(p, 64);
  const auto ids = h.warm(2);
  h.pool.set_group(ids[0], 0);
  h.pool.set_group(ids[1], 1);
  ASSERT_EQ(h.pool.request(h.now, shared, h.now + 1000ms, 0).slot, ids[0]);
  h.pump();
  // ids[0] is busy with 1, ids[1] idle: the preference takes ids[0] again,
  // and an idle slot exists, so no connect is opened.
  auto r = h.pool.request(h.now, shared, h.now + 1000ms, 0);
  h.pump();
  EXPECT_EQ(r.slot, ids[0]);
  EXPECT_TRUE(h.pending_opens.empty()) << "opened " << h.pending_opens.size() << " connection(s)";
}

TEST(pool_core_group, a_slot_due_for_its_health_check_is_not_preferred) {
  auto p = grouped::params(2);
  p.health_check_interval = 100ms;
  harness h(p, 64);
  const auto ids = h.warm(2);
  h.pool.set_group(ids[0], 0);
  h.pool.set_group(ids[1], 1);
  // ids[0] used at +60 ms; at +120 ms only ids[1] is past the interval (no
  // tick has run, as when a driver ticks late).
  h.now += 60ms;
  ASSERT_EQ(h.req().slot, ids[0]);
  h.release(ids[0]);
  h.now += 60ms;
  auto r = h.pool.request(h.now, shared, h.now + 1000ms, 1);
  h.pump();
  ASSERT_EQ(r.what, request_outcome::kind::granted);
  EXPECT_EQ(r.slot, ids[0]) << "the slot due for its check was handed out unchecked";
}

}  // namespace
