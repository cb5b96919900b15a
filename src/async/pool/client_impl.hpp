// client_impl: what async_client and lease are made of. Owns the event loops
// (async/pool/event_loops.hpp), the shared pool_core (behind one mutex, held only
// for pool bookkeeping, never while running a handler or touching a
// connection) and the map from pool slots to pipelined_connections. Every
// connection lives on one loop.
//
// Files: client_impl.cpp (construction; the query_metrics room: logger,
// observer hooks, counters, stats), client_lifecycle.cpp (start, close, shutdown),
// client_operations.cpp (queries, acquires, their cancellation),
// client_pool_actions.cpp (the driver pool_actions works with, the pool
// timer, the close waiters), client_connection_events.cpp (what connections
// report). A lease is lease_impl (lease_impl.hpp). A query on the shared path
// is a pool_ticket (pool_ticket.hpp) while the pool holds it. Parts tested
// without a server, each with its unit test: pool_core's actions carried out
// on the connections and waiters (pool_actions.hpp), the waiters by id
// (waiter_map.hpp) and the pool timer's aim (tick_schedule.hpp).
#pragma once

#include "async/pool/event_loops.hpp"
#include "async/pool/lease_handoff.hpp"
#include "async/connection/pipelined_connection.hpp"
#include "async/connection/request.hpp"
#include "async/pool/lease_impl.hpp"
#include "async/pool/pool_actions.hpp"
#include "async/pool/pool_ticket.hpp"
#include "async/pool/tick_schedule.hpp"
#include "core/metrics/query_metrics.hpp"
#include "core/pool/pool_core.hpp"

#include <pgpipe/async_client.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

