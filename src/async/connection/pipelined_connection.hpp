// pipelined_connection: the libpq/Asio shell of one async connection: one
// PGconn in nonblocking pipeline mode, bound to one event loop (executor)
// and touched only from it.
//
// What to send, in which order, how results match requests and what each
// request's outcome is are pipeline_core's decisions (async/sansio/pipeline_core.hpp).
// This class connects, carries out the core's actions with libpq, watches the
// socket and turns each PGresult into a core input. It keeps what holds libpq
// objects: the requests' stored results and the async_row_stream buffers.
//
// Writes are coalesced: enqueue() schedules one write pass per loop turn, and
// the core asks for one flush after it. The PQflush rule is obeyed: when it
// returns 1 the socket is watched for write *and* read, and input is consumed
// while waiting, so a large pipelined write never deadlocks against a server
// that is itself blocked writing results to us.
//
// The socket is watched through a duplicate of libpq's fd (see
// reassign_socket). The connect handshake runs elsewhere (connect_job, on the
// client's connector thread); the connection takes the PGconn over once it is
// established.
//
// What holds the wire alone outside pipeline mode (a COPY, a script) is a
// solo operation (solo_operation.hpp) in one slot: the shell routes the
// socket to it and never asks which kind it is. Each one owns its state and
// its reads (copy_state.hpp, script_operation.hpp).
//
// Files: pipelined_connection.cpp (requests and the core's actions),
// connection_connect.cpp, connection_io.cpp (socket, PQflush, results, the
// solo slot), connection_cancel.cpp, connection_streams.cpp,
// connection_close.cpp.
#pragma once

#include "async/connection/cancel_job.hpp"
#include "async/connection/connect_job.hpp"
#include "async/connection/libpq_socket.hpp"
#include "async/sansio/pipeline_core.hpp"
#include "async/connection/request.hpp"
#include "async/connection/solo_operation.hpp"
#include "async/sansio/request_table.hpp"
#include "core/pool/pool_types.hpp"
#include "pq/libpq_failure.hpp"
#include "pq/libpq_features.hpp"
#include "pq/libpq_version.hpp"
#include "pq/notice_route.hpp"

#include <pgpipe/async_client.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <libpq-fe.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace pgpipe::detail {

/// What a connection needs from its pool. Called on the connection's
/// executor; implementations must not call back into the connection inline.
class connection_owner {
 public:
  virtual ~connection_owner() = default;
  virtual void conn_connected(slot_id slot) = 0;
  virtual void conn_connect_failed(slot_id slot, std::error_code ec, const std::string& message) = 0;
  /// The connection died; its requests are being failed right after.
  virtual void conn_broken(slot_id slot, const std::string& reason) = 0;
  /// `units` shared requests finished on the connection.
  virtual void conn_release(slot_id slot, std::size_t units) = 0;
  virtual void conn_check_done(slot_id slot, bool healthy) = 0;
  /// A lease's connection is clean (rolled back if needed) and may be reused.
  virtual void conn_lease_returned(slot_id slot) = 0;
  /// The socket is closed; the connection will do nothing more.
  virtual void conn_finished(slot_id slot) = 0;
  virtual void log(log_level level, const std::string& line) = 0;
};

