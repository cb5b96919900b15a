// A deliberately simple reference model of pool_core's waiter policy, for
// the randomized comparison in pool_core_model_test.cpp. It knows only what
// the header contract and the policy comment at the top of pool_core.cpp
// say, written the plainest way: vectors and linear scans, no indexes, no
// lazy deletion, no timer sets. Where pool_core and the model disagree on a
// single grant, failure, error code or request answer, one of them is wrong.
//
// Scope: grants, queueing, timeouts, cancels, failures and the exclusive
// reservation, on connected slots. Opening connections is pool_core's own
// business (growth, back-off): the model is told when a connect succeeds or
// fails and which connections break, and predicts what the waiters get.
// The model assumes max_lifetime, idle_timeout and health checks are off
// (connected slots then only leave by breaking).
#pragma once

#include "core/pool/pool_core.hpp"

#include <pgpipe/error.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace pgpipe::test::pool_model {

using detail::request_kind;
using detail::request_outcome;
using detail::slot_id;
using detail::time_point;
using detail::waiter_id;

/// One grant or fail, as pool_core's actions name it.
struct completion {
  bool granted = false;
  waiter_id waiter = 0;
  slot_id slot = 0;    ///< granted
  std::error_code ec;  ///< failed
  bool operator==(const completion&) const = default;
};

inline std::string to_string(const completion& c) {
  return c.granted ? "grant w" + std::to_string(c.waiter) + " on s" + std::to_string(c.slot)
                   : "fail w" + std::to_string(c.waiter) + " (" + c.ec.message() + ")";
}

class model {
 public:
  model(std::size_t capacity, std::size_t max_queued) : capacity_(capacity), max_queued_(max_queued) {}

  // ---- the same calls as pool_core -----------------------------------------

  request_outcome request(time_point now, request_kind kind, time_point deadline) {
    using k = request_outcome::kind;
    if (closed_) return {k::rejected, 0, 0, make_error_code(errc::closed)};
    // Older waiters of the same kind come first (a shared request may pass
    // queued exclusive ones: they wait for a load-0 slot, which is not there).
    const bool older_waiting = std::any_of(queue_.begin(), queue_.end(), [&](const waiter& w) { return w.kind == kind; });
    if (!older_waiting) {
      if (slot* s = pick(kind)) {
        take(*s, kind);
        return {k::granted, s->id, 0, {}};
      }
    }
    if (deadline <= now) return {k::rejected, 0, 0, expiry_error()};
    if (queue_.size() >= max_queued_) return {k::rejected, 0, 0, make_error_code(errc::queue_full)};
    const waiter_id id = next_waiter_++;
    queue_.push_back({id, kind, deadline, std::nullopt});
    dispatch(now);
    return {k::queued, 0, id, {}};
  }

  void release(time_point now, slot_id id, request_kind kind) {
    slot* s = find(id);
    if (s == nullptr || s->grants == 0) return;
    --s->grants;
    const std::size_t u = units(kind);
    s->load = s->grants == 0 || s->load < u ? 0 : s->load - u;
    dispatch(now);
  }

  bool cancel(waiter_id id) {
    auto it = std::find_if(queue_.begin(), queue_.end(), [&](const waiter& w) { return w.id == id; });
    if (it == queue_.end()) return false;
    queue_.erase(it);
    if (reserved_for_ == id) unreserve();
    return true;  // no dispatch: the contract says cancel queues no actions
  }

  void open_succeeded(time_point now, slot_id id) {
    slots_.push_back({id, 0, 0});
    std::sort(slots_.begin(), slots_.end(), [](const slot& a, const slot& b) { return a.id < b.id; });
    failing_ = false;
    last_error_.clear();
    dispatch(now);
  }

  void open_failed(time_point now, std::error_code ec, bool permanent) {
    failing_ = true;
    last_error_ = ec ? ec : make_error_code(errc::connect_failed);
    if (permanent && slots_.empty()) fail_all(last_error_);
    dispatch(now);
  }

  void broken(time_point now, slot_id id) {
    std::erase_if(slots_, [&](const slot& s) { return s.id == id; });
    if (reserved_ == id) unreserve();
    dispatch(now);
  }

  /// Expires every waiter whose deadline is due, in deadline order.
  /// Returns the waiters that expired after their deadline (the driver was
  /// told to wake too late): a deadline-accuracy failure.
  std::vector<waiter_id> tick(time_point now) {
    std::vector<waiter_id> late;
    for (;;) {
      auto due = std::min_element(queue_.begin(), queue_.end(), [](const waiter& a, const waiter& b) {
        return a.deadline != b.deadline ? a.deadline < b.deadline : a.id < b.id;
      });
      if (due == queue_.end() || due->deadline > now) break;
      if (due->deadline < now) late.push_back(due->id);
      if (due->kind == request_kind::exclusive && due->head_since) exclusive_expired_at_head_.push_back(now - *due->head_since);
      fail(due->id, expiry_error());
    }
    dispatch(now);
    return late;
  }

  void close() {
    fail_all(make_error_code(errc::closed));
    closed_ = true;
    unreserve();
  }

  // ---- observations ---------------------------------------------------------

