// What the blocking drivers (executor, thread-per-client, tpcb) share: the
// pool they set up, the call they measure (blocking_pool::exec, what a user
// calls), and how a finished call is recorded. A result is read with
// async_common's consume(), the same way in every driver.
#pragma once

#include "driver.hpp"

#include <pgpipe/blocking_pool.hpp>

#include <string>
#include <system_error>
#include <vector>

namespace pgpipe::bench {

/// The pool every blocking driver opens: `p.pool` connections, all opened
/// up front as the other drivers do; named statements unless --no-prepared;
/// room in the queue for every logical client at once.
pool_params blocking_pool_params(const driver_params& p);

/// blocking_pool::exec with a run-time number of text parameters (the --sql
/// file decides how many; at most max_params, as for the async drivers).
pgpipe::result exec_n(blocking_pool& pool, const std::string& sql, const std::vector<std::string>& args);

/// Records a call that ended on an executor worker: failed with `bad` when
/// the call returned a reason, else with `ec` (success when empty).
void record(measurement& m, bench_clock::time_point started, std::error_code ec, const std::string& bad);

}  // namespace pgpipe::bench
