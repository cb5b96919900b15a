// What the two async drivers (callbacks and coroutines) share: the pool
// configuration and what a logical client does with a result.
#pragma once

#include "driver.hpp"

#include <pgpipe/pool_params.hpp>
#include <pgpipe/result.hpp>

#include <string>

namespace pgpipe::bench {

/// max_size = min_size = pool (every connection opened up front, as pgbench
/// and the blocking run do; min_size = grow_from when set); max_queued large enough that `concurrency`
/// clients never hit queue_full; the default pipeline_depth.
pool_params async_pool_params(const driver_params& p);

/// Reads a result as an application would, the same way in every driver so
/// the client-side work is comparable: the built-in lookup reads its one row
/// (ten as text, so_luong as int) and checks the key existed; a --sql
/// workload touches every field's text. Returns an error kind, or "" when fine.
std::string consume(const pgpipe::result& r, bool builtin);

}  // namespace pgpipe::bench
