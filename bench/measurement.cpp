#include "measurement.hpp"

#include "sampler.hpp"

#include <pgpipe/error.hpp>

#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <optional>
#include <string>
#include <thread>

namespace pgpipe::bench {

namespace {
std::chrono::nanoseconds seconds(double s) {
  return std::chrono::nanoseconds(static_cast<std::int64_t>(s * 1e9));
}
}  // namespace

measurement::measurement(double warmup_s, double duration_s)
    : warmup_(seconds(warmup_s)), duration_(seconds(duration_s)) {}

void measurement::start() {
  t0_ = bench_clock::now();
}

bool measurement::begin_query() noexcept {
  if (stopping()) return false;
  in_flight_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void measurement::note_completion(bench_clock::time_point t) noexcept {
  if (first_completion_ns_.load(std::memory_order_relaxed) >= 0) return;
  std::int64_t expected = -1;
  first_completion_ns_.compare_exchange_strong(expected, (t - t0_).count(), std::memory_order_relaxed);
}

void measurement::end_query(bench_clock::time_point started, const std::error_code& ec) noexcept {
  const auto t = bench_clock::now();
  note_completion(t);
  if (ec) {
    if (in_window(t)) count_error(kind_of(ec));
  } else {
    std::int64_t expected = -1;
    if (first_result_ns_.load(std::memory_order_relaxed) < 0) {
      first_result_ns_.compare_exchange_strong(expected, (t - t0_).count(), std::memory_order_relaxed);
    }
    if (in_window(t)) {
      latency_.record(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(t - started).count()));
    }
  }
  completed_.fetch_add(1, std::memory_order_relaxed);
  if (in_flight_.fetch_sub(1, std::memory_order_acq_rel) == 1 && stopping()) {
    std::lock_guard lock(mutex_);
    drained_.notify_all();
  }
}

void measurement::end_query_failed(bench_clock::time_point, const std::string& kind) noexcept {
  const auto t = bench_clock::now();
  note_completion(t);
  if (in_window(t)) count_error(kind);
  completed_.fetch_add(1, std::memory_order_relaxed);
  if (in_flight_.fetch_sub(1, std::memory_order_acq_rel) == 1 && stopping()) {
    std::lock_guard lock(mutex_);
    drained_.notify_all();
  }
}

void measurement::count_error(const std::string& kind) noexcept {
  try {
    std::lock_guard lock(mutex_);
    ++errors_[kind];
  } catch (...) {
    // Out of memory while counting an error: nothing sensible to do.
  }
}

std::string measurement::kind_of(const std::error_code& ec) {
  if (ec.category() == pgpipe::client_category()) {
    static const char* names[] = {"", "pool_timeout", "queue_full", "closed", "cancelled", "query_timeout",
                                  "not_sent", "connection_lost", "bad_conninfo", "server_unreachable",
                                  "auth_failed", "connect_failed", "bad_params", "invalid_argument",
                                  "conversion_error", "null_value", "out_of_range", "protocol_error"};
    const int v = ec.value();
    if (v > 0 && v < static_cast<int>(std::size(names))) return names[v];
    return "client_" + std::to_string(v);
  }
  if (ec.category() == pgpipe::sqlstate_category()) return "sqlstate_" + pgpipe::sqlstate_of(ec);
  return std::string(ec.category().name()) + "_" + std::to_string(ec.value());
}

std::int64_t measurement::run_timeline(int progress_fd, const std::function<bool()>& pool_open,
                                       std::chrono::milliseconds first_timeout, std::chrono::milliseconds open_timeout,
                                       std::chrono::milliseconds drain_timeout,
                                       const std::function<void()>& at_window_end) {
  // Sleeping here paces the measurement itself (and polls the pool's state,
  // which has no event to wait on): the clients run on other threads.
  using namespace std::chrono_literals;
  auto next_progress = t0_ + 1s;
  std::optional<bench_clock::time_point> begin, end;
  std::optional<double> cpu_begin;  // this process's CPU seconds as the window opened
  for (;;) {
    const auto now = bench_clock::now();
    if (!begin) {
      const auto first = first_completion_ns_.load(std::memory_order_relaxed);
      if (first < 0 && now - t0_ > first_timeout) break;  // nothing ever completed
      if (first >= 0) {
        const bool open = pool_open();
        if (open || now - (t0_ + std::chrono::nanoseconds(first)) > open_timeout) {
          pool_not_open_ = !open;
          begin = now + warmup_;
          end = *begin + duration_;
          window_begin_ns_.store((*begin - t0_).count(), std::memory_order_release);
        }
      }
    }
    if (begin && !cpu_begin && now >= *begin) cpu_begin = self_cpu_seconds();
    if (end && now >= *end) {
      if (cpu_begin) window_cpu_s_ = self_cpu_seconds() - *cpu_begin;
      break;
    }
    auto wake = std::min(next_progress, now + 100ms);
    if (begin && !cpu_begin) wake = std::min(wake, *begin);
    if (end) wake = std::min(wake, *end);
    std::this_thread::sleep_until(wake);
    if (bench_clock::now() >= next_progress) {
      const int phase = !begin ? 0 : bench_clock::now() < *begin ? 1 : 2;
      char line[96];
      const int n = std::snprintf(line, sizeof line, "P %lld %llu %d\n",
                                  static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(next_progress - t0_).count()),
                                  static_cast<unsigned long long>(completed_.load(std::memory_order_relaxed)), phase);
      if (progress_fd >= 0 && n > 0) {
        [[maybe_unused]] auto w = ::write(progress_fd, line, static_cast<std::size_t>(n));
      }
      next_progress += 1s;
    }
  }
  at_window_end();
  stopping_.store(true);
  std::unique_lock lock(mutex_);
  drained_.wait_for(lock, drain_timeout, [&] { return in_flight_.load() <= 0; });
  return in_flight_.load();
}

void measurement::fill(run_result& r) const {
  const double window_s = std::chrono::duration<double>(duration_).count();
  r.duration_s = window_s;
  r.queries = latency_.count();
  r.qps = window_s > 0 ? static_cast<double>(r.queries) / window_s : 0;
  r.p50_ms = static_cast<double>(latency_.percentile(0.50)) / 1000.0;
  r.p95_ms = static_cast<double>(latency_.percentile(0.95)) / 1000.0;
  r.p99_ms = static_cast<double>(latency_.percentile(0.99)) / 1000.0;
  r.max_ms = static_cast<double>(latency_.max()) / 1000.0;
  r.window_cpu_s = window_cpu_s_;
  r.errors = 0;
  {
    std::lock_guard lock(mutex_);
    r.errors_by_kind = errors_;
  }
  for (const auto& [k, n] : errors_) r.errors += n;
  const auto first = first_result_ns_.load();
  r.startup_ms = first < 0 ? -1 : static_cast<double>(first) / 1e6;
}

}  // namespace pgpipe::bench
