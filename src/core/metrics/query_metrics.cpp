// query_metrics: see query_metrics.hpp.
#include "core/metrics/query_metrics.hpp"

#include "core/pool/connect_error.hpp"

#include <pgpipe/error.hpp>

#include <utility>

namespace pgpipe::detail {

observed_start observe_start(query_observer& obs, const observed_query& q, std::uint64_t slot, int backend_pid,
                             metrics_clock::time_point now) noexcept {
  observed_start s;
  s.slot = slot;
  s.backend_pid = backend_pid;
  s.at = now;
  query_event e;
  e.sql = q.sql;
  e.slot = slot;
  e.backend_pid = backend_pid;
  e.on_lease = q.on_lease;
  e.attempt = q.attempt;
  e.wait = q.waited;
  try {
    s.user = obs.on_start(e);
  } catch (...) {
    // An observer must not throw (query_observer.hpp); it cannot fail the query.
  }
  return s;
}

void observe_end(query_observer& obs, const observed_query& q, const observed_start* started,
                 const std::error_code& ec, std::string_view sqlstate, std::uint64_t rows,
                 metrics_clock::time_point now) noexcept {
  query_event e;
  e.sql = q.sql;
  e.on_lease = q.on_lease;
  e.attempt = q.attempt;
  e.rerun = q.rerun;
  e.wait = q.waited;
  e.total = now - (q.called == metrics_clock::time_point{} ? q.submitted : q.called);
  e.ec = ec;
  e.sqlstate = sqlstate;
  e.rows = rows;
  if (started != nullptr) {
    e.started = true;
    e.slot = started->slot;
    e.backend_pid = started->backend_pid;
    e.server = now - started->at;
    e.user = started->user;
  }
  try {
    obs.on_end(e);
  } catch (...) {
  }
}

query_metrics::query_metrics(std::shared_ptr<query_observer> observer, logger_fn logger)
    : observer_(std::move(observer)) {
  if (logger) logger_ = std::make_shared<const logger_fn>(std::move(logger));
}

void query_metrics::set_logger(logger_fn fn) {
  auto p = fn ? std::make_shared<const logger_fn>(std::move(fn)) : nullptr;
  std::lock_guard lk(log_mu_);
  logger_ = std::move(p);
}

void query_metrics::log(log_level level, const std::string& line) const noexcept {
  std::shared_ptr<const logger_fn> l;
  {
    std::lock_guard lk(log_mu_);
    l = logger_;
  }
  if (!l || !*l) return;
  try {
    (*l)(level, line);
  } catch (...) {
    // A logger that throws must not take a connection down with it.
  }
}

void query_metrics::count_error(const std::error_code& ec) noexcept {
  if (ec.category() == sqlstate_category()) {
    err_server_.fetch_add(1, std::memory_order_relaxed);
  } else if (ec == errc_condition::connection_lost) {
    err_lost_.fetch_add(1, std::memory_order_relaxed);
  } else if (ec == errc::query_timeout) {
    err_timeout_.fetch_add(1, std::memory_order_relaxed);
  } else if (ec == errc::cancelled) {
    err_cancelled_.fetch_add(1, std::memory_order_relaxed);
  } else {
    err_other_.fetch_add(1, std::memory_order_relaxed);
  }
}

void query_metrics::count_unstarted_failure(const std::error_code& ec) noexcept {
  completed_.fetch_add(1, std::memory_order_relaxed);
  if (ec == errc::cancelled) {
    err_cancelled_.fetch_add(1, std::memory_order_relaxed);
  } else if (ec == errc::query_timeout) {
    err_timeout_.fetch_add(1, std::memory_order_relaxed);
  } else if (ec != errc::pool_timeout && ec != errc::queue_full && !is_connect_error(ec)) {
    err_other_.fetch_add(1, std::memory_order_relaxed);
  }
}

void query_metrics::fill_stats(pool_stats& s) const noexcept {
  s.completed = completed_.load(std::memory_order_relaxed);
  s.errors.connection_lost = err_lost_.load(std::memory_order_relaxed);
  s.errors.query_timeout = err_timeout_.load(std::memory_order_relaxed);
  s.errors.cancelled = err_cancelled_.load(std::memory_order_relaxed);
  s.errors.server = err_server_.load(std::memory_order_relaxed);
  s.errors.other = err_other_.load(std::memory_order_relaxed);
  s.query_duration = query_hist_.snapshot();
  s.acquire_wait = wait_hist_.snapshot();
}

}  // namespace pgpipe::detail
