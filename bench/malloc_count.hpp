// Every malloc/calloc/realloc of the process (libpq's included) counted
// while switched on: the micro-benchmarks' allocations per unit of work.
// malloc_count.cpp defines the C library's entry points in the executable
// that links it, so each call passes through the count on its way to glibc.
#pragma once

#include <cstdint>

namespace pgpipe::bench::malloc_count {

/// Zeroes the count and starts counting.
void start() noexcept;
/// Stops counting; the allocations since start().
std::uint64_t stop() noexcept;

}  // namespace pgpipe::bench::malloc_count
