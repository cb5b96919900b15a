// How long a query may wait for pool capacity, and what it is told when
// pool_core fails its wait: one rule, kept apart from client_impl so that it
// is tested alone (tests/unit/async/pool/waiter_failure_test.cpp).
#pragma once

#include "core/pool/pool_types.hpp"

#include <pgpipe/error.hpp>

#include <algorithm>
#include <chrono>
#include <system_error>

namespace pgpipe::detail {

/// `now + d`, or no deadline at all for a zero or negative duration (the
/// pool_params convention for "no timeout").
inline time_point add_or_max(time_point now, std::chrono::milliseconds d) {
  if (d.count() <= 0) return time_point::max();
  return now + d;
}

/// A query submitted at `now` with its own deadline `query_deadline` waits
/// for capacity until the sooner of that deadline and acquire_timeout.
inline time_point query_wait_deadline(time_point now, std::chrono::milliseconds acquire_timeout,
                                      time_point query_deadline) {
  return std::min(add_or_max(now, acquire_timeout), query_deadline);
}

/// pool_core failed a query's wait with `pool_ec` at `now`. A query waits
/// until the sooner of acquire_timeout and its own deadline (query_timeout or
/// its per-call timeout); when its own deadline had passed, that was the
/// binding limit, and the caller hears errc::query_timeout, as it would had
/// the query timed out on a connection. Otherwise pool_core's code stands
/// (pool_timeout, closed, a connect error).
inline std::error_code waiter_failure_code(std::error_code pool_ec, time_point query_deadline, time_point now) {
  if (pool_ec == errc::pool_timeout && query_deadline <= now) return make_error_code(errc::query_timeout);
  return pool_ec;
}

}  // namespace pgpipe::detail
