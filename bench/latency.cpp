#include "latency.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace pgpipe::bench {

// Values below 64 map to themselves. Above, a value with highest bit b keeps
// its top 7 bits: bucket = 64 * (b - 5) + (value >> (b - 6)) - 64, which
// gives 64 evenly spaced buckets per power of two.
std::size_t latency_histogram::index_of(std::uint64_t v) noexcept {
  if (v < sub_buckets) return static_cast<std::size_t>(v);
  const int top = std::bit_width(v) - 1;  // >= sub_bucket_bits
  if (top > max_exponent) return bucket_count - 1;
  const int shift = top - sub_bucket_bits;
  const std::uint64_t mantissa = v >> shift;  // in [64, 128)
  return static_cast<std::size_t>(sub_buckets * (shift + 1) + (mantissa - sub_buckets));
}

std::uint64_t latency_histogram::upper_edge(std::size_t index) noexcept {
  if (index < sub_buckets) return index;
  const std::size_t shift = index / sub_buckets - 1;
  const std::uint64_t mantissa = sub_buckets + index % sub_buckets;
  return ((mantissa + 1) << shift) - 1;
}

void latency_histogram::record(std::uint64_t micros) noexcept {
  buckets_[index_of(micros)].fetch_add(1, std::memory_order_relaxed);
  std::uint64_t seen = max_.load(std::memory_order_relaxed);
  while (micros > seen && !max_.compare_exchange_weak(seen, micros, std::memory_order_relaxed)) {
  }
}

void latency_histogram::merge(const latency_histogram& other) noexcept {
  for (std::size_t i = 0; i < bucket_count; ++i) {
    const auto n = other.buckets_[i].load(std::memory_order_relaxed);
    if (n != 0) buckets_[i].fetch_add(n, std::memory_order_relaxed);
  }
  const auto m = other.max();
  std::uint64_t seen = max_.load(std::memory_order_relaxed);
  while (m > seen && !max_.compare_exchange_weak(seen, m, std::memory_order_relaxed)) {
  }
}

std::uint64_t latency_histogram::count() const noexcept {
  std::uint64_t total = 0;
  for (const auto& b : buckets_) total += b.load(std::memory_order_relaxed);
  return total;
}

std::uint64_t latency_histogram::percentile(double q) const noexcept {
  const std::uint64_t total = count();
  if (total == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const auto rank = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(total))));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < bucket_count; ++i) {
    seen += buckets_[i].load(std::memory_order_relaxed);
    if (seen >= rank) return std::min(upper_edge(i), max());
  }
  return max();
}

}  // namespace pgpipe::bench
