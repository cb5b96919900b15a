// pool_core: the sans-IO connection pool shared by both drivers.
//
// It owns slot states (connecting -> idle <-> busy -> draining -> closed, plus
// checking for health checks), the FIFO of waiters with deadlines, and the
// policy in pool_params. It never touches a socket, a thread or a clock: the
// driver feeds it events and the current time, then takes the actions it
// queued (open/close/check a connection, grant or fail a waiter) and carries
// them out. Not thread-safe: the driver serializes calls (a mutex or a strand).
//
// Capacity per slot unifies the drivers: blocking slots carry 1 request,
// async slots carry up to pipeline_depth. A `shared` request takes one unit
// on the least-loaded slot; an `exclusive` request (a lease) takes a whole
// idle slot. An exclusive waiter at the head of the queue reserves the
// least-loaded busy slot so that shared traffic cannot starve it.
//
// The vocabulary (ids, slot_state, request_kind, pool_action) is in
// pool_types.hpp; the pieces pool_core composes are waiter_queue (queued
// requests), slot_table (connections and their timers) and growth_policy
// (when to connect, back-off).
#pragma once

#include "core/pool/connect_error.hpp"
#include "core/pool/pool_types.hpp"

#include <pgpipe/pool_params.hpp>
#include <pgpipe/stats.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <system_error>
#include <vector>

namespace pgpipe::detail {

struct request_outcome {
  enum class kind { granted, queued, rejected };
  kind what;
  slot_id slot = 0;      ///< granted
  waiter_id waiter = 0;  ///< queued: a grant or fail action will name it later
  std::error_code ec;    ///< rejected: errc::queue_full, errc::closed, or (deadline <= now) what expiry would say
};

class pool_core {
 public:
  /// Validates params (throws pgpipe::error(errc::bad_params)).
  /// capacity_per_slot: 1 for the blocking driver, pipeline_depth for async.
  pool_core(const pool_params& params, std::size_t capacity_per_slot);

  /// Opens min_size connections (subject to max_size).
  void start(time_point now);

  /// Ask for capacity. Granted at once when a slot has room; otherwise queued
  /// until `deadline` (FIFO), or rejected at once when max_queued waiters are
  /// already queued or the pool is closed. A request whose deadline is not
  /// after `now` that cannot be granted at once is rejected with the error its
  /// expiry would give (errc::pool_timeout, or the connect error while the
  /// server is down). May queue open actions. A queued
  /// request may already have its grant (or fail) among the queued actions.
  /// Requests arriving while connects fail permanently (bad password,
  /// unknown host) are queued, not rejected: the next attempt (after the back-off)
  /// may succeed; if it fails permanently too they fail with its error then.
  /// An exclusive grant counts as capacity_per_slot units in load_of().
  ///
  /// `prefer`: a request granted at once goes to a slot of that group
  /// (set_group) when one has room and, for a shared request, is not much
  /// busier than the least-loaded slot (slot_table::prefer_group); else to
  /// the least-loaded slot as without a preference. It never makes a
  /// request wait, and a queued request is granted wherever capacity frees
  /// first. Taking a busy slot of the group while another is idle does not
  /// count as demand for growth.
  request_outcome request(time_point now, request_kind kind, time_point deadline,
                          slot_group prefer = no_slot_group);

  /// Puts `slot` (any state) in `group` for requests that prefer it; the
  /// driver names groups (the async driver: the connection's loop). Unknown
  /// slot: no-op.
  void set_group(slot_id slot, slot_group group);

  /// Give back capacity taken by `grants` grants of `kind` on `slot` (the
  /// async driver gives back a batch of completions at once). Waiters are
  /// served once, after the whole batch: the same waiters, in the same
  /// order, as that many single releases at `now` would grant (each on the
  /// least-loaded slot after the batch). Releases for a slot that has since
  /// been closed (broken, drained), or past the grants it holds, are
  /// ignored. May grant waiters.
  void release(time_point now, slot_id slot, request_kind kind, std::size_t grants = 1);

  /// Remove a queued waiter; returns false when it was no longer queued (it
  /// was granted or failed already: the driver must then release/ignore).
  /// Queues no actions.
  bool cancel(waiter_id waiter);

  /// Answers to an open action. After on_open_failed there is no connection
  /// to close: the driver disposes of the failed attempt itself (no close action).
  void on_open_succeeded(time_point now, slot_id slot);
  /// ec is the connect error, `kind` what kind_of_connect_error
  /// (connect_error.hpp) says of it. Permanent errors (authentication, no
  /// such database or role, bad conninfo, a host name that does not exist)
  /// fail queued waiters at once with ec when no slot is usable; transient
  /// ones (refused, timed out, 53300, 57P03) keep waiters until their
  /// deadline. Either way the next attempt waits for the back-off.
  void on_open_failed(time_point now, slot_id slot, std::error_code ec, connect_failure_kind kind);
  /// The connection died. The slot leaves the pool at once (close action),
  /// its outstanding grants are forgotten, and a replacement is opened when
  /// there is demand or fewer than min_size remain.
  void on_broken(time_point now, slot_id slot);
  void on_check_done(time_point now, slot_id slot, bool healthy);

  /// Advance time: expire waiters (in deadline order), drain connections past
  /// max_lifetime, close idle ones past idle_timeout, schedule health checks,
  /// retry connects whose back-off elapsed.
  void on_tick(time_point now);
  /// When on_tick should next run, if anything is pending.
  std::optional<time_point> next_timer() const;

  /// Stop: waiters fail with errc::closed, idle slots close, busy slots drain
  /// (work in flight completes); new requests are rejected with errc::closed.
  /// Connecting and checking slots close when their answer arrives.
  void close(time_point now);
  bool is_closed() const noexcept;
  /// True once closed and every slot is gone.
  bool is_drained() const noexcept;

  /// Actions queued since the last call, in the order they must be applied.
  std::vector<pool_action> take_actions();

  /// Fills the connection/request fields of pool_stats (connecting, idle,
  /// busy, draining, checking, in_flight, queued, connects, disconnects,
  /// errors.pool_timeout, errors.queue_full, errors.connect).
  void fill_stats(pool_stats& out) const;

  /// Diagnostics for tests and the driver: current back-off and slot count.
  std::chrono::milliseconds current_backoff() const noexcept;
  std::size_t slot_count() const noexcept;  ///< open or opening
  std::optional<slot_state> state_of(slot_id slot) const;
  std::size_t load_of(slot_id slot) const;  ///< units in use on slot

 private:
  struct impl;
  // Implementation detail kept out of the header so drivers compile fast.
  std::unique_ptr<impl> impl_;
 public:
  ~pool_core();
  pool_core(pool_core&&) noexcept;
  pool_core& operator=(pool_core&&) noexcept;
};

}  // namespace pgpipe::detail
