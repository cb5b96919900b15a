// What a query waiting for pool capacity is told when pool_core fails its
// wait: one rule, kept apart from client_impl so that it is tested alone.
#pragma once

#include "core/pool/pool_types.hpp"

#include <pgpipe/error.hpp>

#include <system_error>

namespace pgpipe::detail {

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
