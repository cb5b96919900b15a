// request_table: one connection's submitted, not yet completed requests, by
// pipeline id. Ids are handed out in order (1, 2, 3...) and requests mostly
// complete in that order (one FIFO per connection), so a ring of slots
// indexed by `id - base` replaces a hash map: no node allocation and no
// hashing per query. A request completed out of order (cancelled, timed
// out) leaves an empty slot until everything older is gone, so the ring
// holds at most the ids submitted since the oldest request still pending.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>

namespace pgpipe::detail {

template <class T>
class request_table {
 public:
  /// The next id to be inserted (ids start at 1).
  std::uint64_t next_id() const noexcept { return base_ + slots_.size(); }
  /// Stores `v` under next_id() and returns that id.
  std::uint64_t insert(std::shared_ptr<T> v) {
    slots_.push_back(std::move(v));
    ++live_;
    return next_id() - 1;
  }
  /// The request stored under `id`, or null (never inserted, or taken).
  T* find(std::uint64_t id) const noexcept {
    if (id < base_ || id - base_ >= slots_.size()) return nullptr;
    return slots_[id - base_].get();
  }
  std::shared_ptr<T> find_shared(std::uint64_t id) const {
    if (id < base_ || id - base_ >= slots_.size()) return nullptr;
    return slots_[id - base_];
  }
  /// Removes and returns the request under `id` (null if there is none).
  std::shared_ptr<T> take(std::uint64_t id) {
    if (id < base_ || id - base_ >= slots_.size()) return nullptr;
    auto v = std::move(slots_[id - base_]);
    if (v) --live_;
    while (!slots_.empty() && !slots_.front()) {
      slots_.pop_front();
      ++base_;
    }
    return v;
  }
  std::size_t size() const noexcept { return live_; }
  bool empty() const noexcept { return live_ == 0; }
  template <class F>
  void for_each(F&& f) const {
    for (const auto& v : slots_)
      if (v) f(v);
  }

 private:
  std::deque<std::shared_ptr<T>> slots_;
  std::uint64_t base_ = 1;  ///< the id of slots_.front()
  std::size_t live_ = 0;
};

}  // namespace pgpipe::detail