struct connection_config {
  std::string conninfo;
  std::vector<std::string> secrets;  ///< the password's spellings: scrubbed from every message
  connect_hooks hooks;               ///< before_connect, load_balance_hosts
  std::chrono::milliseconds connect_timeout{};
  std::chrono::milliseconds stall_timeout{};
  bool prepared_statements = true;
  /// Named statements per connection before new SQL texts go unnamed: bounds
  /// server memory when an application generates SQL.
  std::size_t max_prepared = default_statement_capacity;  // core/statements: one cap for both drivers
  std::vector<std::string> on_connect;  ///< pool_params::on_connect, run before the pool hears of the connection
  /// Requests written and not yet answered, at most (pool_params::pipeline_depth).
  std::size_t pipeline_depth = 128;
  /// pool_params::observer: held here so a handler that holds the connection
  /// can reach it without touching a reference count.
  std::shared_ptr<query_observer> observer;
  /// Read-only requests sharing one Sync on a read-only session, at most
  /// (pool_params::read_batch_max, at most pipeline_depth; 1: off).
  std::size_t sync_batch = 1;
  /// libpq 17 calls the connection takes where the loaded libpq has them
  /// (pq/libpq_features.hpp); null: the libpq 14 path.
  libpq_features::send_pipeline_sync_fn send_pipeline_sync = nullptr;
  libpq_features::send_close_prepared_fn send_close_prepared = nullptr;
  libpq_features::set_chunked_rows_mode_fn set_chunked_rows_mode = nullptr;
  /// The non-blocking cancel calls (cancel_usable()), or null: a lease's
  /// cancel then runs PQcancel on a thread of its own.
  const libpq_features* cancel_calls = nullptr;
  /// The client's counters (query_request::metrics points here): held so
  /// that requests a connection completes after its client is gone (on a
  /// caller's io_context) still find them.
  std::shared_ptr<query_metrics> metrics;
  /// The client's stats().runtime: every connection notes its server here.
  std::shared_ptr<runtime_record> runtime = std::make_shared<runtime_record>();
};

class pipelined_connection;

/// One PQcancel call running on its own thread, shared with the connection.
/// The thread reports back (posts to `ex`) only while `live`: the connection
/// clears it under `m` when it goes away, so a late PQcancel never posts to
/// an io_context that may already be destroyed.
struct cancel_call {
  std::mutex m;
  bool live = true;
  boost::asio::any_io_executor ex;
  std::weak_ptr<pipelined_connection> conn;
};

class pipelined_connection final : public std::enable_shared_from_this<pipelined_connection>, public solo_host {
 public:
  pipelined_connection(boost::asio::any_io_executor ex, slot_id slot, std::shared_ptr<const connection_config> cfg,
                       std::weak_ptr<connection_owner> owner);
  ~pipelined_connection();
  pipelined_connection(const pipelined_connection&) = delete;
  pipelined_connection& operator=(const pipelined_connection&) = delete;

  const boost::asio::any_io_executor& get_executor() const noexcept { return ex_; }
  slot_id slot() const noexcept { return slot_; }
  /// The server process behind this connection (0 before it is connected).
  int backend_pid() const noexcept { return pg_ != nullptr ? PQbackendPID(pg_) : 0; }
  /// pool_params::observer, or null.
  query_observer* observer() const noexcept { return cfg_->observer.get(); }

  // Everything below runs on get_executor() only.

  /// Starts the connect (bounded by connect_timeout): the handshake runs as
  /// a connect_job on `connect_ex` (the client's connector), and the
  /// connection comes back to its own executor once it is established.
  void start(boost::asio::any_io_executor connect_ex);
  /// Appends a request to the FIFO; it is written on this loop turn's write
  /// pass. Every request of the driver comes this way: a text libpq would
  /// cut (a NUL byte, core/sql/sql_text.hpp) fails with errc::invalid_argument
  /// here, before anything is sent.
  void enqueue(std::shared_ptr<query_request> req);
  /// enqueue() for a lease's chain, all or nothing: if one text is refused,
  /// every request of the chain fails with errc::invalid_argument.
  void enqueue_chain(const std::vector<std::shared_ptr<query_request>>& reqs);
  /// Asio cancellation of `req`: removed if not written; detached if written
  /// (terminal/partial); on a lease, a cancel request as well (cancel_job on
  /// the loop with libpq 17+, else PQcancel on a thread).
  void cancel(const std::shared_ptr<query_request>& req, boost::asio::cancellation_type_t type);
  /// pool_core `check`: a trivial query; answers conn_check_done.
  void check();
  /// Graceful close: finish what is in flight, then close the socket.
  void close();
  /// Immediate close (client teardown): in-flight requests fail with errc::closed.
  void abort();
  /// Completes `req` with (ec, r) now (used for requests that fail before
  /// they reach the FIFO, e.g. a stream with a bad parameter).
  void fail_request(const std::shared_ptr<query_request>& req, std::error_code ec, result r);
  /// Fails `req` (never enqueued) with errc::invalid_argument and `why`,
  /// giving back the pool capacity granted for it.
  void refuse(const std::shared_ptr<query_request>& req, std::string why);
  /// async_row_stream::async_next and cancel.
  void stream_next(const std::shared_ptr<stream_state>& st, std::unique_ptr<completion<result>> done);
  void stream_cancel(const std::shared_ptr<stream_state>& st);
  /// pool_params::on_connect finished (session_setup.hpp): announce the
  /// connection, or report ec as its connect failure.
  void session_setup_done(std::error_code ec, const std::string& message);
  /// The lease on this connection ended: roll back if a transaction may be
  /// open (or work is still in flight), then conn_lease_returned.
  void lease_returned();

