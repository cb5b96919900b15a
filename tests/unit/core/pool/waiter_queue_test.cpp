// waiter_queue on its own: FIFO per kind, deadline order, ids, and a seeded
// randomized comparison against a plain ordered map. Time is a fake clock
// (time_points the test makes); nothing sleeps.
#include "core/pool/waiter_queue.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <utility>
#include <vector>

namespace {

using namespace std::chrono_literals;
using pgpipe::detail::request_kind;
using pgpipe::detail::time_point;
using pgpipe::detail::waiter_id;
using pgpipe::detail::waiter_queue;

constexpr auto shared = request_kind::shared;
constexpr auto exclusive = request_kind::exclusive;
const time_point t0{std::chrono::seconds(1000)};

TEST(waiter_queue, ids_start_at_one_and_grow_never_reused) {
  waiter_queue q;
  const waiter_id a = q.push(shared, t0 + 1s);
  const waiter_id b = q.push(exclusive, t0 + 1s);
  EXPECT_EQ(a, 1u) << "0 is free to mean 'none'";
  EXPECT_GT(b, a);
  q.erase(b);
  q.clear();
  EXPECT_GT(q.push(shared, t0 + 1s), b) << "an id is never handed out twice";
}

TEST(waiter_queue, each_kind_is_served_in_fifo_order) {
  waiter_queue q;
  const waiter_id s1 = q.push(shared, t0 + 5s);
  const waiter_id e1 = q.push(exclusive, t0 + 1s);
  const waiter_id s2 = q.push(shared, t0 + 1s);  // earlier deadline, still behind s1
  const waiter_id e2 = q.push(exclusive, t0 + 9s);
  EXPECT_EQ(q.front(shared), s1);
  EXPECT_EQ(q.front(exclusive), e1);
  q.erase(s1);
  EXPECT_EQ(q.front(shared), s2);
  q.erase(e1);
  EXPECT_EQ(q.front(exclusive), e2);
  q.erase(s2);
  q.erase(e2);
  EXPECT_EQ(q.front(shared), 0u);
  EXPECT_EQ(q.front(exclusive), 0u);
}

TEST(waiter_queue, a_waiter_erased_from_the_middle_is_skipped) {
  waiter_queue q;
  const waiter_id a = q.push(shared, t0 + 1s);
  const waiter_id b = q.push(shared, t0 + 1s);
  const waiter_id c = q.push(shared, t0 + 1s);
  q.erase(b);  // a cancel: not at the front
  EXPECT_FALSE(q.contains(b));
  q.erase(a);
  EXPECT_EQ(q.front(shared), c);
  EXPECT_EQ(q.size(), 1u);
}

// A long queue whose waiters behind the front all leave (cancels, expiries):
// the two still queued keep their places.
TEST(waiter_queue, mass_cancellation_behind_the_front_keeps_fifo) {
  waiter_queue q;
  std::vector<waiter_id> ids;
  for (int i = 0; i < 1000; ++i) ids.push_back(q.push(shared, t0 + 1s));
  for (std::size_t i = 1; i + 1 < ids.size(); ++i) q.erase(ids[i]);
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.front(shared), ids.front());
  q.erase(ids.front());
  EXPECT_EQ(q.front(shared), ids.back());
  const waiter_id later = q.push(shared, t0 + 1s);
  q.erase(ids.back());
  EXPECT_EQ(q.front(shared), later);
}

TEST(waiter_queue, counts_follow_push_and_erase_per_kind) {
  waiter_queue q;
  EXPECT_EQ(q.size(), 0u);
  const waiter_id a = q.push(shared, t0 + 1s);
  q.push(shared, t0 + 1s);
  const waiter_id e = q.push(exclusive, t0 + 1s);
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(q.waiting(shared), 2u);
  EXPECT_EQ(q.waiting(exclusive), 1u);
  q.erase(a);
  q.erase(e);
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.waiting(shared), 1u);
  EXPECT_EQ(q.waiting(exclusive), 0u);
}

TEST(waiter_queue, erase_returns_the_waiters_kind_and_deadline) {
  waiter_queue q;
  q.push(shared, t0 + 1s);
  const waiter_id e = q.push(exclusive, t0 + 7s);
  const waiter_queue::waiter w = q.erase(e);
  EXPECT_EQ(w.kind, exclusive);
  EXPECT_EQ(w.deadline, t0 + 7s);
}

