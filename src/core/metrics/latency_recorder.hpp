// latency_recorder: the writer side of a latency_histogram (stats.hpp),
// recorded on every query by several threads at once.
//
// Lock-free: a sample is two relaxed atomic adds. Counters are split in
// shards, one per thread (round-robin), each on its own cache lines, so two
// event loops recording at the same time do not fight over one line; the
// reader adds the shards up. A snapshot taken during recording may show a
// sum a sample or two ahead of (or behind) the counts: fine for monitoring.
#pragma once

#include <pgpipe/stats.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace pgpipe::detail {

class latency_recorder {
 public:
  static constexpr std::size_t bucket_count = latency_histogram::bounds_us.size() + 1;  // + the +Inf bucket

  /// The bucket of a sample: the first bound it does not exceed, or the last (+Inf).
  static std::size_t bucket_of(std::chrono::nanoseconds d) noexcept;

  void record(std::chrono::nanoseconds d) noexcept;
  latency_histogram snapshot() const noexcept;

 private:
  static constexpr std::size_t shard_count = 8;
  struct alignas(64) shard {
    std::array<std::atomic<std::uint64_t>, bucket_count> counts{};
    std::atomic<std::uint64_t> sum_ns{0};
  };
  static std::size_t my_shard() noexcept;
  std::array<shard, shard_count> shards_{};
};

}  // namespace pgpipe::detail
