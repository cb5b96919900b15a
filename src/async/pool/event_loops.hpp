// event_loops: the threads an async_client runs its connections on. Each loop
// is one io_context run by one thread (or, on a caller's io_context, one
// strand of it). Owns the loop-lag probes (a timer per loop; how late it
// fires is the loop's lag, read by stats()) and the watchdog thread that logs
// a loop blocked past blocked_loop_threshold, and the connector: one more
// thread and io_context on which every connect handshake runs (connect_job),
// so that opening connections never takes a loop's time from the queries on
// connections already open. One connector whatever the pool size: connects
// are nonblocking, the thread only does the handshakes' CPU work. On a
// caller's io_context there is no thread of ours: connects run on the
// connection's own strand.
//
// Lifetime: the client owns this object through a shared_ptr; handlers
// posted to a caller's io_context hold it weakly, since that io_context may
// outlive the client. Loops are created in the constructor, threads started
// by start() and joined by join(); the destructor detaches threads that
// could not be joined (shutdown from one of the loops).
#pragma once

#include <pgpipe/async_client.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace pgpipe::detail {

class event_loops : public std::enable_shared_from_this<event_loops> {
 public:
  using log_fn = std::function<void(log_level, const std::string&)>;

  /// `external`: run on that io_context (one strand per connection, no
  /// thread of our own); else options.loops threads (0 means 1).
  event_loops(const async_client_options& options, boost::asio::io_context* external, log_fn log);
  ~event_loops();
  event_loops(const event_loops&) = delete;
  event_loops& operator=(const event_loops&) = delete;

  /// Starts probes, loop threads and the watchdog (after make_shared).
  void start();
  /// Stops the probes (a closed client must not keep a caller's io_context
  /// busy) and with them the watchdog's reports. Idempotent, any thread.
  void stop_probes();
  /// Ends and joins the watchdog (it logs through the client, which must
  /// still exist). Not from the watchdog thread.
  void stop_watchdog();
  /// Lets the loops run out of work, joins their threads and runs what was
  /// left queued, so every posted completion still runs exactly once. Not
  /// from a loop thread (see on_own_thread()); a no-op on an external io_context.
  void join();

  /// Where a new connection runs: `ex`, and `loop`, that loop's index
  /// (nullopt on an external io_context, where each connection has a strand
  /// of its own).
  struct connection_home {
    boost::asio::any_io_executor ex;
    std::optional<std::size_t> loop;
  };
  /// Round-robin over the loops; a fresh strand on an external io_context.
  connection_home home_for_new_connection();
  /// The index of the loop whose thread calls, nullopt off our loop threads
  /// and on an external io_context. Any thread; a few instructions per loop.
  std::optional<std::size_t> current_loop() const noexcept;
  /// Where a connection whose loop is `conn_ex` runs its connect handshake.
  boost::asio::any_io_executor connector_for(const boost::asio::any_io_executor& conn_ex) const;
  /// The first loop: pool timers and failures that reach no connection.
  const boost::asio::any_io_executor& first() const noexcept { return loops_[0]->ex; }
  /// Loop `i` (< size()): async_client::get_executor(i).
  const boost::asio::any_io_executor& at(std::size_t i) const noexcept { return loops_[i]->ex; }
  std::size_t size() const noexcept { return loops_.size(); }
  bool external() const noexcept { return external_ != nullptr; }
  bool on_own_thread() const noexcept;
  /// True once join() ran: nothing posted to the loops will ever run.
  bool stopped() const noexcept { return stopped_.load(std::memory_order_acquire); }
  /// Threads of our own: loops and connector (none when external) plus the watchdog.
  std::size_t thread_count() const noexcept;
  std::chrono::microseconds lag_last() const noexcept;
  std::chrono::microseconds lag_max() const noexcept;

 private:
  struct loop {
    std::unique_ptr<boost::asio::io_context> own;  // null with an external io_context
    boost::asio::any_io_executor ex;               // loop executor (a strand when external)
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
    std::thread thread;
    std::unique_ptr<boost::asio::steady_timer> probe;
    std::atomic<std::int64_t> last_probe_ns{0};  // steady clock, when the probe last ran
    std::atomic<std::int64_t> lag_last_us{0};
    std::atomic<std::int64_t> lag_max_us{0};
    bool blocked_reported = false;  // watchdog thread only
  };

  void start_probe(std::size_t i);
  void run_guarded(boost::asio::io_context& ctx, const std::string& name);
  void stop_connector();
  void watchdog_main();

  async_client_options options_;
  boost::asio::io_context* external_ = nullptr;
  log_fn log_;
  std::vector<std::unique_ptr<loop>> loops_;
  std::atomic<std::size_t> next_loop_{0};
  std::unique_ptr<boost::asio::io_context> connector_;  // null with an external io_context
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> connector_work_;
  std::thread connector_thread_;

  std::atomic<bool> probes_stopped_{false};
  std::atomic<bool> stopped_{false};
  std::atomic<bool> watchdog_stopping_{false};
  std::thread watchdog_;
  std::mutex watchdog_mu_;
  std::condition_variable watchdog_cv_;
};

}  // namespace pgpipe::detail