 private:
  enum class state { created, connecting, ready, dead };

  void connect_done(pgconn_ptr pg, std::error_code ec, const std::string& message);
  void connect_failed(std::error_code ec, std::string message);
  void connected();
  void announce_connected();

  void schedule_write();
  void write_pending();
  /// Carries out the core's actions; completions are delivered after the
  /// capacity they free went back to the pool.
  void apply();
  void apply_one(pipe_action& a, bool& flush_wanted);
  bool send(const pipe_action& a);
  /// The Sync ending a request's segment. Queued without a flush where
  /// libpq has PQsendPipelineSync: the write pass flushes once after all its
  /// requests. PQpipelineSync flushes itself, one send() per request.
  bool sync();
  /// The server says new transactions of this session are read-only.
  bool session_read_only() const;
  void flush();
  void arm_read();
  void arm_write();
  void on_readable();
  void drain_results();
  void drain_results_batch();
  tx_state transaction_state(const query_request* head) const;
  void deliver_deferred();
  // By rvalue reference: a result's move copies its diagnostics' strings,
  // and each by-value hop on the way to the handler cost one.
  void complete(const std::shared_ptr<query_request>& req, std::error_code ec, result&& r);
  /// complete()'s last step, one per kind of sink (inline: the plain one is
  /// every query's path).
  inline void deliver(const std::shared_ptr<query_request>& req, result_sink& sink, std::error_code ec, result&& r);
  inline void deliver(const std::shared_ptr<query_request>& req, stream_sink& sink, std::error_code ec, result&& r);
  inline void deliver(const std::shared_ptr<query_request>& req, copy_sink& sink, std::error_code ec, result&& r);
  inline void deliver(const std::shared_ptr<query_request>& req, script_sink& sink, std::error_code ec, result&& r);
  void complete_with(const std::shared_ptr<query_request>& req, pipe_outcome o);
  std::shared_ptr<query_request> lookup(pipe_id id) const;
  /// Without the reference count: for use within one call that completes nothing.
  query_request* find_request(pipe_id id) const;

  void stream_row(const std::shared_ptr<stream_state>& st, PGresult* row);
  void stream_push(stream_state& st, std::error_code ec, result r, bool final);
  void stream_deliver(stream_state& st);
  void resume_if_paused();
  /// Carries out start_cancel: a cancel_job on this loop where libpq has
  /// the calls, else PQcancel on its own thread.
  bool start_cancel_call(pipe_id target);
  void cancel_call_returned(const cancel_call* call);
  void cancel_job_returned(pipe_id target, bool sent, const std::string& message);
  void end_cancel_calls() noexcept;

