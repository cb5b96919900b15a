// blocking_pool: drives the sans-IO pool_core with a mutex, condition
// variables and a few threads of its own.
//
// Locking: one mutex guards pool_core and the driver's bookkeeping. Nothing
// that can block on the network runs under it: connects, health checks and
// the ROLLBACK of a returned lease run on connector threads or on the
// caller's thread with the mutex released; closing a connection (PQfinish)
// happens after the mutex is released ("graveyard").
#include <pgpipe/blocking_pool.hpp>

#include "blocking/connection/lease_access.hpp"
#include "blocking/connection/pooled_connection.hpp"
#include "pq/libpq_failure.hpp"
#include "core/metrics/latency_recorder.hpp"
#include "core/pool/pool_core.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

namespace pgpipe::detail {

namespace {
// Connector threads that found no work for this long exit: the pool needs
// them in bursts (start-up, replacing connections), and idle threads would
// blur the thread count the blocking driver is measured by (a pool of 200
// opens 200 connections at once, then needs none of those threads). Starting
// a thread costs far less than the connect it serves, so they linger only
// long enough to take the next task of the same burst.
constexpr std::chrono::milliseconds connector_idle_exit{100};
// At most this many connects (and health checks) run at once. pool_core may
// ask for max_size connects together (min_size at start-up, a server
// restart); beyond a few in parallel they only queue for the server's CPUs
// (each backend is a fork plus SCRAM), while every extra thread would show in
// the blocking driver's thread count, which is meant to measure one thing:
// a thread per in-flight query.
constexpr std::size_t max_connector_threads = 4;
// A connection given back less than this long ago is handed out again without
// the liveness probe (looks_alive: a poll() system call, about 3 us of client
// CPU per query in this VM, a sixth of the blocking driver's syscalls). The
// probe is there for connections that *sat* in the pool while their backend
// died (terminated, server restarted). A backend that dies within this window
// after the release is the race every hand-out already has (it could die a
// microsecond after the probe): the statement fails with connection_lost and
// the connection is replaced. Killing a backend and seeing it gone takes two
// server round trips and a process exit, far longer than this; a busy pool
// re-leases a connection within tens of microseconds. HikariCP skips its
// validation the same way (aliveBypassWindowMs, 500 ms); ours is kept tiny so
// that a connection idle for any human-visible time is still probed.
constexpr std::chrono::microseconds liveness_bypass{250};

bool is_connect_error(const std::error_code& ec) {
  return ec == errc_condition::connect_error || ec.category() == sqlstate_category();
}
}  // namespace

struct blocking_pool_impl : std::enable_shared_from_this<blocking_pool_impl> {
  struct slot_entry {
    std::unique_ptr<pooled_connection> conn;  // null while connecting
    bool leased = false;
    bool checking = false;
    bool close_pending = false;  // pool_core closed it while a lease/check/connect had it
    // When a lease last gave it back for reuse; the epoch (never) until then,
    // so a newly opened connection is always probed at hand-out.
    time_point returned_at{};
    // Why the pool is about to close it, for the log line (the async
    // driver's wording): set where the reason is known, read at the close.
    const char* why_closing = "closed by the pool";
  };

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

  blocking_pool_impl(pool_params p, logger_fn logger)
      : params(std::move(p)),
        settings(with_on_connect(make_connect_settings(params.conninfo, params.connect_timeout), session_statements(params))),
        core(params, 1) {
    if (logger) logger_ = std::make_shared<const logger_fn>(std::move(logger));
  }

  static connect_settings with_on_connect(connect_settings s, const std::vector<std::string>& on_connect) {
    s.on_connect = on_connect;
    return s;
  }

  // The logger is swapped under its own mutex and called outside it.
  mutable std::mutex log_mu;
  std::shared_ptr<const logger_fn> logger_;
  void set_logger(logger_fn fn) {
    auto p = fn ? std::make_shared<const logger_fn>(std::move(fn)) : nullptr;
    std::lock_guard lk(log_mu);
    logger_ = std::move(p);
  }
  void log(log_level level, const std::string& line) const noexcept {
    std::shared_ptr<const logger_fn> l;
    {
      std::lock_guard lk(log_mu);
      l = logger_;
    }
    if (!l) return;
    try {
      (*l)(level, line);
    } catch (...) {
      // A logger that throws must not take a connection down with it.
    }
  }

