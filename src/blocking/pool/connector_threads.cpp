// The blocking pool's connector threads: they open and health-check
// connections off the pool's lock, so a slow connect never delays handing
// out an idle connection. Started on demand by apply_actions, one per task
// waiting for one, up to max_connector_threads.
#include "blocking/pool/blocking_pool_impl.hpp"

#include "core/pool/connect_error.hpp"
#include "pq/libpq_failure.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>

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
}  // namespace

void blocking_pool_impl::start_connectors() {
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
void blocking_pool_impl::connector_loop() {
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
void blocking_pool_impl::run_open(std::unique_lock<std::mutex>& lk, slot_id slot) {
  lk.unlock();
  std::unique_ptr<pooled_connection> conn;
  std::error_code ec;
  diagnostics diag;
  try {
    conn = std::make_unique<pooled_connection>(settings, slot, [weak = weak_from_this()](bool warning, const std::string& line) {
      if (auto self = weak.lock()) self->metrics.log(warning ? log_level::warning : log_level::info, line);
    });
  } catch (const error& e) {
    ec = e.code();
    diag = e.diag();
  } catch (const std::exception& e) {
    ec = errc::connect_failed;
    diag.client_message = clean_message(connect_error_text(e.what()), settings.secrets);
  }
  if (conn) {
    runtime.saw_connection(conn->raw());
    metrics.log(log_level::info, "connected (slot " + std::to_string(slot) + ", backend pid " +
                                     std::to_string(conn->backend_pid()) + ")");
  } else {
    // diag carries no password (pq/libpq_failure scrubs every message).
    metrics.log(log_level::warning, "connect failed (slot " + std::to_string(slot) + "): " + diag.to_string());
  }
  lk.lock();
  const auto now = pool_clock::now();
  switch (slots.open_ended(slot, conn)) {
    case slot_book_type::open_verdict::closed_meanwhile:
      // pool_core closed the slot while it was connecting.
      if (conn) dead.add(std::move(conn));
      bury(lk);
      lk.lock();
      return;
    case slot_book_type::open_verdict::connected:
      core.on_open_succeeded(now, slot);
      break;
    case slot_book_type::open_verdict::failed:
      // pool_core forgets a failed slot (no close action follows).
      last_connect_ec = ec;
      last_connect_diag = std::move(diag);
      // diag.client_message holds libpq's words, which say what the code
      // cannot (an unknown host shares server_unreachable with a refused port).
      core.on_open_failed(now, slot, ec, kind_of_connect_failure(ec, last_connect_diag.client_message));
      break;
  }
  apply_actions();
  bury(lk);
  lk.lock();
}

void blocking_pool_impl::run_check(std::unique_lock<std::mutex>& lk, slot_id slot) {
  pooled_connection* conn = slots.connection(slot);
  if (conn == nullptr) return;
  lk.unlock();
  const bool healthy = conn->health_check();
  lk.lock();
  end_hold(slots.check_ended(slot, healthy ? nullptr : "health check failed"),
           [&] { core.on_check_done(pool_clock::now(), slot, healthy); });
  apply_actions();
  bury(lk);
  lk.lock();
}

}  // namespace pgpipe::detail
