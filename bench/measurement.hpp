// The clock and counters of one run inside the child process. Drivers call
// on_result() from whatever thread completes a query; the child's main thread
// drives the timeline (warm-up, measured window, stop, drain).
//
// Timeline, from the moment the driver starts creating its pool (t0):
//   [t0, t0 + warmup)                 warm-up: completions count for progress only
//   [t0 + warmup, + duration)         the window: queries, latency, errors
//   then stopping() turns true: clients issue nothing new; wait for in-flight
//   work to drain, then the driver closes its pool.
#pragma once

#include "latency.hpp"
#include "run_result.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <system_error>

namespace pgpipe::bench {

using bench_clock = std::chrono::steady_clock;

class measurement {
 public:
  measurement(double warmup_s, double duration_s);

  /// t0: call right before the driver creates its pool.
  void start();
  bench_clock::time_point now() const noexcept { return bench_clock::now(); }

  /// A logical client is about to issue a query. Returns false once the run
  /// is stopping (the client should end). Thread-safe.
  bool begin_query() noexcept;
  /// The query begun at `started` completed (ec empty = success). Thread-safe.
  void end_query(bench_clock::time_point started, const std::error_code& ec) noexcept;
  /// Same, for failures that are not an error_code (an exception's what()).
  void end_query_failed(bench_clock::time_point started, const std::string& kind) noexcept;

  bool stopping() const noexcept { return stopping_.load(std::memory_order_relaxed); }

  /// Main thread: sleeps through warm-up and window, writing a progress line
  /// "P <elapsed_ms> <completed>" to `progress_fd` every second, then sets
  /// stopping() and waits (up to `drain_timeout`) for in-flight work to end.
  /// Returns the number of queries still in flight (0 when drained).
  std::int64_t run_timeline(int progress_fd, std::chrono::milliseconds drain_timeout);

  /// Fills queries, qps, percentiles, errors, startup_ms, duration_s.
  void fill(run_result& r) const;

  /// Name of an error for errors_by_kind: the errc name (pool_timeout,
  /// queue_full...), "sqlstate_XXXXX" for server errors, else the category.
  static std::string kind_of(const std::error_code& ec);

 private:
  void count_error(const std::string& kind) noexcept;
  bool in_window(bench_clock::time_point t) const noexcept { return t >= window_begin_ && t < window_end_; }

  std::chrono::nanoseconds warmup_;
  std::chrono::nanoseconds duration_;
  bench_clock::time_point t0_, window_begin_, window_end_;
  latency_histogram latency_;
  std::atomic<std::uint64_t> completed_{0};         // whole life, for progress
  std::atomic<std::int64_t> first_result_ns_{-1};  // since t0
  std::atomic<std::int64_t> in_flight_{0};
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;  // errors_ and the drain wait
  std::condition_variable drained_;
  std::map<std::string, std::uint64_t> errors_;
};

}  // namespace pgpipe::bench