  const pool_params params;
  const connect_settings settings;

  mutable std::mutex mu;
  pool_core core;
  std::unordered_map<slot_id, slot_entry> slots;
  std::unordered_map<waiter_id, waiter*> waiters;
  // Connections to close once the mutex is released (PQfinish does I/O).
  std::vector<std::unique_ptr<pooled_connection>> graveyard;
  // Log lines decided under the mutex, emitted by bury() once it is released:
  // a logger may call back into the pool (stats()).
  std::vector<std::pair<log_level, std::string>> pending_logs;

  // Moves a slot's connection to the graveyard, logging why (under the mutex).
  void retire(slot_id slot, slot_entry& e) {
    if (e.conn) {
      pending_logs.emplace_back(e.why_closing == std::string_view("closed by the pool") ? log_level::info
                                                                                          : log_level::warning,
                                "disconnected (slot " + std::to_string(slot) + ", backend pid " +
                                    std::to_string(e.conn->backend_pid()) + "): " + e.why_closing);
    }
    graveyard.push_back(std::move(e.conn));
  }

  std::deque<io_task> io_queue;
  std::condition_variable io_cv;
  std::vector<std::thread> io_threads;
  std::vector<std::thread::id> io_finished;
  std::size_t io_running = 0;
  std::size_t io_idle = 0;

  std::thread housekeeper;
  std::condition_variable hk_cv;
  std::optional<time_point> hk_wake;  // when the housekeeper will wake; empty = never
  bool stopping = false;

  std::error_code last_connect_ec;
  diagnostics last_connect_diag;

  std::atomic<std::uint64_t> completed{0};
  std::atomic<std::uint64_t> connection_lost{0};
  std::atomic<std::uint64_t> server_errors{0};
  std::atomic<std::uint64_t> other_errors{0};
  latency_recorder query_hist;  // stats().query_duration (exec() calls)
  latency_recorder wait_hist;   // stats().acquire_wait (every acquire)

  void start() {
    std::unique_lock lk(mu);
    core.start(pool_clock::now());
    apply_actions();
    housekeeper = std::thread([this] { housekeeping_loop(); });
    bury(lk);
  }

  // Releases the mutex, then closes the connections that pool_core dropped.
  void bury(std::unique_lock<std::mutex>& lk) {
    std::vector<std::unique_ptr<pooled_connection>> dead;
    dead.swap(graveyard);
    std::vector<std::pair<log_level, std::string>> lines;
    lines.swap(pending_logs);
    lk.unlock();
    dead.clear();
    for (const auto& [level, line] : lines) log(level, line);
  }

  // Carries out what pool_core asked for. Called with the mutex held after
  // every call into pool_core.
  void apply_actions() {
    for (;;) {
      auto actions = core.take_actions();
      if (actions.empty()) break;
      for (auto& a : actions) {
        switch (a.what) {
          case pool_action::kind::open: {
            auto& e = slots[a.slot];
            e.close_pending = false;
            io_queue.push_back({io_kind::open, a.slot});
            break;
          }
          case pool_action::kind::check: {
            auto it = slots.find(a.slot);
            if (it == slots.end() || !it->second.conn) break;
            it->second.checking = true;
            io_queue.push_back({io_kind::check, a.slot});
            break;
          }
          case pool_action::kind::close: {
            auto it = slots.find(a.slot);
            if (it == slots.end()) break;
            auto& e = it->second;
            if (e.leased || e.checking || !e.conn) {
              e.close_pending = true;  // whoever holds it closes it when done
            } else {
              retire(a.slot, e);
              slots.erase(it);
            }
            break;
          }
          case pool_action::kind::grant: {
            auto w = waiters.find(a.waiter);
            if (w == waiters.end()) {
              // Nobody waits under that id (cannot happen while waiters
              // register under the same lock as request()): give it back
              // rather than leak the capacity.
              core.release(pool_clock::now(), a.slot, request_kind::exclusive);
              break;
            }
            slots[a.slot].leased = true;
            w->second->slot = a.slot;
            w->second->done = true;
            w->second->cv.notify_one();
            waiters.erase(w);
            break;
          }
          case pool_action::kind::fail: {
            auto w = waiters.find(a.waiter);
            if (w == waiters.end()) break;
            w->second->ec = a.ec;
            w->second->done = true;
            w->second->cv.notify_one();
            waiters.erase(w);
            break;
          }
        }
      }
    }
    start_connectors();
    // Wake the housekeeper when pool_core now wants a tick earlier than the
    // housekeeper planned to wake.
    if (auto t = core.next_timer(); t && (!hk_wake || *t < *hk_wake)) hk_cv.notify_one();
  }

