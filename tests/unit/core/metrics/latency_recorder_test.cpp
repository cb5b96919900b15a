// latency_recorder: samples land in the bucket Prometheus' `le` means
// (<= bound), counts are cumulative, nothing is lost across threads.
#include "core/metrics/latency_recorder.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using pgpipe::latency_histogram;
using pgpipe::detail::latency_recorder;

TEST(latency_recorder, a_sample_on_a_bound_belongs_to_that_bound) {
  EXPECT_EQ(latency_recorder::bucket_of(0ns), 0u);
  EXPECT_EQ(latency_recorder::bucket_of(100us), 0u);
  EXPECT_EQ(latency_recorder::bucket_of(100us + 1ns), 1u);
  EXPECT_EQ(latency_recorder::bucket_of(250us), 1u);
  EXPECT_EQ(latency_recorder::bucket_of(1ms), 3u);
  EXPECT_EQ(latency_recorder::bucket_of(10s), latency_histogram::bounds_us.size() - 1);
  EXPECT_EQ(latency_recorder::bucket_of(10s + 1us), latency_histogram::bounds_us.size()) << "+Inf";
  EXPECT_EQ(latency_recorder::bucket_of(std::chrono::hours(24)), latency_histogram::bounds_us.size());
}

TEST(latency_recorder, snapshot_is_cumulative_with_count_and_sum) {
  latency_recorder r;
  r.record(50us);    // <= 100us
  r.record(100us);   // <= 100us
  r.record(300us);   // <= 500us
  r.record(2s);      // <= 2.5s
  r.record(60s);     // +Inf only
  r.record(-5ns);    // clamped to 0
  const latency_histogram h = r.snapshot();
  EXPECT_EQ(h.count, 6u);
  EXPECT_EQ(h.le[0], 3u);  // 0.0001
  EXPECT_EQ(h.le[1], 3u);  // 0.00025
  EXPECT_EQ(h.le[2], 4u);  // 0.0005
  EXPECT_EQ(h.le[12], 4u);  // 1 s
  EXPECT_EQ(h.le[13], 5u);  // 2.5 s
  EXPECT_EQ(h.le.back(), 5u);  // 10 s: the 60 s sample is above every bound
  EXPECT_EQ(h.sum, 50us + 100us + 300us + 2s + 60s);
  for (std::size_t i = 1; i < h.le.size(); ++i) EXPECT_LE(h.le[i - 1], h.le[i]);
}

TEST(latency_recorder, concurrent_records_are_all_counted) {
  latency_recorder r;
  constexpr int threads = 6;
  constexpr int per_thread = 20'000;
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) r.record(std::chrono::microseconds(t * 1000 + 1));
    });
  for (auto& t : ts) t.join();
  const auto h = r.snapshot();
  EXPECT_EQ(h.count, std::uint64_t{threads} * per_thread);
  std::chrono::nanoseconds expected{0};
  for (int t = 0; t < threads; ++t) expected += std::chrono::microseconds(t * 1000 + 1) * per_thread;
  EXPECT_EQ(h.sum, expected);
  EXPECT_EQ(h.le[0], std::uint64_t{per_thread}) << "only thread 0's 1 us samples are <= 100 us";
}

}  // namespace
