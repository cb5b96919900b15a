// request_table (async/request_table.hpp): the connection's requests by id,
// checked against a plain map under in-order and out-of-order completion.
#include "async/sansio/request_table.hpp"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>

namespace {

using pgpipe::detail::request_table;

TEST(request_table, ids_are_sequential_from_one) {
  request_table<int> t;
  EXPECT_EQ(t.next_id(), 1u);
  EXPECT_EQ(t.insert(std::make_shared<int>(10)), 1u);
  EXPECT_EQ(t.insert(std::make_shared<int>(20)), 2u);
  EXPECT_EQ(t.next_id(), 3u);
  ASSERT_NE(t.find(2), nullptr);
  EXPECT_EQ(*t.find(2), 20);
  EXPECT_EQ(t.find(0), nullptr);
  EXPECT_EQ(t.find(3), nullptr);
  EXPECT_EQ(t.find(~std::uint64_t{0}), nullptr) << "the core's own ids count down from the top";
}

TEST(request_table, take_out_of_order_keeps_the_others_and_ids_go_on) {
  request_table<int> t;
  for (int i = 1; i <= 4; ++i) t.insert(std::make_shared<int>(i));
  auto two = t.take(2);
  ASSERT_TRUE(two);
  EXPECT_EQ(*two, 2);
  EXPECT_EQ(t.take(2), nullptr) << "taken once only";
  EXPECT_EQ(t.find(2), nullptr);
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(*t.take(1), 1);
  EXPECT_EQ(*t.find(3), 3);
  EXPECT_EQ(t.insert(std::make_shared<int>(5)), 5u) << "ids never restart after the front is dropped";
  EXPECT_EQ(*t.take(4), 4);
  EXPECT_EQ(*t.take(3), 3);
  EXPECT_EQ(*t.take(5), 5);
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.next_id(), 6u);
}

TEST(request_table, matches_a_map_under_random_completion_order) {
  request_table<std::uint64_t> t;
  std::map<std::uint64_t, std::uint64_t> model;
  std::mt19937_64 rng(15);
  for (int step = 0; step < 20000; ++step) {
    if (model.empty() || rng() % 3 != 0) {
      const auto id = t.next_id();
      EXPECT_EQ(t.insert(std::make_shared<std::uint64_t>(id * 7)), id);
      model[id] = id * 7;
    } else {
      // Mostly the oldest (FIFO), sometimes any (cancel, timeout).
      auto it = model.begin();
      if (rng() % 4 == 0) std::advance(it, static_cast<long>(rng() % model.size()));
      auto v = t.take(it->first);
      ASSERT_TRUE(v);
      EXPECT_EQ(*v, it->second);
      model.erase(it);
    }
    ASSERT_EQ(t.size(), model.size());
  }
  std::size_t seen = 0;
  t.for_each([&](const std::shared_ptr<std::uint64_t>& v) {
    ++seen;
    EXPECT_EQ(model.count(*v / 7), 1u);
  });
  EXPECT_EQ(seen, model.size());
  for (const auto& [id, v] : model) EXPECT_EQ(*t.find(id), v);
}

}  // namespace