TEST(waiter_queue, earliest_deadline_across_kinds_older_first_on_a_tie) {
  waiter_queue q;
  EXPECT_FALSE(q.earliest_deadline().has_value());
  const waiter_id a = q.push(shared, t0 + 3s);
  const waiter_id b = q.push(exclusive, t0 + 2s);
  const waiter_id c = q.push(shared, t0 + 2s);
  ASSERT_TRUE(q.earliest_deadline().has_value());
  EXPECT_EQ(*q.earliest_deadline(), std::make_pair(t0 + 2s, b));
  q.erase(b);
  EXPECT_EQ(*q.earliest_deadline(), std::make_pair(t0 + 2s, c));
  q.erase(c);
  EXPECT_EQ(*q.earliest_deadline(), std::make_pair(t0 + 3s, a));
}

TEST(waiter_queue, ids_oldest_first_spans_both_kinds) {
  waiter_queue q;
  const waiter_id a = q.push(exclusive, t0 + 9s);
  const waiter_id b = q.push(shared, t0 + 1s);
  const waiter_id c = q.push(exclusive, t0 + 5s);
  const waiter_id d = q.push(shared, t0 + 2s);
  q.erase(c);
  EXPECT_EQ(q.ids_oldest_first(), (std::vector<waiter_id>{a, b, d}));
}

TEST(waiter_queue, clear_forgets_every_waiter) {
  waiter_queue q;
  const waiter_id a = q.push(shared, t0 + 1s);
  q.push(exclusive, t0 + 1s);
  q.clear();
  EXPECT_EQ(q.size(), 0u);
  EXPECT_FALSE(q.contains(a));
  EXPECT_EQ(q.waiting(shared), 0u);
  EXPECT_EQ(q.front(shared), 0u);
  EXPECT_EQ(q.front(exclusive), 0u);
  EXPECT_FALSE(q.earliest_deadline().has_value());
}

// Thousands of cancellations in the middle (the lazy deletion and its
// compaction) against a plain ordered map that keeps every live waiter.
TEST(waiter_queue, random_pushes_and_erases_match_an_ordered_map) {
  for (std::uint32_t seed : {1u, 2u, 3u, 17u, 99u}) {
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    waiter_queue q;
    std::map<waiter_id, waiter_queue::waiter> model;
    for (int step = 0; step < 20'000; ++step) {
      if (model.empty() || (model.size() < 300 && rng() % 100 < 55)) {
        const auto kind = rng() % 3 == 0 ? exclusive : shared;
        const time_point deadline = t0 + std::chrono::milliseconds(rng() % 500);
        const waiter_id id = q.push(kind, deadline);
        ASSERT_TRUE(model.empty() || id > model.rbegin()->first);
        model.emplace(id, waiter_queue::waiter{kind, deadline});
      } else {
        // Mostly from anywhere (cancel, expiry), sometimes the front (grant).
        auto it = model.begin();
        if (rng() % 4 != 0) std::advance(it, static_cast<std::ptrdiff_t>(rng() % model.size()));
        const waiter_queue::waiter w = q.erase(it->first);
        ASSERT_EQ(w.kind, it->second.kind);
        ASSERT_EQ(w.deadline, it->second.deadline);
        model.erase(it);
      }
      std::optional<waiter_id> want_shared, want_excl;
      std::optional<std::pair<time_point, waiter_id>> want_deadline;
      std::size_t shared_count = 0;
      for (const auto& [id, w] : model) {
        auto& front = w.kind == shared ? want_shared : want_excl;
        if (!front) front = id;
        if (w.kind == shared) ++shared_count;
        if (!want_deadline || std::make_pair(w.deadline, id) < *want_deadline) want_deadline = {w.deadline, id};
      }
      ASSERT_EQ(q.front(shared), want_shared.value_or(0)) << "step " << step;
      ASSERT_EQ(q.front(exclusive), want_excl.value_or(0)) << "step " << step;
      ASSERT_EQ(q.earliest_deadline(), want_deadline) << "step " << step;
      ASSERT_EQ(q.size(), model.size());
      ASSERT_EQ(q.waiting(shared), shared_count);
      ASSERT_EQ(q.waiting(exclusive), model.size() - shared_count);
    }
  }
}

}  // namespace
