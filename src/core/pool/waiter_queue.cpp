// waiter_queue: see waiter_queue.hpp for the contract.
//
// Chosen so that push, erase and front stay cheap with ~10k queued waiters:
//  - a hash map id -> {kind, deadline} says who is queued;
//  - two FIFO deques (shared and exclusive) hold ids with lazy deletion: an
//    erased id stays in its deque until it reaches the front or a compaction
//    drops it, so erasing from the middle (a cancel, an expiry) is O(1);
//  - a (deadline, id) set gives expiry in deadline order, the older waiter
//    first on a tie.
#include "core/pool/waiter_queue.hpp"

#include <algorithm>

namespace pgpipe::detail {

waiter_id waiter_queue::push(request_kind kind, time_point deadline) {
  const waiter_id id = next_++;
  waiters_.emplace(id, waiter{kind, deadline});
  deadlines_.emplace(deadline, id);
  if (kind == request_kind::shared) {
    shared_q_.push_back(id);
    ++shared_live_;
  } else {
    excl_q_.push_back(id);
    ++excl_live_;
  }
  return id;
}

waiter_queue::waiter waiter_queue::erase(waiter_id id) {
  auto it = waiters_.find(id);
  const waiter w = it->second;
  waiters_.erase(it);
  deadlines_.erase({w.deadline, id});
  if (w.kind == request_kind::shared) {
    --shared_live_;
    if (!shared_q_.empty() && shared_q_.front() == id) shared_q_.pop_front();
    maybe_compact(shared_q_, shared_live_);
  } else {
    --excl_live_;
    if (!excl_q_.empty() && excl_q_.front() == id) excl_q_.pop_front();
    maybe_compact(excl_q_, excl_live_);
  }
  return w;
}

// Lazy deletion leaves dead ids in the deques; drop them once they
// outnumber the live ones so memory stays proportional to max_queued.
void waiter_queue::maybe_compact(std::deque<waiter_id>& q, std::size_t live) {
  if (q.size() <= 2 * live + 64) return;
  std::deque<waiter_id> kept;
  for (waiter_id id : q)
    if (waiters_.contains(id)) kept.push_back(id);
  q.swap(kept);
}

std::vector<waiter_id> waiter_queue::ids_oldest_first() const {
  std::vector<waiter_id> ids;
  ids.reserve(waiters_.size());
  for (const auto& [id, w] : waiters_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

void waiter_queue::clear() {
  waiters_.clear();
  deadlines_.clear();
  shared_q_.clear();
  excl_q_.clear();
  shared_live_ = 0;
  excl_live_ = 0;
}

}  // namespace pgpipe::detail