  void start_connectors() {
    if (stopping || io_queue.empty()) return;
    if (!io_finished.empty()) {
      // Reap connector threads that exited after idling (they released the
      // mutex and are returning, so these joins are short).
      for (auto it = io_threads.begin(); it != io_threads.end();) {
        if (std::find(io_finished.begin(), io_finished.end(), it->get_id()) != io_finished.end()) {
          it->join();
          it = io_threads.erase(it);
        } else {
          ++it;
        }
      }
      io_finished.clear();
    }
    // One thread per task waiting for one, up to max_connector_threads, so
    // connects run in parallel. A thread counts as idle from its creation
    // until it takes a task, so two calls in a row do not both start threads
    // for the same queued tasks.
    if (io_idle > 0) io_cv.notify_all();
    while (io_idle < io_queue.size() && io_running < max_connector_threads) {
      ++io_running;
      ++io_idle;
      io_threads.emplace_back([this] { connector_loop(); });
    }
  }

  // Runs with io_idle counting this thread whenever it holds no task.
  void connector_loop() {
    std::unique_lock lk(mu);
    for (;;) {
      if (stopping) break;
      if (!io_queue.empty()) {
        io_task t = io_queue.front();
        io_queue.pop_front();
        --io_idle;
        if (t.what == io_kind::open) {
          run_open(lk, t.slot);
        } else {
          run_check(lk, t.slot);
        }
        ++io_idle;
        continue;
      }
      if (!io_cv.wait_for(lk, connector_idle_exit, [&] { return stopping || !io_queue.empty(); })) break;
    }
    --io_idle;
    --io_running;
    io_finished.push_back(std::this_thread::get_id());
  }

  // Called and returns with the mutex held; connects with it released.
  void run_open(std::unique_lock<std::mutex>& lk, slot_id slot) {
    lk.unlock();
    std::unique_ptr<pooled_connection> conn;
    std::error_code ec;
    diagnostics diag;
    try {
      conn = std::make_unique<pooled_connection>(settings, slot, [weak = weak_from_this()](bool warning, const std::string& line) {
        if (auto self = weak.lock()) self->log(warning ? log_level::warning : log_level::info, line);
      });
    } catch (const error& e) {
      ec = e.code();
      diag = e.diag();
    } catch (const std::exception& e) {
      ec = errc::connect_failed;
      diag.client_message = clean_message(std::string("could not connect: ") + e.what(), settings.secrets);
    }
    if (conn) {
      log(log_level::info, "connected (slot " + std::to_string(slot) + ", backend pid " +
                               std::to_string(conn->backend_pid()) + ")");
    } else {
      // diag carries no password (pq/libpq_failure scrubs every message).
      log(log_level::warning, "connect failed (slot " + std::to_string(slot) + "): " + diag.to_string());
    }
    lk.lock();
    const auto now = pool_clock::now();
    auto it = slots.find(slot);
    if (it == slots.end() || it->second.close_pending) {
      // pool_core closed the slot while it was connecting.
      if (it != slots.end()) slots.erase(it);
      if (conn) graveyard.push_back(std::move(conn));
      bury(lk);
      lk.lock();
      return;
    }
    if (conn) {
      it->second.conn = std::move(conn);
      core.on_open_succeeded(now, slot);
    } else {
      last_connect_ec = ec;
      last_connect_diag = std::move(diag);
      slots.erase(it);  // pool_core forgets a failed slot (no close action follows)
      core.on_open_failed(now, slot, ec);
    }
    apply_actions();
    bury(lk);
    lk.lock();
  }

