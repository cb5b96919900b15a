// Where the async pool's single timer is aimed, kept apart from client_impl
// (sans-IO: no timer, no clock) so that it is tested alone
// (tests/unit/async/pool/tick_schedule_test.cpp).
//
// client_impl asks pool_core for its next deadline after every call and aims
// one steady_timer at it. Aiming happens under the pool mutex, but the timer
// itself is touched later, on the pool's executor, by a posted arm order.
// Orders can therefore arrive late and out of order; each carries the
// generation it was issued under, and only an order of the current
// generation may touch the timer:
//  1. An order is issued only when the new deadline is sooner than the one
//     the timer is aimed at (a later deadline is served by the earlier tick,
//     which aims again).
//  2. Issuing an order makes every earlier order stale: it does nothing.
//  3. A tick that ran leaves the schedule unaimed, so the next deadline is
//     aimed whatever it is.
//  4. stop() (the pool closed and drained) makes every order stale and says,
//     once, that the timer must be cancelled: a pending timer must not keep a
//     caller's io_context running.
#pragma once

#include "core/pool/pool_types.hpp"

#include <cstdint>
#include <optional>

namespace pgpipe::detail {

class tick_schedule {
 public:
  /// An order to aim the timer at `at`, valid while `gen` is current().
  struct arm_order {
    time_point at;
    std::uint64_t gen;
  };

  /// pool_core's next deadline is `next` (none: nothing to time). An order
  /// when the timer must be aimed sooner than it is (rules 1 and 2).
  std::optional<arm_order> aim(std::optional<time_point> next) {
    if (!next || *next >= at_) return std::nullopt;
    at_ = *next;
    return arm_order{at_, ++gen_};
  }

  /// True when an order of generation `gen` may still touch the timer.
  bool current(std::uint64_t gen) const noexcept { return gen == gen_; }

  /// The timer fired and pool_core's deadlines were run (rule 3).
  void fired() noexcept { at_ = time_point::max(); }

  /// No timer is aimed: the next deadline must be aimed even when nothing
  /// else changed.
  bool unaimed() const noexcept { return at_ == time_point::max(); }

  /// Nothing is left to time (rule 4). True when the caller must cancel
  /// the timer: the first time, and again whenever it was aimed since.
  bool stop() noexcept {
    if (!unaimed() || !stopped_) {
      stopped_ = true;
      at_ = time_point::max();
      ++gen_;
      return true;
    }
    return false;
  }

 private:
  time_point at_ = time_point::max();
  std::uint64_t gen_ = 0;
  bool stopped_ = false;
};

}  // namespace pgpipe::detail
