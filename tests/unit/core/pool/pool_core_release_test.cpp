// pool_core's batched release: a driver that gives back n shared units of a
// slot in one call (the async connection, once per batch of completions)
// must leave the pool and its waiters exactly where n single releases would.
#include "pool_core_harness.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <vector>

namespace {
using namespace pgpipe::test::pool_harness;

// A pool of one slot of capacity 4, fully loaded, with `queued` shared
// waiters behind it (and, when asked, an exclusive one between them).
struct loaded_pool {
  harness h;
  slot_id slot = 0;
  std::vector<waiter_id> waiters;

  loaded_pool(std::size_t queued, bool exclusive_between) : h(one_slot(), 4) {
    slot = h.warm(1).at(0);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(h.req().what, request_outcome::kind::granted);
    for (std::size_t i = 0; i < queued; ++i) {
      const auto out = h.req(i == 1 && exclusive_between ? exclusive : shared);
      EXPECT_EQ(out.what, request_outcome::kind::queued);
      waiters.push_back(out.waiter);
    }
  }
  static pool_params one_slot() {
    auto p = base_params();
    p.max_size = 1;
    return p;
  }
  void release_one_by_one(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) h.release(slot);
  }
  void release_at_once(std::size_t n) {
    h.pool.release(h.now, slot, shared, n);
    h.pump();
  }
};

TEST(pool_core_release, n_units_at_once_grant_the_waiters_n_single_releases_grant) {
  loaded_pool single(5, false);
  loaded_pool batch(5, false);
  single.release_one_by_one(3);
  batch.release_at_once(3);
  // The three oldest waiters, in their order, on the same slot.
  ASSERT_EQ(batch.h.grant_order.size(), 3u);
  EXPECT_EQ(batch.h.grant_order, single.h.grant_order);
  EXPECT_EQ(batch.h.grant_order, (std::vector<waiter_id>(batch.waiters.begin(), batch.waiters.begin() + 3)));
  EXPECT_EQ(batch.h.pool.load_of(batch.slot), single.h.pool.load_of(single.slot));
  EXPECT_EQ(batch.h.pool.load_of(batch.slot), 4u);
  EXPECT_EQ(batch.h.pool.state_of(batch.slot), slot_state::busy);
}

TEST(pool_core_release, an_exclusive_waiter_keeps_its_place_behind_a_batched_release) {
  // Waiters: shared, exclusive, shared, shared. The exclusive one reserves
  // the slot: single releases grant the first shared waiter, then hold the
  // freed units for the lease; a batch must do the same, not hand them to
  // the shared waiters queued behind it.
  loaded_pool single(4, true);
  loaded_pool batch(4, true);
  single.release_one_by_one(4);
  batch.release_at_once(4);
  EXPECT_EQ(batch.h.grant_order, single.h.grant_order);
  EXPECT_EQ(batch.h.pool.load_of(batch.slot), single.h.pool.load_of(single.slot));
  EXPECT_EQ(batch.h.pool.state_of(batch.slot), single.h.pool.state_of(single.slot));
}

TEST(pool_core_release, more_units_than_grants_empties_the_slot_as_ignored_releases_would) {
  loaded_pool single(0, false);
  loaded_pool batch(0, false);
  single.release_one_by_one(6);  // the last two find no grant and change nothing
  batch.release_at_once(6);
  EXPECT_EQ(single.h.pool.load_of(single.slot), 0u);
  EXPECT_EQ(batch.h.pool.load_of(batch.slot), 0u);
  EXPECT_EQ(batch.h.pool.state_of(batch.slot), slot_state::idle);
  // The slot is whole again: a lease can take it.
  EXPECT_EQ(batch.h.req(exclusive).what, request_outcome::kind::granted);
}

TEST(pool_core_release, zero_units_change_nothing) {
  loaded_pool batch(1, false);
  batch.release_at_once(0);
  EXPECT_TRUE(batch.h.grant_order.empty());
  EXPECT_EQ(batch.h.pool.load_of(batch.slot), 4u);
}

}  // namespace
