// latency_recorder: see latency_recorder.hpp.
#include "core/metrics/latency_recorder.hpp"

namespace pgpipe::detail {

std::size_t latency_recorder::bucket_of(std::chrono::nanoseconds d) noexcept {
  const auto us_ceil = (d.count() + 999) / 1000;  // "<= bound" on whole microseconds, rounding up
  std::size_t i = 0;
  // 16 bounds: a linear scan beats a binary search's branches at this size,
  // and most samples stop in the first few.
  while (i < latency_histogram::bounds_us.size() && us_ceil > latency_histogram::bounds_us[i]) ++i;
  return i;
}

std::size_t latency_recorder::my_shard() noexcept {
  static std::atomic<std::size_t> next{0};
  thread_local const std::size_t mine = next.fetch_add(1, std::memory_order_relaxed) % shard_count;
  return mine;
}

void latency_recorder::record(std::chrono::nanoseconds d) noexcept {
  if (d.count() < 0) d = std::chrono::nanoseconds(0);  // a clock read on another core may be a hair earlier
  auto& s = shards_[my_shard()];
  s.counts[bucket_of(d)].fetch_add(1, std::memory_order_relaxed);
  s.sum_ns.fetch_add(static_cast<std::uint64_t>(d.count()), std::memory_order_relaxed);
}

latency_histogram latency_recorder::snapshot() const noexcept {
  std::array<std::uint64_t, bucket_count> counts{};
  std::uint64_t sum = 0;
  for (const auto& s : shards_) {
    for (std::size_t i = 0; i < bucket_count; ++i) counts[i] += s.counts[i].load(std::memory_order_relaxed);
    sum += s.sum_ns.load(std::memory_order_relaxed);
  }
  latency_histogram h;
  std::uint64_t running = 0;
  for (std::size_t i = 0; i < h.le.size(); ++i) {
    running += counts[i];
    h.le[i] = running;
  }
  h.count = running + counts[bucket_count - 1];
  h.sum = std::chrono::nanoseconds(static_cast<std::int64_t>(sum));
  return h;
}

}  // namespace pgpipe::detail
