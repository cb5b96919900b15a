// request_queue: one of pipeline_core's FIFOs of requests (waiting, written,
// a coalesced batch's finished ones) and the one fact next_timer() needs
// about it: whether the deadlines it counts rise from front to back.
//
// Why: with the default query_timeout every request has a deadline, and
// next_timer() is asked after every batch of work. While a queue's counted
// deadlines rise in queue order its first counted entry holds the earliest,
// so the question costs one entry instead of every request up to the depth.
// Requests of the pool arrive with now + query_timeout, in that order. The
// order can break only where an entry enters the queue or its deadline
// changes in place: both go through this type (push_back, insert,
// set_deadline), so no caller can forget the check. A full scan that finds
// the order again restores the short path.
//
// `Counts` is a stateless predicate: the entries whose deadlines count
// (the others' deadlines are never read). An entry's deadline is
// `req.deadline`; it changes in place only through set_deadline. Not
// thread-safe (one connection's core, on its loop).
#pragma once

#include "core/pool/pool_types.hpp"

#include <deque>
#include <memory_resource>
#include <utility>

namespace pgpipe::detail {

template <class Entry, class Counts>
class request_queue {
  using queue = std::pmr::deque<Entry>;

 public:
  using iterator = typename queue::iterator;
  using const_iterator = typename queue::const_iterator;

  explicit request_queue(std::pmr::memory_resource* memory) : q_(memory) {}

  bool empty() const noexcept { return q_.empty(); }
  std::size_t size() const noexcept { return q_.size(); }
  Entry& front() noexcept { return q_.front(); }
  const Entry& front() const noexcept { return q_.front(); }
  Entry& back() noexcept { return q_.back(); }
  const Entry& back() const noexcept { return q_.back(); }
  iterator begin() noexcept { return q_.begin(); }
  iterator end() noexcept { return q_.end(); }
  const_iterator begin() const noexcept { return q_.begin(); }
  const_iterator end() const noexcept { return q_.end(); }

  void push_back(Entry&& e) {
    note_push(e);
    q_.push_back(std::move(e));
  }
  /// At `pos`, which the caller chose by another order (submission): its
  /// deadline may sit anywhere among its neighbours', so the order is not
  /// assumed any more.
  iterator insert(const_iterator pos, Entry&& e) {
    sorted_ = false;
    return q_.insert(pos, std::move(e));
  }
  /// Removing an entry keeps the order of the rest.
  void pop_front() noexcept { q_.pop_front(); }
  iterator erase(const_iterator pos) { return q_.erase(pos); }
  void clear() noexcept {
    q_.clear();
    sorted_ = true;
  }

  /// Moves entry `e` (one of this queue's) to deadline `t`. Only a later
  /// deadline at the back keeps the order known.
  void set_deadline(Entry& e, time_point t) noexcept {
    if (&e != &q_.back() || t < e.req.deadline) sorted_ = false;
    e.req.deadline = t;
  }

  /// The earliest deadline of a counted entry (time_point::max() if none).
  time_point earliest() const noexcept {
    if (sorted_) {
      for (const Entry& e : q_)
        if (Counts{}(e)) return e.req.deadline;
      return time_point::max();
    }
    time_point first = time_point::max();
    time_point prev = time_point::min();
    bool in_order = true;
    for (const Entry& e : q_) {
      if (!Counts{}(e)) continue;
      if (e.req.deadline < first) first = e.req.deadline;
      if (e.req.deadline < prev) in_order = false;
      prev = e.req.deadline;
    }
    if (in_order) sorted_ = true;
    return first;
  }

  /// Gives the deque's block map back (it grows with the queue's peak and
  /// never shrinks); the queue must be empty. May throw std::bad_alloc
  /// (a fresh deque allocates its map), and then nothing changed.
  void release_map() { queue(q_.get_allocator()).swap(q_); }

 private:
  /// Clears sorted_ when `e` would sit behind a later counted deadline.
  void note_push(const Entry& e) noexcept {
    if (!sorted_ || !Counts{}(e) || q_.empty()) return;
    if (Counts{}(q_.back())) {
      if (e.req.deadline < q_.back().req.deadline) sorted_ = false;
      return;
    }
    note_push_behind_uncounted(e);
  }
  // A run of uncounted entries at the back (callers answered before their
  // Sync) is walked past, a few at most: past them the order is given up.
  void note_push_behind_uncounted(const Entry& e) noexcept {
    constexpr int max_walk = 8;
    int walked = 0;
    for (auto it = q_.rbegin(); it != q_.rend(); ++it) {
      if (Counts{}(*it)) {
        if (e.req.deadline < it->req.deadline) sorted_ = false;
        return;
      }
      if (++walked == max_walk) {
        sorted_ = false;
        return;
      }
    }
  }

  queue q_;
  /// Counted deadlines rise front to back (mutable: earliest()'s full scan
  /// records what it found).
  mutable bool sorted_ = true;
};

}  // namespace pgpipe::detail