  // The solo slot (connection_io.cpp).
  /// The core's start_solo: leave pipeline mode and give the wire to the
  /// request's solo operation (its COPY, or a script_operation).
  void start_solo(pipe_id id);
  PGconn* solo_conn() const noexcept override { return pg_; }
  bool solo_ready() const noexcept override { return st_ == state::ready; }
  bool solo_holds_wire(const solo_operation& op) const noexcept override { return solo_.get() == &op; }
  pipeline_core& solo_core() noexcept override { return core_; }
  void solo_apply() override { apply(); }
  void solo_break(const std::string& reason) override { break_connection(reason); }
  void solo_watch_read() override { arm_read(); }
  void solo_watch_write() override { arm_write(); }
  void solo_flush_pending(bool pending) noexcept override { flush_pending_ = pending; }
  std::string solo_pq_error() const override { return pq_error(); }
  const boost::asio::any_io_executor& solo_executor() const noexcept override { return ex_; }
  bool solo_leave() override;
  void solo_end(bool failed) override;

  void set_timer(time_point at);
  void on_timer();
  /// An I/O failure: the core fails the requests, then retire() runs.
  void break_connection(const std::string& reason);
  /// The core's close action: tell the pool, close the socket.
  void retire(const std::string& reason);
  void teardown();
  void maybe_finish_close();
  void reassign_socket();
  std::string pq_error() const;

  boost::asio::any_io_executor ex_;
  slot_id slot_;
  std::shared_ptr<const connection_config> cfg_;
  /// What pq_error() scrubs: the pool's conninfo passwords and, once
  /// connected, the one libpq used (before_connect's).
  std::vector<std::string> secrets_;
  std::weak_ptr<connection_owner> owner_;

  state st_ = state::created;
  PGconn* pg_ = nullptr;
  std::optional<boost::asio::posix::stream_descriptor> sd_;
  std::uint64_t sd_gen_ = 0;
  bool read_armed_ = false;
  bool write_armed_ = false;
  bool flush_pending_ = false;
  bool write_scheduled_ = false;
  bool corkable_ = false;  // a TCP socket and a libpq that flushes at every Sync (tcp_cork.hpp)
  bool closing_ = false;
  /// A stream's reader is behind: stop reading the socket (TCP backpressure
  /// then stops the server) until it catches up.
  bool paused_ = false;
  bool finished_reported_ = false;

  pipeline_core core_;
  request_table<query_request> reqs_;  ///< submitted, not completed (ids are reqs_.next_id())
  std::vector<pipe_action> action_buffer_;  ///< reused by apply()
  std::vector<const char*> send_values_;    ///< reused by send()
  std::vector<int> send_lengths_;
  std::string break_reason_;         ///< for the messages of requests failed by a break
  std::size_t release_units_ = 0;    ///< shared units to hand back after this batch
  struct deferred_completion {
    deferred_completion(const std::shared_ptr<query_request>& q, std::error_code e, result&& r)
        : req(q), ec(e), res(std::move(r)) {}
    std::shared_ptr<query_request> req;
    std::error_code ec;
    result res;
  };
  bool batching_ = false;
  std::vector<deferred_completion> deferred_;
  std::vector<deferred_completion> deferred_spare_;  ///< deliver_deferred's other buffer
  std::vector<std::shared_ptr<stream_state>> streams_to_deliver_;  ///< got rows during this batch

  boost::asio::steady_timer timer_;
  time_point timer_at_ = time_point::max();
  std::uint64_t timer_gen_ = 0;

  // Lease cancellation: the cancel still running, on a thread or on this
  // loop (the hold-back rule itself is the core's).
  std::shared_ptr<cancel_call> cancel_call_;
  std::shared_ptr<cancel_job> cancel_job_;

  std::unique_ptr<notice_route> notices_;  ///< server NOTICE/WARNING -> owner's log (pq/notice_route.hpp)

  /// What holds the wire outside pipeline mode, or null (a COPY's also holds
  /// this connection: teardown breaks the cycle).
  std::shared_ptr<solo_operation> solo_;
};

}  // namespace pgpipe::detail
