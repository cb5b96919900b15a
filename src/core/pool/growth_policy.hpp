// growth_policy: when the pool opens connections, sans-IO.
//
// Given the pool's shape (slots, usable and connecting ones, queued demand)
// it says how many connects to start now, whether a request served on a busy
// slot opens one more, and when a held-back connect may start. It owns the
// connect back-off: it is told each connect's outcome and, while connects
// fail, allows one attempt at a time once the back-off has elapsed. It opens
// nothing itself (pool_core does, with slot_table) and never looks at
// whether the pool is closed: pool_core asks it only while open. Not
// thread-safe (pool_core's caller serializes).
#pragma once

#include "core/pool/pool_types.hpp"

#include <pgpipe/pool_params.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <optional>
#include <system_error>

namespace pgpipe::detail {

/// What the policy looks at; pool_core fills it from slot_table and
/// waiter_queue at each call.
struct pool_shape {
  std::size_t slots = 0;              ///< every slot, in any state (counts against max_size)
  std::size_t usable = 0;             ///< idle + busy + checking
  std::size_t connecting = 0;         ///< connects in flight
  std::size_t shared_waiting = 0;     ///< queued shared requests
  std::size_t exclusive_waiting = 0;  ///< queued exclusive requests
};

class growth_policy {
 public:
  /// Reads min_size, max_size, growth_connects, growth_interval and the
  /// connect back-off from params (validated by pool_core).
  growth_policy(const pool_params& params, std::size_t capacity_per_slot);

  /// Connects wanted, back-off and pace aside: the min_size deficit or the
  /// queued demand beyond what is connecting (an exclusive waiter needs a
  /// slot, shared ones one per capacity_per_slot), whichever is larger,
  /// within max_size.
  std::size_t wanted(const pool_shape& shape) const noexcept {
    const std::size_t demand = shape.exclusive_waiting + (shape.shared_waiting + capacity_ - 1) / capacity_;
    const std::size_t want_demand = demand > shape.connecting ? demand - shape.connecting : 0;
    return std::min(std::max(min_deficit(shape), want_demand), room(shape));
  }

  /// How many connects to start now for wanted(). While connects fail: 1
  /// when none is in flight and the back-off has elapsed, else 0. Otherwise
  /// the min_size deficit (everything while no slot is usable, or with
  /// `burst`) plus what the pace allows; records the paced starts.
  /// Inline: it runs on every request and release, and nearly always finds
  /// nothing wanted.
  std::size_t open_now(time_point now, const pool_shape& shape, bool burst = false) {
    const std::size_t want = wanted(shape);
    return want == 0 ? 0 : open_wanted(now, shape, want, burst);
  }

  /// A request was served on a busy slot, or could not be served: whether
  /// to open one more connect (paced; with nothing usable, only while none
  /// is in flight). Never while connects fail. Records a paced start.
  bool open_on_demand(time_point now, const pool_shape& shape);

  /// When open_now() would next start a connect that is held back now (the
  /// back-off's retry, the pace's next start), if one is wanted.
  std::optional<time_point> next_timer(const pool_shape& shape) const;

  /// A connect succeeded: the back-off resets. Returns true when it ends an
  /// outage (connects were failing): what queued callers need may then open
  /// at once (open_now with burst).
  bool connect_succeeded() noexcept;
  /// A connect failed with `ec` (a default error_code counts as
  /// errc::connect_failed). The first failure starts the back-off at
  /// connect_backoff_initial; each failed probe (a connect opened while
  /// failing) doubles it up to connect_backoff_max.
  void connect_failed(time_point now, std::error_code ec, bool probe);

  /// True from a failed connect until the next success.
  bool failing() const noexcept { return failing_; }
  /// The current back-off; 0 while not failing.
  std::chrono::milliseconds backoff() const noexcept {
    return failing_ ? backoff_ : std::chrono::milliseconds{0};
  }
  /// The error of the last failed connect; cleared by a success.
  const std::error_code& last_error() const noexcept { return last_error_; }

 private:
  std::size_t open_wanted(time_point now, const pool_shape& shape, std::size_t want, bool burst);
  std::size_t room(const pool_shape& shape) const noexcept {
    return shape.slots < max_size_ ? max_size_ - shape.slots : 0;
  }
  std::size_t min_deficit(const pool_shape& shape) const noexcept {
    const std::size_t have = shape.usable + shape.connecting;
    return min_size_ > have ? min_size_ - have : 0;
  }
  // Of wanted(), how many the pace does not apply to.
  std::size_t unpaced(const pool_shape& shape) const noexcept {
    const std::size_t want = wanted(shape);
    return shape.usable == 0 ? want : std::min(want, min_deficit(shape));
  }
  // A paced connect could start now with `connecting` in flight.
  bool pace_allows(time_point now, std::size_t connecting) const noexcept {
    return connecting < growth_connects_ && now >= paced_at_;
  }

  std::size_t min_size_;
  std::size_t max_size_;
  std::size_t growth_connects_;
  std::chrono::milliseconds growth_interval_;
  std::chrono::milliseconds backoff_initial_;
  std::chrono::milliseconds backoff_max_;
  std::size_t capacity_;

  bool failing_ = false;  // the last connect attempt failed and none succeeded since
  std::chrono::milliseconds backoff_{0};
  time_point retry_at_{};
  time_point paced_at_{};  // earliest start of the next paced connect
  std::error_code last_error_;
};

}  // namespace pgpipe::detail
