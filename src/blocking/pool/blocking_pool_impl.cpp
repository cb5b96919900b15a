// blocking_pool_impl: acquire and give back, close and shutdown, stats (see
// blocking_pool_impl.hpp for the locking rules and the other rooms).
#include "blocking/pool/blocking_pool_impl.hpp"

#include "core/pool/connect_error.hpp"
#include "pq/libpq_version.hpp"

#include <string>
#include <utility>

namespace pgpipe::detail {

namespace {
connect_settings with_pool_settings(connect_settings s, const pool_params& params) {
  s.on_connect = session_statements(params);
  s.hooks = connect_hooks_of(params);
  return s;
}
}  // namespace

blocking_pool_impl::blocking_pool_impl(pool_params p, logger_fn logger)
    : params(std::move(p)),
      settings(with_pool_settings(make_connect_settings(params.conninfo, params.connect_timeout), params)),
      metrics(params.observer, std::move(logger)),
      core(params, 1) {
  require_supported_libpq();
}

void blocking_pool_impl::start() {
  std::unique_lock lk(mu);
  core.start(pool_clock::now());
  apply_actions();
  housekeeper = std::thread([this] { housekeeping_loop(); });
  bury(lk);
}

error blocking_pool_impl::make_error(const std::error_code& ec, std::chrono::milliseconds timeout) const {
  if (is_connect_error(ec) && last_connect_ec == ec) return error(ec, last_connect_diag);
  std::string msg;
  if (ec == errc::pool_timeout) {
    pool_stats s;
    core.fill_stats(s);
    msg = "no connection became free within " + std::to_string(timeout.count()) + " ms (max_size " +
          std::to_string(params.max_size) + ": " + std::to_string(s.busy) + " busy, " +
          std::to_string(s.idle) + " idle, " + std::to_string(s.connecting) + " connecting, " +
          std::to_string(s.queued) + " queued)";
    if (last_connect_ec) msg += "; last connect attempt: " + last_connect_diag.to_string();
  } else if (ec == errc::queue_full) {
    msg = "max_queued (" + std::to_string(params.max_queued) + ") callers are already waiting";
  } else if (ec == errc::closed) {
    msg = "the pool is closed";
  } else {
    msg = ec.message();
  }
  return error(ec, msg);
}

blocking_lease blocking_pool_impl::acquire(std::chrono::milliseconds timeout, std::chrono::nanoseconds* waited) {
  // Held for the whole wait: a waiter woken by close() still touches the
  // pool after it wakes, and it becomes the lease's reference.
  auto self = shared_from_this();
  const auto start = pool_clock::now();
  const auto deadline = start + timeout;
  auto waited_until_now = [&] {
    const std::chrono::nanoseconds w = pool_clock::now() - start;
    metrics.record_wait(w);
    if (waited) *waited = w;
  };
  for (;;) {
    std::unique_lock lk(mu);
    const auto outcome = core.request(pool_clock::now(), request_kind::exclusive, deadline);
    slot_id slot = 0;
    if (outcome.what == request_outcome::kind::granted) {
      slot = outcome.slot;
      slots.lease(slot);
      apply_actions();
    } else if (outcome.what == request_outcome::kind::rejected) {
      apply_actions();
      error e = make_error(outcome.ec, timeout);
      bury(lk);
      throw e;
    } else {
      waiter w;
      waiters.emplace(outcome.waiter, &w);
      apply_actions();
      // pool_core grants or fails every queued waiter: at its deadline at
      // the latest, driven by the housekeeper's tick.
      w.cv.wait(lk, [&] { return w.done; });
      if (w.ec) {
        waited_until_now();
        error e = make_error(w.ec, timeout);
        bury(lk);
        throw e;
      }
      slot = w.slot;
    }
    const auto out = slots.hand_out(slot, pool_clock::now());
    bury(lk);
    if (out.conn != nullptr && (!out.probe || out.conn->looks_alive())) {
      waited_until_now();
      return blocking_lease(std::move(self), slot, out.conn);
    }
    // The server side of this idle connection went away while it sat in
    // the pool (terminated backend, server restart). Nothing ran on it, so
    // replacing it is invisible to the caller: report it and ask again
    // within the same deadline.
    lk.lock();
    give_back_locked(slot, /*reuse=*/false);
    bury(lk);
  }
}

void blocking_pool_impl::give_back_locked(slot_id slot, bool reuse) {
  const auto now = pool_clock::now();
  end_hold(slots.lease_ended(slot, reuse, "broken, or returned in a state that could not be cleaned", now), [&] {
    if (reuse) {
      core.release(now, slot, request_kind::exclusive);
    } else {
      core.on_broken(now, slot);
    }
  });
  apply_actions();
}

void blocking_pool_impl::give_back(slot_id slot, pooled_connection* conn, bool broken) noexcept {
  // The ROLLBACK of a transaction left open runs here, on the caller's
  // thread, before the connection is visible to anyone else.
  const bool reuse = !broken && conn->reset_for_reuse();
  std::unique_lock lk(mu);
  give_back_locked(slot, reuse);
  bury(lk);
}

void blocking_pool_impl::close() {
  std::unique_lock lk(mu);
  core.close(pool_clock::now());
  apply_actions();
  bury(lk);
}

void blocking_pool_impl::shutdown() {
  std::unique_lock lk(mu);
  core.close(pool_clock::now());
  apply_actions();
  stopping = true;
  hk_cv.notify_all();
  io_cv.notify_all();
  bury(lk);
  if (housekeeper.joinable()) housekeeper.join();
  // Connector threads finish the task in hand (a connect is bounded by
  // connect_timeout); queued opens are dropped with the pool.
  lk.lock();
  std::vector<std::thread> threads;
  threads.swap(io_threads);
  lk.unlock();
  for (auto& t : threads) t.join();
  lk.lock();
  io_queue.clear();
  // Idle connections left (pool_core closed them, but a connect that
  // completed during shutdown may have parked one): close all but the
  // leased ones, which close when their lease ends.
  for (auto& conn : slots.take_idle()) dead.add(std::move(conn));
  bury(lk);
}

pool_stats blocking_pool_impl::stats() const {
  pool_stats s;
  std::lock_guard lk(mu);
  core.fill_stats(s);
  metrics.fill_stats(s);
  s.threads = (stopping ? 0 : 1) + io_running;  // the housekeeper, then connectors
  s.runtime = runtime.snapshot();
  return s;
}

}  // namespace pgpipe::detail