namespace pgpipe::detail {

struct acquire_request {
  std::unique_ptr<completion<async_lease>> done;
  std::atomic<bool> completed{false};
  waiter_id waiter = 0;  // guarded by the client's mutex
  time_point submitted{};  // for the acquire_wait histogram
  bool try_complete(const boost::asio::any_io_executor& ex, std::error_code ec, async_lease l);
};

class client_impl final : public query_target,
                          public connection_owner,
                          public std::enable_shared_from_this<client_impl> {
 public:
  client_impl(pool_params params, async_client_options options, boost::asio::io_context* external);
  ~client_impl() override;

  /// Starts loops, probes, watchdog and the pool (after make_shared).
  void start();
  /// close(), wait (bounded) for in-flight work, abort the rest, stop and
  /// join the loops. Idempotent.
  void shutdown();

  void submit_query(query_spec spec, std::unique_ptr<completion<result>> done,
                    boost::asio::cancellation_slot slot) override;
  void submit_acquire(std::unique_ptr<completion<async_lease>> done, boost::asio::cancellation_slot slot);
  void submit_close(std::unique_ptr<completion<std::monostate>> done);
  void close();
  pool_stats stats() const;
  void set_logger(logger_fn fn);
  boost::asio::any_io_executor get_executor() const noexcept;
  boost::asio::any_io_executor get_executor(std::size_t loop) const noexcept { return loops_->at(loop % loops_->size()); }
  std::size_t loop_count() const noexcept { return loops_->size(); }
  /// Where connect handshakes run: the connector thread (or, on a caller's
  /// io_context, the first loop's strand). For a listener's connect_job.
  boost::asio::any_io_executor connector_executor() const { return loops_->connector_for(loops_->first()); }

  /// A caller cancelled the shared-path query `t`: withdrawn if still
  /// queued (it fails with errc::cancelled), else passed to the connection
  /// it was granted. Thread-safe.
  void cancel_query(const std::shared_ptr<pool_ticket>& t, boost::asio::cancellation_type_t type);
  void cancel_acquire(const std::shared_ptr<acquire_request>& req);

  // connection_owner
  void conn_connected(slot_id slot) override;
  void conn_connect_failed(slot_id slot, std::error_code ec, const std::string& message) override;
  void conn_broken(slot_id slot, const std::string& reason) override;
  void conn_release(slot_id slot, std::size_t units) override;
  void conn_check_done(slot_id slot, bool healthy) override;
  void conn_lease_returned(slot_id slot) override;
  /// The lease on `slot` changed session state: retire the connection when
  /// it comes back instead of sharing it.
  void retire_after_lease(slot_id slot);
  void conn_finished(slot_id slot) override;
  /// The one builder of a caller's query request, for the shared path (in
  /// its ticket), a lease and a lease's chain: its handler, submission time,
  /// deadline (spec.timeout, else pool_params::query_timeout) and spec.
  void build_query_request(query_request& req, query_spec spec, std::unique_ptr<completion<result>> done,
                           time_point now, bool on_lease) const;
  /// build_query_request into a request of its own (a lease's).
  std::shared_ptr<query_request> new_query_request(query_spec spec, std::unique_ptr<completion<result>> done,
                                                   time_point now, bool on_lease) const;
  /// Ends `req` at once when its parameters could not be encoded (nothing
  /// was sent): true if it did. Every path refuses such a query this way,
  /// so each counts it alike (finish_unstarted).
  bool refuse_unencodable(const std::shared_ptr<query_request>& req, const boost::asio::any_io_executor& ex);
  /// Completes a query that never reached a connection (refused, failed
  /// in the pool, its lease gone): observed like the others, and counted
  /// in stats().completed and by its kind (query_metrics::count_unstarted_failure).
  void finish_unstarted(const std::shared_ptr<query_request>& req, const boost::asio::any_io_executor& ex,
                        std::error_code ec, result r);
  /// A lease's start, `e`, queued on `handoff` and handed to `conn` on the
  /// connection's executor in the order of the lease's starts
  /// (lease_handoff.hpp): a chain's requests are enqueued in one turn of the
  /// loop, in order, so one write pass takes them all; a `returns` entry
  /// gives the connection back to the pool. Throws std::bad_alloc.
  void post_handoff(const std::shared_ptr<pipelined_connection>& conn, const std::shared_ptr<lease_handoff>& handoff,
                    lease_handoff::entry e) const;
  void log(log_level level, const std::string& line) override;

  const pool_params& params() const noexcept { return params_; }
  /// The meter a caller's request is built with (query_request::metrics).
  query_metrics* metrics() const noexcept { return metrics_.get(); }
  /// True once the client's own loops have stopped: nothing posted to them
  /// will ever run (a lease that outlived its client).
  bool on_own_loop_thread() const noexcept { return loops_->on_own_thread(); }
  bool loops_stopped() const noexcept { return loops_->stopped(); }

 private:
  using todo = pool_todo;

  /// What pool_actions asks of the client (client_pool_actions.cpp): the
  /// pool clock, a connection for a slot on its home loop, and the answers
  /// to waiters it runs after the unlock.
  struct pool_driver {
    client_impl* self;
    time_point now() const { return pool_clock::now(); }
    made_connection<pipelined_connection> make_connection(slot_id slot) const;
    void fail_query(const std::shared_ptr<pool_ticket>& t, std::error_code ec, diagnostics diag) const;
    void fail_acquire(const std::shared_ptr<acquire_request>& req, std::error_code ec, diagnostics diag) const;
    void grant_lease(const std::shared_ptr<acquire_request>& req, const std::shared_ptr<pipelined_connection>& conn,
                     slot_id slot) const;
  };

  /// Carries out pool_core's actions (pool_actions.hpp), keeps the pool
  /// timer aimed and answers close waiters once drained; the work to run
  /// after the unlock goes to `out`.
  void collect_locked(todo& out, bool timing_may_change);
  /// Points the pool timer at pool_core's next deadline when that is sooner.
  void rearm_tick_locked(todo& out);
  void run(todo& t);
  /// The pool group of the loop the caller runs on (loop affinity,
  /// async_client.hpp), no_slot_group off the loops or with one loop.
  slot_group caller_loop_group() const noexcept;
  void complete_query_failure(const std::shared_ptr<pool_ticket>& t, std::error_code ec, std::string message);
  void complete_query_failure(const std::shared_ptr<pool_ticket>& t, std::error_code ec, diagnostics diag);
  void complete_acquire_failure(const std::shared_ptr<acquire_request>& req, std::error_code ec, std::string message);
  void complete_acquire_failure(const std::shared_ptr<acquire_request>& req, std::error_code ec, diagnostics diag);
  void maybe_closed_locked(todo& out);
  void arm_tick(time_point at, std::uint64_t gen);
  void on_tick();

  pool_params params_;
  async_client_options options_;
  std::shared_ptr<const connection_config> conn_cfg_;
  std::shared_ptr<event_loops> loops_;
  boost::asio::any_io_executor pool_ex_;  // runs the pool tick timer
  std::unique_ptr<boost::asio::steady_timer> tick_timer_;

  // The logger slot, the observer and the counters behind stats()
  // (pool_core counts pool_timeout, queue_full and connect errors itself).
  /// Shared with every connection (connection_config::metrics), which
  /// counts its requests' ends through query_request::metrics. Declared
  /// before actions_, which records the pool waits in it.
  std::shared_ptr<query_metrics> metrics_;

  mutable std::mutex mu_;  // pool_core and the state below
  pool_core core_;
  pool_actions<pipelined_connection, acquire_request, pool_driver> actions_;
  std::unordered_set<slot_id> retire_on_return_;
  tick_schedule tick_;
  std::vector<std::unique_ptr<completion<std::monostate>>> close_waiters_;
  std::condition_variable drained_cv_;
  bool shut_down_ = false;
};

}  // namespace pgpipe::detail
