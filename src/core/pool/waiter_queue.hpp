// waiter_queue: the pool's queued requests, sans-IO.
//
// Holds each queued request's kind and deadline, answers "who is next" per
// kind in FIFO order and "who expires first" in deadline order. It grants,
// fails and times out nobody itself: pool_core decides that and then erases
// the waiter here. Not thread-safe (pool_core's caller serializes).
//
// Ids start at 1 and grow, never reused: comparing the fronts of the two
// kinds gives the global FIFO order, and 0 can mean "none".
#pragma once

#include "core/pool/pool_types.hpp"

#include <cstddef>
#include <deque>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pgpipe::detail {

class waiter_queue {
 public:
  struct waiter {
    request_kind kind;
    time_point deadline;
  };

  /// Queues a request; returns its id (greater than every id before it).
  waiter_id push(request_kind kind, time_point deadline);

  /// Forgets a queued waiter (granted, failed, cancelled) and returns its
  /// record. Precondition: contains(id).
  waiter erase(waiter_id id);

  bool contains(waiter_id id) const { return waiters_.contains(id); }
  /// Queued waiters, both kinds.
  std::size_t size() const noexcept { return waiters_.size(); }
  /// Queued waiters of one kind.
  std::size_t waiting(request_kind kind) const noexcept {
    return kind == request_kind::shared ? shared_live_ : excl_live_;
  }

  /// The oldest queued waiter of `kind`, or 0 when none is. Not const: it
  /// drops the ids of erased waiters it finds at the front.
  waiter_id front(request_kind kind) {
    std::deque<waiter_id>& q = kind == request_kind::shared ? shared_q_ : excl_q_;
    while (!q.empty() && !waiters_.contains(q.front())) q.pop_front();
    return q.empty() ? 0 : q.front();
  }

  /// The earliest deadline and its waiter (the older one on a tie), if any
  /// waiter is queued.
  std::optional<std::pair<time_point, waiter_id>> earliest_deadline() const {
    if (deadlines_.empty()) return std::nullopt;
    return *deadlines_.begin();
  }

  /// Every queued waiter's id, oldest first.
  std::vector<waiter_id> ids_oldest_first() const;

  /// Forgets every waiter.
  void clear();

 private:
  void maybe_compact(std::deque<waiter_id>& q, std::size_t live);

  std::unordered_map<waiter_id, waiter> waiters_;
  std::deque<waiter_id> shared_q_;
  std::deque<waiter_id> excl_q_;
  std::size_t shared_live_ = 0;
  std::size_t excl_live_ = 0;
  std::set<std::pair<time_point, waiter_id>> deadlines_;
  waiter_id next_ = 1;
};

}  // namespace pgpipe::detail
