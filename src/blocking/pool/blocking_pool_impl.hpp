// blocking_pool_impl: drives the sans-IO pool_core with a mutex, condition
// variables and a few threads of its own. What blocking_pool, its leases and
// exec_watch are made of.
//
// Locking: one mutex guards pool_core and the driver's bookkeeping. Nothing
// that can block on the network runs under it: connects, health checks and
// the ROLLBACK of a returned lease run on connector threads or on the
// caller's thread with the mutex released; closing a connection (PQfinish)
// happens after the mutex is released (graveyard.hpp).
//
// Its rooms, one file each in this folder:
//   blocking_pool_impl.cpp  acquire and give back, close, shutdown, stats
//   action_applier.cpp      carrying out pool_core's actions
//   connector_threads.cpp   the threads that open and health-check connections
//   housekeeper.cpp         the thread that drives pool_core's deadlines
//   graveyard.*             connections and log lines dealt with after the lock
//   slot_book.hpp           which connection each slot holds, and who holds it
#pragma once

#include <pgpipe/blocking_lease.hpp>
#include <pgpipe/logger.hpp>
#include <pgpipe/pool_params.hpp>
#include <pgpipe/stats.hpp>

#include "blocking/connection/pooled_connection.hpp"
#include "blocking/pool/graveyard.hpp"
#include "blocking/pool/slot_book.hpp"
#include "core/metrics/query_metrics.hpp"
#include "core/pool/pool_core.hpp"
#include "pq/libpq_version.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

namespace pgpipe::detail {

struct blocking_pool_impl : std::enable_shared_from_this<blocking_pool_impl> {
  using slot_book_type = slot_book<pooled_connection>;

  struct waiter {
    std::condition_variable cv;
    bool done = false;
    slot_id slot = 0;
    std::error_code ec;
  };

  enum class io_kind { open, check };
  struct io_task {
    io_kind what;
    slot_id slot;
  };

  blocking_pool_impl(pool_params p, logger_fn logger);

  const pool_params params;
  const connect_settings settings;
  // The logger slot, the observer, the counters and histograms of stats().
  query_metrics metrics;
  runtime_record runtime;  // stats().runtime

  mutable std::mutex mu;
  pool_core core;
  slot_book_type slots;
  std::unordered_map<waiter_id, waiter*> waiters;
  graveyard dead;

  // Connector threads (connector_threads.cpp), under mu.
  std::deque<io_task> io_queue;
  std::condition_variable io_cv;
  std::vector<std::thread> io_threads;
  std::vector<std::thread::id> io_finished;
  std::size_t io_running = 0;
  std::size_t io_idle = 0;

  // The housekeeper (housekeeper.cpp), under mu.
  std::thread housekeeper;
  std::condition_variable hk_cv;
  std::optional<time_point> hk_wake;  // when the housekeeper will wake; empty = never
  bool stopping = false;

  std::error_code last_connect_ec;
  diagnostics last_connect_diag;

  void start();
  /// Borrows a connection within `timeout`; `waited`, when given, receives
  /// the time until the grant (or the pool's failure). Throws pgpipe::error.
  blocking_lease acquire(std::chrono::milliseconds timeout, std::chrono::nanoseconds* waited = nullptr);
  /// A lease ends: `conn` is reset for reuse on the caller's thread (unless
  /// broken), then returned to pool_core or replaced.
  void give_back(slot_id slot, pooled_connection* conn, bool broken) noexcept;
  void close();
  /// close(), then joins the pool's own threads.
  void shutdown();
  pool_stats stats() const;

  // Called with mu held after every call into pool_core: carries out what it
  // asked for (action_applier.cpp).
  void apply_actions();
  // Releases mu, then closes and logs what the graveyard gathered.
  void bury(std::unique_lock<std::mutex>& lk) { dead.bury(lk, metrics); }
  // Moves a slot's connection to the graveyard, logging why (under mu).
  void retire(slot_book_type::retired r) {
    dead.retire(r.slot, std::move(r.conn), r.why != nullptr ? r.why : graveyard::closed_by_pool);
  }

 private:
  void give_back_locked(slot_id slot, bool reuse);
  // The holder of a slot is done with it: tells pool_core, or closes the
  // connection when pool_core closed the slot meanwhile (slot_book rule 1).
  // Reports to pool_core through `tell`.
  template <class Tell>
  void end_hold(slot_book_type::hold_end end, Tell tell) {
    if (end.closed) retire(std::move(*end.closed));
    if (end.tell_pool) tell();
  }
  error make_error(const std::error_code& ec, std::chrono::milliseconds timeout) const;

  // connector_threads.cpp
  void start_connectors();
  void connector_loop();
  void run_open(std::unique_lock<std::mutex>& lk, slot_id slot);
  void run_check(std::unique_lock<std::mutex>& lk, slot_id slot);

  // housekeeper.cpp
  void housekeeping_loop();
};

}  // namespace pgpipe::detail
