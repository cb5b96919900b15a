// query_metrics: what both drivers' pools know about the queries they ran,
// in one room: the logger slot, the query_observer hooks, and the outcome
// counters and histograms behind stats().
//
// Why one room: the two drivers promise the same things (logger.hpp,
// query_observer.hpp, stats.hpp): a logger replaced at any time and called
// outside every lock, an observer whose exceptions never reach the driver,
// an error counted under one kind whichever driver saw it. Written once,
// they cannot drift apart.
//
// Thread-safety: every member may be called from any thread at once. The
// counters and histograms are relaxed atomics (a snapshot may be a sample
// behind); the logger is swapped under a mutex of its own and called outside
// it, so a logger may call stats() or set_logger().
#pragma once

#include <pgpipe/logger.hpp>
#include <pgpipe/query_observer.hpp>
#include <pgpipe/stats.hpp>

#include "core/metrics/latency_recorder.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>

namespace pgpipe::detail {

using metrics_clock = std::chrono::steady_clock;

/// One query as the observer hooks see it: what the driver keeps of it.
struct observed_query {
  std::string_view sql;
  bool on_lease = false;
  metrics_clock::time_point submitted{};
  std::chrono::nanoseconds waited{0};  ///< for pool capacity, until the grant (or the failure)
  /// The caller's call when this is a re-run (query_event::attempt > 1);
  /// otherwise unset and `submitted` is the call.
  metrics_clock::time_point called{};
  std::uint32_t attempt = 1;
  bool rerun = false;  ///< query_event::rerun
};

/// What observe_start learnt, handed back to observe_end.
struct observed_start {
  std::uint64_t slot = 0;
  int backend_pid = 0;
  metrics_clock::time_point at{};
  void* user = nullptr;  ///< what on_start returned
};

/// Calls obs.on_start for a query that got its connection (`slot`,
/// `backend_pid`) at `now`. An exception from the observer is dropped: it
/// must not fail the query, nor reach a connection's read loop.
observed_start observe_start(query_observer& obs, const observed_query& q, std::uint64_t slot, int backend_pid,
                             metrics_clock::time_point now) noexcept;

/// Calls obs.on_end once the query ended with `ec` at `now`. `started` is
/// what observe_start returned, null when the query never reached a
/// connection (pool timeout, queue full, refused). Exceptions are dropped.
void observe_end(query_observer& obs, const observed_query& q, const observed_start* started,
                 const std::error_code& ec, std::string_view sqlstate, std::uint64_t rows,
                 metrics_clock::time_point now) noexcept;

class query_metrics {
 public:
  /// `observer` is pool_params::observer, fixed for the pool's life.
  query_metrics(std::shared_ptr<query_observer> observer, logger_fn logger);

  // ---- the logger slot ----------------------------------------------------

  /// Replaces the logger (empty: log nothing).
  void set_logger(logger_fn fn);
  /// Calls the logger, if any, outside the slot's lock; a logger that throws
  /// must not take a connection down with it, so that is dropped.
  void log(log_level level, const std::string& line) const noexcept;

  // ---- the observer -------------------------------------------------------

  query_observer* observer() const noexcept { return observer_.get(); }

  // ---- counters and histograms --------------------------------------------

  /// stats().query_duration: a query's time from the call to its completion
  /// (then observe_end, when observer() is set).
  void record_query(std::chrono::nanoseconds d) noexcept { query_hist_.record(d); }
  /// stats().acquire_wait: the wait of a request granted capacity or failed by the pool.
  void record_wait(std::chrono::nanoseconds d) noexcept { wait_hist_.record(d); }
  /// A query that reached a connection ended, successfully or not: counted
  /// in stats().completed and, with an error, by its kind (count_error).
  /// Every query a caller issued through the driver's API counts there once,
  /// through this or count_unstarted_failure; a failed attempt that a read
  /// router runs again counts neither (its re-run does).
  void count_completed(const std::error_code& ec) noexcept {
    completed_.fetch_add(1, std::memory_order_relaxed);
    if (ec) count_error(ec);
  }
  /// One error by its kind: server (a SQLSTATE), connection_lost (either
  /// code), query_timeout, cancelled, other.
  void count_error(const std::error_code& ec) noexcept;
  /// A query that failed before reaching a connection (a parameter that could
  /// not be encoded, a statement refused, no capacity in time): counted in
  /// stats().completed and by its kind, except the kinds pool_core counts
  /// itself (pool_timeout, queue_full, connect errors).
  void count_unstarted_failure(const std::error_code& ec) noexcept;

  /// Fills completed, errors.{connection_lost, query_timeout, cancelled,
  /// server, other}, query_duration and acquire_wait (pool_core fills the rest).
  void fill_stats(pool_stats& s) const noexcept;

 private:
  const std::shared_ptr<query_observer> observer_;

  mutable std::mutex log_mu_;
  std::shared_ptr<const logger_fn> logger_;

  std::atomic<std::uint64_t> completed_{0};
  std::atomic<std::uint64_t> err_lost_{0};
  std::atomic<std::uint64_t> err_timeout_{0};
  std::atomic<std::uint64_t> err_cancelled_{0};
  std::atomic<std::uint64_t> err_server_{0};
  std::atomic<std::uint64_t> err_other_{0};
  latency_recorder query_hist_;  ///< stats().query_duration
  latency_recorder wait_hist_;   ///< stats().acquire_wait
};

}  // namespace pgpipe::detail
