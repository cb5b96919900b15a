// The requests (queries or acquires) waiting in pool_core's queue, by waiter
// id, kept apart from client_impl so that it is tested alone
// (tests/unit/async/pool/waiter_map_test.cpp).
//
// A waiter leaves pool_core's queue in exactly one way: granted, failed (its
// deadline, queue_full, close, a connect error) or cancelled by its caller.
// The first two reach the driver as actions, the third as a call from the
// cancellation slot, possibly on another thread. Whoever takes the request
// out of this map answers it; the others find nothing, so a waiter is
// answered once. Every call is made under the pool mutex that also guards
// pool_core: an action and the map change it causes are one step.
//
// `Request` has a `waiter_id waiter` member: the id while it waits, 0 once
// it left the queue (client_impl reads it to know where a request is).
#pragma once

#include "core/pool/pool_core.hpp"

#include <cstddef>
#include <memory>
#include <unordered_map>

namespace pgpipe::detail {

template <class Request>
class waiter_map {
 public:
  /// pool_core queued `r` as waiter `w`.
  void add(waiter_id w, std::shared_ptr<Request> r) {
    r->waiter = w;
    waiting_.emplace(w, std::move(r));
  }

  /// pool_core granted or failed waiter `w`: the request to answer, null
  /// when `w` is not one of this map's (the other kind's, or already taken).
  std::shared_ptr<Request> take(waiter_id w) {
    auto it = waiting_.find(w);
    if (it == waiting_.end()) return nullptr;
    auto r = std::move(it->second);
    waiting_.erase(it);
    r->waiter = 0;
    return r;
  }

  /// The caller cancelled `r`: true when it was still waiting, and is now
  /// out of pool_core's queue and of this map (the canceller answers it);
  /// false when a grant or a failure took it first (they answer it).
  bool withdraw(pool_core& core, Request& r) {
    if (r.waiter == 0 || !core.cancel(r.waiter)) return false;
    waiting_.erase(r.waiter);
    r.waiter = 0;
    return true;
  }

  std::size_t size() const noexcept { return waiting_.size(); }

 private:
  std::unordered_map<waiter_id, std::shared_ptr<Request>> waiting_;
};

}  // namespace pgpipe::detail