  /// Grants and fails since the last call, in order.
  std::vector<completion> take() { return std::exchange(out_, {}); }
  /// The earliest deadline of a queued waiter: pool_core must wake by then.
  std::optional<time_point> next_deadline() const {
    std::optional<time_point> t;
    for (const auto& w : queue_)
      if (!t || w.deadline < *t) t = w.deadline;
    return t;
  }
  std::vector<waiter_id> queued() const {
    std::vector<waiter_id> ids;
    for (const auto& w : queue_) ids.push_back(w.id);
    return ids;
  }
  std::size_t queued_count() const { return queue_.size(); }
  /// For each exclusive waiter that expired after being the oldest waiter of
  /// all: how long it had been so. With holds bounded by H, the head's
  /// reservation is made at the next event (within H) and drains within H.
  const std::vector<std::chrono::nanoseconds>& exclusive_waits_at_head() const { return exclusive_expired_at_head_; }

  /// Marks the oldest waiter's head time (call after every event).
  void note_head(time_point now) {
    if (!queue_.empty() && !queue_.front().head_since) queue_.front().head_since = now;
  }

 private:
  struct slot {
    slot_id id;
    std::size_t load;    // capacity units in use
    std::size_t grants;  // outstanding grants
  };
  struct waiter {
    waiter_id id;
    request_kind kind;
    time_point deadline;
    std::optional<time_point> head_since;  // when it became the oldest waiter
  };

  std::size_t units(request_kind k) const { return k == request_kind::exclusive ? capacity_ : 1; }
  slot* find(slot_id id) {
    for (auto& s : slots_)
      if (s.id == id) return &s;
    return nullptr;
  }
  // The least-loaded slot not held for an exclusive waiter (lowest id on a
  // tie), if the request fits on it.
  slot* pick(request_kind kind) {
    slot* best = nullptr;
    for (auto& s : slots_)
      if (s.id != reserved_ && (best == nullptr || s.load < best->load)) best = &s;
    if (best == nullptr) return nullptr;
    if (kind == request_kind::exclusive) return best->load == 0 ? best : nullptr;
    return best->load < capacity_ ? best : nullptr;
  }
  void take(slot& s, request_kind kind) {
    s.load += units(kind);
    ++s.grants;
  }
  void unreserve() {
    reserved_.reset();
    reserved_for_ = 0;
  }
  std::error_code expiry_error() const {
    if (failing_ && slots_.empty() && last_error_) return last_error_;
    return make_error_code(errc::pool_timeout);
  }
  void remove(waiter_id id) {
    std::erase_if(queue_, [&](const waiter& w) { return w.id == id; });
    if (reserved_for_ == id) unreserve();
  }
  void fail(waiter_id id, std::error_code ec) {
    remove(id);
    out_.push_back({false, id, 0, ec});
  }
  void fail_all(std::error_code ec) {
    while (!queue_.empty()) fail(queue_.front().id, ec);
  }
  void grant(waiter_id id, request_kind kind, slot& s) {
    remove(id);
    if (reserved_ == s.id) unreserve();
    take(s, kind);
    out_.push_back({true, id, s.id, {}});
  }
  const waiter* oldest(request_kind kind) const {
    for (const auto& w : queue_)
      if (w.kind == kind) return &w;
    return nullptr;
  }

  // FIFO across kinds, except that shared waiters behind an exclusive one may
  // use slots the exclusive one cannot; the exclusive waiter at the head holds
  // the least-loaded slot so that shared work cannot keep it busy forever.
  void dispatch(time_point /*now*/) {
    for (;;) {
      const waiter* s = oldest(request_kind::shared);
      const waiter* e = oldest(request_kind::exclusive);
      if (s == nullptr && e == nullptr) return;
      if (e == nullptr || (s != nullptr && s->id < e->id)) {
        unreserve();
        if (slot* t = pick(request_kind::shared)) {
          grant(s->id, request_kind::shared, *t);
          continue;
        }
        return;
      }
      slot* target = nullptr;
      if (reserved_) {
        slot* r = find(*reserved_);
        if (r != nullptr && r->load == 0) target = r;
      }
      if (target == nullptr) target = pick(request_kind::exclusive);
      if (target != nullptr) {
        grant(e->id, request_kind::exclusive, *target);
        continue;
      }
      if (!reserved_) {
        slot* least = nullptr;
        for (auto& x : slots_)
          if (least == nullptr || x.load < least->load) least = &x;
        if (least != nullptr) {
          reserved_ = least->id;
          reserved_for_ = e->id;
        }
      }
      if (s != nullptr) {
        if (slot* t = pick(request_kind::shared)) {
          grant(s->id, request_kind::shared, *t);
          continue;
        }
      }
      return;
    }
  }

  std::size_t capacity_;
  std::size_t max_queued_;
  std::vector<slot> slots_;     // connected, by id
  std::vector<waiter> queue_;   // by id = arrival order
  std::optional<slot_id> reserved_;
  waiter_id reserved_for_ = 0;
  waiter_id next_waiter_ = 1;
  bool closed_ = false;
  bool failing_ = false;
  std::error_code last_error_;
  std::vector<completion> out_;
  std::vector<std::chrono::nanoseconds> exclusive_expired_at_head_;
};

}  // namespace pgpipe::test::pool_model
