// A point-in-time snapshot of a pool, the same shape for both drivers, and its
// rendering in the Prometheus text exposition format.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace pgpipe {

struct error_counts {
  std::uint64_t pool_timeout = 0;
  std::uint64_t queue_full = 0;
  std::uint64_t connection_lost = 0;  ///< not_sent + connection_lost
  std::uint64_t query_timeout = 0;
  std::uint64_t cancelled = 0;
  std::uint64_t server = 0;           ///< SQLSTATE errors
  std::uint64_t connect = 0;          ///< failed connection attempts
  std::uint64_t other = 0;
};

struct pool_stats {
  // Connections by state.
  std::size_t connecting = 0;
  std::size_t idle = 0;
  std::size_t busy = 0;
  std::size_t draining = 0;   ///< past max_lifetime or closing, finishing work in flight
  std::size_t checking = 0;   ///< running a health check
  // Requests.
  std::size_t in_flight = 0;  ///< granted a connection, not yet complete
  std::size_t queued = 0;     ///< waiting for capacity
  std::uint64_t completed = 0;
  error_counts errors;
  // Connection churn.
  std::uint64_t connects = 0;
  std::uint64_t disconnects = 0;
  // Event loops (async driver; zero for the blocking driver): how late posted
  // work ran, measured by a periodic probe. A handler that blocks a loop shows here.
  std::chrono::microseconds loop_lag_last{0};
  std::chrono::microseconds loop_lag_max{0};
  std::size_t threads = 0;    ///< threads the driver runs (event loops or workers)
};

/// Renders `s` as Prometheus text: gauges `<prefix>_connections{state=...}`,
/// `<prefix>_requests_in_flight`, counters `<prefix>_errors_total{kind=...}`...
std::string to_prometheus(const pool_stats& s, std::string_view prefix = "pgpipe");

}  // namespace pgpipe
