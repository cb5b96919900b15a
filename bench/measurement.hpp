// The clock and counters of one run inside the child process. Drivers call
// on_result() from whatever thread completes a query; the child's main thread
// drives the timeline (warm-up, measured window, stop, drain).
//
// Timeline, from the moment the driver starts creating its pool (t0):
//   [t0, ready)             connecting: until something completed (success
//                           or error; startup_ms ends at the first success)
//                           and the pool has every connection open
//   [ready, ready + warmup) warm-up: completions count for progress only
//   [.., + duration)        the window: queries, latency, errors
//   then stopping() turns true: clients issue nothing new; wait for in-flight
//   work to drain, then the driver closes its pool.
// Starting the warm-up once the pool is open keeps a slow start (200 SCRAM
// handshakes; pgbench connects every client before its first query) out of
// the window, the same way for every driver: the window measures the steady
// state, startup_ms the start.
#pragma once

#include "latency.hpp"
#include "run_result.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
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
  /// Ends the run early (a driver that cannot start all its clients).
  void stop_now() noexcept { stopping_.store(true); }

  /// Main thread: waits for the start (a completion and pool_open()), then
  /// sleeps through warm-up and window, writing "P <elapsed_ms> <completed>
  /// <phase>" (0 connecting, 1 warm-up, 2 measuring) to `progress_fd` every
  /// second; then sets stopping() and waits (up to `drain_timeout`) for
  /// in-flight work to end. Gives up (window empty) when nothing completes
  /// within `first_timeout`; starts anyway when the pool is still not fully
  /// open `open_timeout` after the first completion (pool_not_open() says so).
  /// Returns the number of queries still in flight (0 when drained).
  /// `at_window_end` runs as the window closes, before clients stop (for
  /// "end of run" snapshots of a still-loaded process).
  std::int64_t run_timeline(int progress_fd, const std::function<bool()>& pool_open,
                            std::chrono::milliseconds first_timeout, std::chrono::milliseconds open_timeout,
                            std::chrono::milliseconds drain_timeout, const std::function<void()>& at_window_end);
  bool pool_not_open() const noexcept { return pool_not_open_; }

  /// Fills queries, qps, percentiles, errors, startup_ms, duration_s and
  /// window_cpu_s (this process's CPU from the window's start to its end, read
  /// on the main thread as each bound passes; -1 when the window never ran).
  void fill(run_result& r) const;

  /// Name of an error for errors_by_kind: the errc name (pool_timeout,
  /// queue_full...), "sqlstate_XXXXX" for server errors, else the category.
  static std::string kind_of(const std::error_code& ec);

 private:
  void count_error(const std::string& kind) noexcept;
  /// Records the first completion (any thread, once).
  void note_completion(bench_clock::time_point t) noexcept;
  bool in_window(bench_clock::time_point t) const noexcept {
    const auto begin = window_begin_ns_.load(std::memory_order_acquire);
    if (begin < 0) return false;
    const auto at = (t - t0_).count();
    return at >= begin && at < begin + duration_.count();
  }

  std::chrono::nanoseconds warmup_;
  std::chrono::nanoseconds duration_;
  bench_clock::time_point t0_;
  std::atomic<std::int64_t> first_completion_ns_{-1};  // since t0
  std::atomic<std::int64_t> window_begin_ns_{-1};      // since t0; -1 until started
  bool pool_not_open_ = false;
  double window_cpu_s_ = -1;
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
