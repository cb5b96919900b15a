#include "malloc_count.hpp"

#include <atomic>
#include <cstddef>

extern "C" {
void* __libc_malloc(std::size_t n);
void* __libc_calloc(std::size_t n, std::size_t size);
void* __libc_realloc(void* p, std::size_t n);
}

namespace {
std::atomic<bool> counting{false};
std::atomic<std::uint64_t> allocations{0};
void count_one() noexcept {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

extern "C" {
void* malloc(std::size_t n) {
  count_one();
  return __libc_malloc(n);
}
void* calloc(std::size_t n, std::size_t size) {
  count_one();
  return __libc_calloc(n, size);
}
void* realloc(void* p, std::size_t n) {
  count_one();
  return __libc_realloc(p, n);
}
}

namespace pgpipe::bench::malloc_count {

void start() noexcept {
  allocations.store(0);
  counting.store(true);
}

std::uint64_t stop() noexcept {
  counting.store(false);
  return allocations.load();
}

}  // namespace pgpipe::bench::malloc_count
