// block_cache: the memory of pipeline_core's request queues.
//
// Why: a std::deque used as a FIFO that only moves frees a block at its
// front and allocates one at its back every few entries, about one malloc
// and one free per request. Keeping a few freed blocks for the next ones
// saves both. std::pmr::unsynchronized_pool_resource does that too, but keeps
// every block it ever handed out until it dies: a connection that once
// queued a million statements (a lease pipelining a long script) would hold
// that peak (hundreds of MB) for its whole life. This cache keeps at most
// `keep` freed blocks and gives the rest back to its upstream at once, so
// memory follows the queue down as it drains.
//
// Not thread-safe (one connection's core, on its loop). A block is reused
// only for a request of exactly its size and alignment.
#pragma once

#include <cstddef>
#include <memory_resource>

namespace pgpipe::detail {

class block_cache final : public std::pmr::memory_resource {
 public:
  /// `upstream` must outlive the cache.
  explicit block_cache(std::pmr::memory_resource* upstream, std::size_t keep = 32) noexcept
      : upstream_(upstream), keep_(keep) {}
  ~block_cache() override;
  block_cache(const block_cache&) = delete;
  block_cache& operator=(const block_cache&) = delete;

  /// Larger blocks (a deque's map of block pointers, which grows with the
  /// queue's peak) always go back upstream: only the FIFO's blocks are kept.
  static constexpr std::size_t max_block = 4096;

  /// Freed blocks kept for reuse (at most `keep`).
  std::size_t kept() const noexcept { return kept_; }

 private:
  // Written into a kept block itself: a kept block costs no memory of its own.
  struct node {
    node* next;
    std::size_t bytes;
    std::size_t align;
  };

  void* do_allocate(std::size_t bytes, std::size_t align) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t align) override;
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }

  std::pmr::memory_resource* upstream_;
  std::size_t keep_;
  node* free_ = nullptr;
  std::size_t kept_ = 0;
};

}  // namespace pgpipe::detail