  void run_check(std::unique_lock<std::mutex>& lk, slot_id slot) {
    auto it = slots.find(slot);
    if (it == slots.end() || !it->second.conn) return;
    pooled_connection* conn = it->second.conn.get();
    lk.unlock();
    const bool healthy = conn->health_check();
    lk.lock();
    it = slots.find(slot);
    if (it == slots.end()) return;
    it->second.checking = false;
    if (!healthy) it->second.why_closing = "health check failed";
    if (it->second.close_pending) {
      retire(slot, it->second);
      slots.erase(it);
    } else {
      core.on_check_done(pool_clock::now(), slot, healthy);
    }
    apply_actions();
    bury(lk);
    lk.lock();
  }

  void housekeeping_loop() {
    std::unique_lock lk(mu);
    while (!stopping) {
      hk_wake = core.next_timer();
      if (hk_wake) {
        hk_cv.wait_until(lk, *hk_wake);
      } else {
        hk_cv.wait(lk);
      }
      if (stopping) break;
      const auto now = pool_clock::now();
      if (auto t = core.next_timer(); t && *t <= now) {
        core.on_tick(now);
        apply_actions();
        bury(lk);
        lk.lock();
      }
    }
    hk_wake.reset();
  }

  error make_error(const std::error_code& ec, std::chrono::milliseconds timeout) const {
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

  // `waited`, when given, receives the time until the grant (or the pool's failure).
  blocking_lease acquire(std::chrono::milliseconds timeout, std::chrono::nanoseconds* waited = nullptr) {
    // Held for the whole wait: a waiter woken by close() still touches the
    // pool after it wakes, and it becomes the lease's reference.
    auto self = shared_from_this();
    const auto start = pool_clock::now();
    const auto deadline = start + timeout;
    auto waited_until_now = [&] {
      const std::chrono::nanoseconds w = pool_clock::now() - start;
      wait_hist.record(w);
      if (waited) *waited = w;
    };
    for (;;) {
      std::unique_lock lk(mu);
      const auto outcome = core.request(pool_clock::now(), request_kind::exclusive, deadline);
      slot_id slot = 0;
      if (outcome.what == request_outcome::kind::granted) {
        slot = outcome.slot;
        slots[slot].leased = true;
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
      auto& entry = slots[slot];
      pooled_connection* conn = entry.conn.get();
      const bool just_returned = pool_clock::now() - entry.returned_at < liveness_bypass;
      bury(lk);
      if (conn != nullptr && (just_returned || conn->looks_alive())) {
        waited_until_now();
        return blocking_lease(std::move(self), slot, conn);
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

  void give_back_locked(slot_id slot, bool reuse) {
    const auto now = pool_clock::now();
    auto it = slots.find(slot);
    if (it == slots.end()) return;
    it->second.leased = false;
    if (!reuse) it->second.why_closing = "broken, or returned in a state that could not be cleaned";
    if (it->second.close_pending) {
      retire(slot, it->second);
      slots.erase(it);
    } else if (reuse) {
      it->second.returned_at = now;
      core.release(now, slot, request_kind::exclusive);
    } else {
      core.on_broken(now, slot);
    }
    apply_actions();
  }

  void give_back(slot_id slot, pooled_connection* conn, bool broken) noexcept {
    // The ROLLBACK of a transaction left open runs here, on the caller's
    // thread, before the connection is visible to anyone else.
    const bool reuse = !broken && conn->reset_for_reuse();
    std::unique_lock lk(mu);
    completed.fetch_add(1, std::memory_order_relaxed);
    give_back_locked(slot, reuse);
    bury(lk);
  }

  void close() {
    std::unique_lock lk(mu);
    core.close(pool_clock::now());
    apply_actions();
    bury(lk);
  }

  void shutdown() {
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
    for (auto it = slots.begin(); it != slots.end();) {
      if (!it->second.leased && it->second.conn) {
        graveyard.push_back(std::move(it->second.conn));
        it = slots.erase(it);
      } else {
        ++it;
      }
    }
    bury(lk);
  }

  pool_stats stats() const {
    pool_stats s;
    std::lock_guard lk(mu);
    core.fill_stats(s);
    s.completed = completed.load(std::memory_order_relaxed);
    s.errors.connection_lost += connection_lost.load(std::memory_order_relaxed);
    s.errors.server += server_errors.load(std::memory_order_relaxed);
    s.errors.other += other_errors.load(std::memory_order_relaxed);
    s.threads = (stopping ? 0 : 1) + io_running;  // the housekeeper, then connectors
    s.query_duration = query_hist.snapshot();
    s.acquire_wait = wait_hist.snapshot();
    return s;
  }
};

}  // namespace pgpipe::detail

#if defined(__SANITIZE_ADDRESS__)
// libpqxx 6.4 leaks the PGresult of a statement during which the connection
// died: connection_base::make_result() asks for the client encoding, which
// throws broken_connection on a dead connection, before it owns the result
// (libpqxx 7 fixed the order). A pool that survives connection loss meets this
// on every lost connection, and LeakSanitizer would fail the fault tests for
// a leak that is not ours. Only ASan builds carry this hook (it lives in this
// file so that every program using blocking_pool links it).
extern "C" const char* __lsan_default_suppressions() {
  return "leak:pqxx::connection_base::exec\n"
         "leak:pqxx::connection_base::register_prepared\n";
}
#endif

namespace pgpipe {

// ---- blocking_lease -------------------------------------------------------

blocking_lease::blocking_lease(std::shared_ptr<detail::blocking_pool_impl> pool, std::uint64_t slot,
                               detail::pooled_connection* conn) noexcept
    : pool_(std::move(pool)), slot_(slot), conn_(conn) {}

blocking_lease::blocking_lease(blocking_lease&& other) noexcept
    : pool_(std::move(other.pool_)),
      slot_(other.slot_),
      conn_(std::exchange(other.conn_, nullptr)),
      broken_(std::exchange(other.broken_, false)) {}

blocking_lease& blocking_lease::operator=(blocking_lease&& other) noexcept {
  if (this != &other) {
    release();
    pool_ = std::move(other.pool_);
    slot_ = other.slot_;
    conn_ = std::exchange(other.conn_, nullptr);
    broken_ = std::exchange(other.broken_, false);
  }
  return *this;
}

blocking_lease::~blocking_lease() { release(); }

pqxx::connection_base& blocking_lease::operator*() const noexcept { return *conn_; }
pqxx::connection_base* blocking_lease::operator->() const noexcept { return conn_; }

void blocking_lease::release() noexcept {
  if (conn_ == nullptr) return;
  auto pool = std::move(pool_);
  auto* conn = std::exchange(conn_, nullptr);
  const bool broken = std::exchange(broken_, false) || !conn->is_open();
  pool->give_back(slot_, conn, broken);
}

const std::string* blocking_lease::statement_for(std::string_view sql) {
  // One cap for both drivers; the public constant documents it.
  static_assert(max_prepared_per_connection == detail::max_prepared_statements);
  return conn_->statement_for(sql, max_prepared_per_connection);
}

const std::string* blocking_lease::renew_statement(std::string_view sql) {
  const std::string* name = conn_->renew_statement(sql);
  if (!name) throw error(errc::protocol_error, "no cached statement to renew");
  return name;
}

void blocking_lease::pooler_suspected() {
  diagnostics d;
  const std::error_code ec = detail::translate_exception(std::current_exception(), &d);
  d.client_message = detail::pooler_suspected_message(d.sqlstate);
  if (conn_->stop_naming_statements() && pool_) {
    pool_->log(log_level::warning, "slot " + std::to_string(slot_) + ": " + d.client_message);
  }
  note_error(ec);
  throw error(ec, std::move(d));
}

void blocking_lease::discard() noexcept {
  if (conn_ == nullptr) return;
  broken_ = true;
  release();
}

void blocking_lease::note_error(const std::error_code& ec) noexcept {
  if (!pool_) return;
  if (is_connection_lost(ec)) {
    pool_->connection_lost.fetch_add(1, std::memory_order_relaxed);
  } else if (ec.category() == sqlstate_category()) {
    pool_->server_errors.fetch_add(1, std::memory_order_relaxed);
  } else {
    pool_->other_errors.fetch_add(1, std::memory_order_relaxed);
  }
}

// ---- exec_watch -----------------------------------------------------------

namespace detail {

void commit_work(pqxx::work& tx, const blocking_lease& lease) {
  try {
    tx.commit();
    return;
  } catch (const pqxx::usage_error&) {
    // Only when no transaction is open on the server any more (libpqxx
    // aborted it after the failed statement) is this the swallowed error;
    // any other misuse keeps libpqxx's own error.
    PGconn* pg = lease_access::raw(lease);
    const auto status = pg != nullptr ? PQtransactionStatus(pg) : PQTRANS_UNKNOWN;
    if (status != PQTRANS_IDLE && status != PQTRANS_INERROR) throw;
  }
  diagnostics d;
  d.sqlstate = "25P02";
  d.client_message = "the transaction had failed (an error inside the work was not passed on): it was rolled back";
  throw error(make_sqlstate("25P02"), std::move(d));
}

exec_watch::exec_watch(blocking_pool_impl& pool, std::string_view sql) noexcept
    : pool_(pool), sql_(sql), submitted_(pool_clock::now()) {}

blocking_lease exec_watch::acquire() {
  blocking_lease lease;
  try {
    lease = pool_.acquire(pool_.params.acquire_timeout, &waited_);
  } catch (...) {
    fail(nullptr);
  }
  if (query_observer* obs = pool_.params.observer.get()) {
    started_ = pool_clock::now();
    slot_ = lease.slot_;
    backend_pid_ = lease.conn_->backend_pid();
    query_event e;
    e.sql = sql_;
    e.slot = slot_;
    e.backend_pid = backend_pid_;
    e.wait = waited_;
    try {
      user_ = obs->on_start(e);
    } catch (...) {
      // An observer must not throw (query_observer.hpp); it cannot fail the query.
    }
    observed_start_ = true;
  }
  return lease;
}

pqxx::result exec_watch::done(pqxx::result r) noexcept {
  end({}, {}, r.empty() ? static_cast<std::uint64_t>(r.affected_rows()) : static_cast<std::uint64_t>(r.size()));
  return r;
}

void exec_watch::fail(blocking_lease* lease) {
  try {
    rethrow_translated(lease);
  } catch (const error& e) {
    end(e.code(), e.diag().sqlstate, 0);
    throw;
  } catch (...) {
    diagnostics d;
    end(translate_exception(std::current_exception(), &d), d.sqlstate, 0);
    throw;
  }
}

void exec_watch::end(const std::error_code& ec, std::string_view sqlstate, std::uint64_t rows) noexcept {
  const auto now = pool_clock::now();
  pool_.query_hist.record(now - submitted_);
  query_observer* obs = pool_.params.observer.get();
  if (!obs) return;
  query_event e;
  e.sql = sql_;
  e.wait = waited_;
  e.total = now - submitted_;
  e.ec = ec;
  e.sqlstate = sqlstate;
  e.rows = rows;
  if (observed_start_) {
    e.started = true;
    e.slot = slot_;
    e.backend_pid = backend_pid_;
    e.server = now - started_;
    e.user = user_;
  }
  try {
    obs->on_end(e);
  } catch (...) {
  }
}

}  // namespace detail

// ---- blocking_pool --------------------------------------------------------

blocking_pool::blocking_pool(pool_params params) : blocking_pool(std::move(params), logger_fn{}) {}

blocking_pool::blocking_pool(pool_params params, logger_fn logger)
    : impl_(std::make_shared<detail::blocking_pool_impl>(std::move(params), std::move(logger))),
      prepared_statements_(impl_->params.prepared_statements) {
  impl_->start();
}

blocking_pool::~blocking_pool() { impl_->shutdown(); }

blocking_lease blocking_pool::acquire() { return impl_->acquire(impl_->params.acquire_timeout); }

blocking_lease blocking_pool::acquire(std::chrono::milliseconds timeout) { return impl_->acquire(timeout); }

void blocking_pool::close() { impl_->close(); }

void blocking_pool::set_logger(logger_fn logger) { impl_->set_logger(std::move(logger)); }

pool_stats blocking_pool::stats() const { return impl_->stats(); }

const pool_params& blocking_pool::params() const noexcept { return impl_->params; }

}  // namespace pgpipe
