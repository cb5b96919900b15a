// A latency histogram cheap enough to record every query at 100k+ q/s from
// several threads: log-linear buckets (HdrHistogram's layout, 64 sub-buckets
// per power of two, so any recorded value is within 1/64 ≈ 1.6% of the
// truth), one relaxed atomic increment per sample, no allocation, no lock.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace pgpipe::bench {

class latency_histogram {
 public:
  /// Values are microseconds; anything past ~2^40 µs (12 days) is clamped.
  static constexpr int sub_bucket_bits = 6;
  static constexpr std::uint64_t sub_buckets = 1u << sub_bucket_bits;
  static constexpr int max_exponent = 40;
  static constexpr std::size_t bucket_count = sub_buckets * (max_exponent - sub_bucket_bits + 2);

  /// Thread-safe, wait-free.
  void record(std::uint64_t micros) noexcept;
  /// Adds other's counts into this one (not atomic as a whole: call when
  /// nobody records into `other`).
  void merge(const latency_histogram& other) noexcept;

  /// The following read a snapshot; call them once recording has stopped.
  std::uint64_t count() const noexcept;
  std::uint64_t max() const noexcept { return max_.load(std::memory_order_relaxed); }
  /// Smallest recorded bucket value v such that a fraction >= q of samples
  /// are <= v (q in [0,1]); 0 when empty. Reported as the bucket's upper edge,
  /// capped at max(), so a percentile never understates the latency.
  std::uint64_t percentile(double q) const noexcept;

  static std::size_t index_of(std::uint64_t micros) noexcept;
  /// Largest value that falls into bucket `index`.
  static std::uint64_t upper_edge(std::size_t index) noexcept;

 private:
  std::array<std::atomic<std::uint64_t>, bucket_count> buckets_{};
  std::atomic<std::uint64_t> max_{0};
};

}  // namespace pgpipe::bench
