// The pool's vocabulary: ids, slot states, request kinds, and the actions
// pool_core queues for its driver. Shared by pool_core and the pieces it is
// made of (waiter_queue, slot_table, growth_policy), so that none of them
// includes the composer's header.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <system_error>

namespace pgpipe::detail {

using pool_clock = std::chrono::steady_clock;
using time_point = pool_clock::time_point;
using slot_id = std::uint64_t;    // never reused within one pool_core
using waiter_id = std::uint64_t;  // never reused within one pool_core
/// Where a slot's connection runs, as the driver names it (the async
/// driver: its event loop's index). A request may prefer its own group.
using slot_group = std::size_t;
inline constexpr slot_group no_slot_group = SIZE_MAX;

enum class request_kind { shared, exclusive };
enum class slot_state { connecting, idle, busy, checking, draining };

struct pool_action {
  enum class kind {
    open,   ///< start connecting `slot`; answer with on_open_succeeded/on_open_failed
    close,  ///< close `slot`'s connection; the slot is already gone from the pool
    check,  ///< run a health check on idle `slot`; answer with on_check_done
    grant,  ///< `waiter` now holds capacity on `slot` (release it when done)
    fail,   ///< `waiter` failed with `ec` (pool_timeout, closed, a connect error)
  };
  kind what;
  slot_id slot = 0;
  waiter_id waiter = 0;
  std::error_code ec;
};

}  // namespace pgpipe::detail
