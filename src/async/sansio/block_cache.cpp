// block_cache: see block_cache.hpp.
#include "async/sansio/block_cache.hpp"

#include <cstddef>
#include <new>

namespace pgpipe::detail {

block_cache::~block_cache() {
  while (free_ != nullptr) {
    node* n = free_;
    free_ = n->next;
    upstream_->deallocate(n, n->bytes, n->align);
  }
}

void* block_cache::do_allocate(std::size_t bytes, std::size_t align) {
  // A FIFO frees and allocates blocks of one size: the match is at the front.
  for (node** at = &free_; *at != nullptr; at = &(*at)->next) {
    node* n = *at;
    if (n->bytes != bytes || n->align != align) continue;
    *at = n->next;
    --kept_;
    return n;
  }
  return upstream_->allocate(bytes, align);
}

void block_cache::do_deallocate(void* p, std::size_t bytes, std::size_t align) {
  if (kept_ >= keep_ || bytes < sizeof(node) || bytes > max_block || align < alignof(node) ||
      align > alignof(std::max_align_t)) {
    upstream_->deallocate(p, bytes, align);
    return;
  }
  free_ = ::new (p) node{free_, bytes, align};
  ++kept_;
}

}  // namespace pgpipe::detail
