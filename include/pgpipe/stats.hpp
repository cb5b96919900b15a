// A point-in-time snapshot of a pool, the same shape for both drivers, and its
// rendering in the Prometheus text exposition format.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace pgpipe {

/// Failed requests and connects since the pool started, by kind (pool_stats::errors).
struct error_counts {
  std::uint64_t pool_timeout = 0;     ///< errc::pool_timeout: no capacity within acquire_timeout
  std::uint64_t queue_full = 0;       ///< errc::queue_full: max_queued already waiting
  std::uint64_t connection_lost = 0;  ///< not_sent + connection_lost
  std::uint64_t query_timeout = 0;    ///< errc::query_timeout
  std::uint64_t cancelled = 0;        ///< errc::cancelled
  std::uint64_t server = 0;           ///< SQLSTATE errors
  std::uint64_t connect = 0;          ///< failed connection attempts
  std::uint64_t other = 0;           ///< any other error
};

/// A latency distribution in Prometheus' histogram shape: cumulative counts
/// of samples at or below each bound, the count of all samples and their sum.
/// Bounds suit a database client: 100 µs (a cached read on loopback) to 10 s.
struct latency_histogram {
  /// Upper bounds of the buckets, in microseconds; the +Inf bucket is `count`.
  static constexpr std::array<std::int64_t, 16> bounds_us{
      100, 250, 500, 1'000, 2'500, 5'000, 10'000, 25'000, 50'000,
      100'000, 250'000, 500'000, 1'000'000, 2'500'000, 5'000'000, 10'000'000};
  /// le[i]: samples <= bounds_us[i] (cumulative, as Prometheus' `le` buckets).
  std::array<std::uint64_t, bounds_us.size()> le{};
  std::uint64_t count = 0;         ///< all samples (the +Inf bucket)
  std::chrono::nanoseconds sum{0};  ///< all samples added together
};

/// Calls of libpq 17 and newer that a pool uses because the loaded libpq has
/// them (runtime_info::fast_paths). pgpipe is built against an older libpq's
/// headers and finds these at run time; where one is absent, the pool takes
/// the libpq 14 path and the flag stays false. The blocking driver uses none.
struct libpq_fast_paths {
  /// PQsendPipelineSync: each request's Sync is queued without a flush, and
  /// the connection flushes once per loop turn (not one send() per request).
  bool pipeline_sync = false;
  /// PQsendClosePrepared: an evicted or stale prepared statement is closed
  /// with a protocol-level Close, not SQL DEALLOCATE.
  bool close_prepared = false;
  /// PQsetChunkedRowsMode: a row stream that asks for several rows per
  /// result (query_options::stream_chunk_rows) gets them in chunks.
  bool chunked_rows = false;
  /// PQcancelCreate / PQcancelPoll: a lease's cancel runs on its event loop.
  bool cancel_on_loop = false;
};

/// What a pool runs on (pool_stats::runtime): the libpq the process loaded,
/// which may be newer than the headers pgpipe was built with, and the server
/// its connections reach. Versions are PostgreSQL's numbers: major * 10000 +
/// minor (180004 is 18.4; PQlibVersion() and PQserverVersion()).
struct runtime_info {
  int libpq_version = 0;   ///< PQlibVersion() of the libpq loaded at run time
  int server_version = 0;  ///< the server of the latest connection the pool opened; 0 before the first
  libpq_fast_paths fast_paths{};  ///< the newer libpq calls the pool uses
};

/// A point-in-time snapshot of a pool (async_client::stats(), blocking_pool::stats()).
/// Counters count since the pool started; gauges are the state at the call.
struct pool_stats {
  // Connections by state.
  std::size_t connecting = 0;  ///< connects in progress
  std::size_t idle = 0;        ///< open, no work
  std::size_t busy = 0;        ///< open, running work (async: any requests in flight)
  std::size_t draining = 0;   ///< past max_lifetime or closing, finishing work in flight
  std::size_t checking = 0;   ///< running a health check
  // Requests.
  std::size_t in_flight = 0;  ///< granted a connection, not yet complete
  std::size_t queued = 0;     ///< waiting for capacity
  /// Queries that ended, successfully or with any error (the server's, a
  /// parameter refused before sending, no capacity in time), each counted
  /// once: async: queries, streams, COPYs and scripts, on the pool or a
  /// lease; blocking: exec() on the pool or a lease, execute_script() and
  /// COPYs (statements run through libpqxx on a lease are not seen). In both
  /// drivers a COPY the client ended (abort, cancel, a destroyed handle)
  /// counts as `cancelled`.
  std::uint64_t completed = 0;
  error_counts errors;          ///< requests and connects that failed, by kind
  // Connection churn.
  std::uint64_t connects = 0;     ///< connections opened
  std::uint64_t disconnects = 0;  ///< connections closed (any reason)
  // Event loops (async driver; zero for the blocking driver): how late posted
  // work ran, measured by a periodic probe. A handler that blocks a loop shows here.
  std::chrono::microseconds loop_lag_last{0};  ///< the latest probe's lag
  std::chrono::microseconds loop_lag_max{0};   ///< the largest lag seen
  std::size_t threads = 0;    ///< threads the driver runs (event loops or workers)
  /// Every query from the call to its completion, success or not (async:
  /// async_query, lease queries and streams; blocking: exec()).
  latency_histogram query_duration;
  /// Every request for pool capacity (a shared query, an acquire, a blocking
  /// exec) from the call to the grant, or to its failure by the pool
  /// (timeout, connect error). Requests refused at once (queue full, closed)
  /// waited for nothing and are not counted.
  latency_histogram acquire_wait;
  /// The libpq in use and the server's version.
  runtime_info runtime;
};

/// Renders `s` as Prometheus text: gauges `<prefix>_connections{state=...}`,
/// `<prefix>_requests_in_flight`, counters `<prefix>_errors_total{kind=...}`...,
/// histograms `<prefix>_query_duration_seconds` and `<prefix>_acquire_wait_seconds`
/// (`_bucket{le=...}` up to `le="+Inf"`, `_sum`, `_count`).
std::string to_prometheus(const pool_stats& s, std::string_view prefix = "pgpipe");

}  // namespace pgpipe
