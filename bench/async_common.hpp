// What the two async drivers (callbacks and coroutines) share: the pool
// configuration and what a logical client does with a result.
#pragma once

#include "driver.hpp"
#include "workload.hpp"

#include <pgpipe/pool_params.hpp>
#include <pgpipe/result.hpp>

#include <string>
#include <vector>

namespace pgpipe::bench {

/// max_size = min_size = pool (every connection opened up front, as pgbench
/// and the blocking run do; min_size = grow_from when set); max_queued large enough that `concurrency`
/// clients never hit queue_full; the default pipeline_depth.
pool_params async_pool_params(const driver_params& p);

/// The generator of the calling thread, for the async drivers' logical
/// clients. bench::rng (a Mersenne Twister) holds 2.5 kB of state: one per
/// logical client would be 25 MB of the peak RSS at 10,000 clients, memory
/// of the bench, not of the driver. The async drivers' clients run on the client's
/// few loop threads, so one generator per thread draws the same uniform
/// keys. Seeds differ per thread (a counter), so runs are not reproducible
/// key by key, which no measurement here relies on.
bench::rng& thread_rng();

/// Draws one query's parameters for `w` into the calling thread's buffer and
/// returns it. Both async drivers take their arguments from here, so they
/// store them the same way: a query's parameters are encoded (copied) when
/// the query starts, before any other client on the thread draws again, so
/// one buffer per loop thread serves all of that thread's logical clients
/// and stays in cache. Storage per client would measure where each style
/// keeps it (a coroutine's frame, a callback's record), not the driver.
const std::vector<std::string>& draw_args(const workload& w);

/// Reads a result as an application would, the same way in every driver so
/// the client-side work is comparable: the built-in lookup reads its one row
/// (ten as text, so_luong as int) and checks the key existed; a --sql
/// workload touches every field's text. Returns an error kind, or "" when fine.
std::string consume(const pgpipe::result& r, bool builtin);

}  // namespace pgpipe::bench
