// pgpipe::async_listener: one libpq connection in nonblocking mode, on a strand.
//
// Why its own connection and not a pool lease: LISTEN is session state, a
// leased connection would carry it to its next borrower, and a lease can be
// replaced under us; here the listener decides when to reconnect and knows
// exactly which channels the server has.
//
// What to send, when to reconnect, where the gap goes and what a refused
// LISTEN means is listener_core's (src/core/listen/listener_core.hpp, its
// contract and reasons); this file is the I/O around it: the connect, the
// socket watched through Asio, the back-off timer and the timer that fails
// commands waiting too long for a connection. Commands go one at a time with
// PQsendQuery (the simple protocol: the re-LISTEN holds several statements).
//
// Why the connect is the pool's connect_job: it walks a multi-host string
// host by host, each attempt with its own connect_timeout (a silent first
// host costs one timeout, not every attempt), and on a client's loops it
// runs on the client's connector thread, so the listener's DNS lookups and
// SCRAM rounds never take the time of the queries on the client's loops.
#include <pgpipe/async_listener.hpp>

#include "async/connection/connect_job.hpp"
#include "async/connection/libpq_socket.hpp"
#include "async/pool/client_impl.hpp"
#include "core/listen/listener_core.hpp"
#include "pq/libpq_failure.hpp"
#include "pq/listen_protocol.hpp"
#include "pq/notice_route.hpp"

#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <libpq-fe.h>

#include <atomic>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace pgpipe {

namespace detail {

namespace asio = boost::asio;
using std::chrono::milliseconds;

class listener_impl : public std::enable_shared_from_this<listener_impl> {
 public:
  /// `connect_ex`: where connect handshakes run (the client's connector, or
  /// the listener's strand when there is none).
  listener_impl(asio::any_io_executor ex, std::optional<asio::any_io_executor> connect_ex, pool_params params,
                logger_fn logger)
      : strand_(asio::make_strand(ex)), connect_ex_(connect_ex ? *connect_ex : asio::any_io_executor(strand_)),
        params_(std::move(params)), logger_(std::move(logger)), secrets_(passwords_of(params_.conninfo)),
        timer_(strand_), expiry_(strand_),
        core_({params_.connect_backoff_initial, params_.connect_backoff_max, async_listener::max_buffered,
               params_.acquire_timeout},
              listen_clock::now()) {}

  ~listener_impl() { drop_connection(); }

  void start() {
    asio::post(strand_, [self = shared_from_this()] { self->connect(); });
  }

  void command(std::string channel, bool listen, std::unique_ptr<completion<std::monostate>> done) {
    asio::post(strand_, [self = shared_from_this(), channel = std::move(channel), listen,
                         done = std::move(done)]() mutable {
      const auto now = listen_clock::now();
      const command_id id = listen ? self->core_.subscribe(channel, now) : self->core_.unsubscribe(channel, now);
      self->pending_.emplace(id, std::move(done));
      self->answer();
      self->arm_expiry();
      self->send_next();
    });
  }

  // Called in the initiating function: the hook goes into the caller's slot
  // there (where the caller emits, Asio's rule), and its post reaches the
  // strand after the receive's own.
  void receive(std::unique_ptr<completion<notification>> done, asio::cancellation_slot slot) {
    const std::uint64_t id = ++receive_ids_;
    if (slot.is_connected()) slot.template emplace<receive_cancel_hook>(receive_cancel_hook{weak_from_this(), id});
    asio::post(strand_, [self = shared_from_this(), done = std::move(done), id]() mutable {
      if (self->core_.closed()) {
        done->complete(self->strand_, false, make_error_code(errc::closed), {});
        return;
      }
      if (self->receiver_) {
        done->complete(self->strand_, false, make_error_code(errc::invalid_argument), {});
        return;
      }
      self->receiver_ = std::move(done);
      self->receiver_id_ = id;
      self->deliver();
      self->arm_read();  // reading may have paused on a full buffer
    });
  }

  void close() {
    asio::post(strand_, [self = shared_from_this()] { self->shut(); });
  }

 private:
  // Every type of cancellation is honoured: a receive waiting has taken
  // nothing from the buffer, so ending it loses nothing.
  struct receive_cancel_hook {
    std::weak_ptr<listener_impl> owner;
    std::uint64_t id;
    void operator()(asio::cancellation_type_t) const {
      if (auto s = owner.lock()) asio::post(s->strand_, [s, id = id] { s->cancel_receive(id); });
    }
  };

  void cancel_receive(std::uint64_t id) {
    // The receive it was for may have completed (a notification came first)
    // and another may wait now: that one is not the caller's to cancel.
    if (!receiver_ || receiver_id_ != id) return;
    auto done = std::move(receiver_);
    done->complete(strand_, false, make_error_code(errc::cancelled), {});
  }

  void log(log_level level, const std::string& line) const {
    if (logger_) logger_(level, "listener: " + line);
  }

  // ---- connecting ------------------------------------------------------------

  void connect() {
    if (core_.phase() != listener_phase::waiting) return;
    core_.on_connect_started();
    const std::uint64_t attempt = ++attempt_;
    auto job = std::make_shared<connect_job>(
        connect_ex_, params_.conninfo, secrets_, connect_hooks_of(params_), params_.connect_timeout,
        [self = shared_from_this(), attempt](pgconn_ptr conn, std::error_code ec, std::string message) {
          asio::post(self->strand_,
                     [self, attempt, conn = std::move(conn), ec, message = std::move(message)]() mutable {
                       self->connect_done(attempt, std::move(conn), ec, std::move(message));
                     });
        });
    connect_job::run(std::move(job));
  }

  void connect_done(std::uint64_t attempt, pgconn_ptr conn, std::error_code ec, std::string message) {
    if (attempt != attempt_ || core_.phase() != listener_phase::connecting) return;  // closed meanwhile
    if (ec) {
      connect_failed(ec, std::move(message));
      return;
    }
    pg_ = conn.release();
    notices_.emplace(pg_, 0, [self = weak_from_this()](bool warning, const std::string& line) {
      if (auto s = self.lock()) s->log(warning ? log_level::warning : log_level::info, line);
    });
    if (PQsetnonblocking(pg_, 1) != 0 || !reassign_socket()) {
      connect_failed(make_error_code(errc::connect_failed), connect_failed_text(pg_, "", secrets_));
      return;
    }
    connected();
  }

  bool reassign_socket() {
    // Asio watches a duplicate of libpq's socket (as pipelined_connection
    // does): libpq may close and reuse its own fd number at any time.
    forget_socket();
    sd_ = watch_libpq_socket(strand_, pg_);
    return sd_.has_value();
  }

  // Stops watching the socket; every wait armed on it ignores itself (gen_).
  void forget_socket() {
    if (sd_) {
      boost::system::error_code ignored;
      sd_->close(ignored);
      sd_.reset();
    }
    ++gen_;
    read_armed_ = write_armed_ = false;
  }

  // `message`: why, secrets scrubbed (connect_job's words).
  void connect_failed(std::error_code ec, std::string message) {
    log(log_level::warning, message.rfind("connect failed", 0) == 0 ? message : "connect failed: " + message);
    drop_connection();
    diagnostics d;
    d.client_message = std::move(message);
    core_.on_connect_failed(listen_clock::now(), ec, std::move(d));
    retry_at_connect_time();
    arm_expiry();
  }

  // Fails the callers' commands that waited acquire_timeout for a connection.
  void arm_expiry() {
    const auto at = core_.next_deadline();
    if (at == expiry_at_) return;
    expiry_at_ = at;
    expiry_.cancel();
    if (at == listen_clock::time_point::max()) return;
    expiry_.expires_at(at);
    expiry_.async_wait([self = shared_from_this(), at](const boost::system::error_code& ec) {
      if (ec || self->expiry_at_ != at) return;
      self->expiry_at_ = listen_clock::time_point::max();
      self->core_.expire(listen_clock::now());
      self->answer();
      self->arm_expiry();
    });
  }

  void retry_at_connect_time() {
    if (core_.phase() != listener_phase::waiting) return;
    ++attempt_;
    timer_.expires_at(core_.connect_at());
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec) self->connect();
    });
  }

  void connected() {
    core_.on_connected();
    arm_expiry();
    arm_read();
    send_next();
  }

  // ---- running ---------------------------------------------------------------

  void send_next() {
    const listen_command* c = core_.next_command();
    if (c == nullptr) return;
    if (PQsendQuery(pg_, c->sql.c_str()) != 1) {
      lost();
      return;
    }
    flush();
  }

  void flush() {
    const int r = PQflush(pg_);
    if (r < 0) {
      lost();
      return;
    }
    if (r == 1 && !write_armed_)
      watch(asio::posix::stream_descriptor::wait_write, &listener_impl::write_armed_, &listener_impl::flush);
  }

  // One wait on the socket, armed once (`armed` set until it fires). A wait
  // from a socket libpq has since replaced (gen_ moved on) is ignored, flag
  // included: the replacement cleared the flags itself.
  void watch(asio::posix::stream_descriptor::wait_type what, bool listener_impl::*armed,
             void (listener_impl::*then)()) {
    this->*armed = true;
    sd_->async_wait(what, [self = shared_from_this(), gen = gen_, armed, then](const boost::system::error_code& ec) {
      if (gen != self->gen_) return;
      (*self).*armed = false;
      if (ec) return;
      ((*self).*then)();
    });
  }

  void arm_read() {
    if (core_.phase() != listener_phase::ready || read_armed_ || !sd_ || !core_.wants_read()) return;
    watch(asio::posix::stream_descriptor::wait_read, &listener_impl::read_armed_, &listener_impl::on_readable);
  }

  void on_readable() {
    if (PQconsumeInput(pg_) != 1) {
      take_notifications(pg_, core_);  // what arrived before the loss is still delivered, in order
      lost();
      return;
    }
    // Notifications parsed with the answer came after the command ran: for
    // a re-LISTEN they are newer than the gap, so they queue after it.
    if (core_.in_flight() && read_command_results(pg_, outcome_)) command_done();
    if (!pg_) {  // a refused re-LISTEN dropped the connection
      deliver();
      return;
    }
    take_notifications(pg_, core_);
    if (PQstatus(pg_) == CONNECTION_BAD) {
      lost();
      return;
    }
    deliver();
    arm_read();
    send_next();
  }

  void command_done() {
    listen_outcome outcome = std::exchange(outcome_, {});
    if (outcome.ec) log(log_level::warning, "command failed: " + outcome.diag.to_string());
    const std::string why = outcome.ec ? outcome.diag.to_string() : std::string();
    const after_command next = core_.on_command_done(listen_clock::now(), outcome.ec, std::move(outcome.diag));
    answer();
    if (next == after_command::reconnect) {
      take_notifications(pg_, core_);
      log(log_level::warning, connect_failed_text(pg_, relisten_failed_text(why), secrets_));
      drop_connection();
      retry_at_connect_time();
      arm_expiry();
    }
  }

  // Completes every caller's command the core answered.
  void answer() {
    for (auto& a : core_.take_acks()) {
      auto it = pending_.find(a.id);
      if (it == pending_.end()) continue;
      auto done = std::move(it->second);
      pending_.erase(it);
      done->complete(strand_, false, a.ec, {});
    }
  }

  void deliver() {
    if (!receiver_ || !core_.has_notification()) return;
    auto done = std::move(receiver_);
    done->complete(strand_, false, {}, core_.pop());
  }

  void lost() {
    log(log_level::warning, connection_lost_text(pg_, secrets_));
    outcome_ = {};
    core_.on_lost(listen_clock::now());
    drop_connection();
    deliver();
    retry_at_connect_time();
    arm_expiry();
  }

  void drop_connection() {
    notices_.reset();
    forget_socket();
    if (pg_) {
      PQfinish(pg_);
      pg_ = nullptr;
    }
  }

  void shut() {
    if (core_.closed()) return;
    core_.close();
    timer_.cancel();
    expiry_.cancel();
    drop_connection();
    answer();
    if (receiver_) {
      auto done = std::move(receiver_);
      done->complete(strand_, false, make_error_code(errc::closed), {});
    }
  }

  asio::strand<asio::any_io_executor> strand_;
  const asio::any_io_executor connect_ex_;
  const pool_params params_;
  const logger_fn logger_;
  const std::vector<std::string> secrets_;
  asio::steady_timer timer_;   // the next connect attempt (back-off)
  asio::steady_timer expiry_;  // core_.next_deadline()
  listen_clock::time_point expiry_at_ = listen_clock::time_point::max();  // what expiry_ is armed for

  PGconn* pg_ = nullptr;
  std::optional<asio::posix::stream_descriptor> sd_;
  std::optional<notice_route> notices_;
  std::uint64_t gen_ = 0;      // socket registrations: a stale wait's handler ignores itself
  std::uint64_t attempt_ = 0;  // connect attempts: a late connect_job of a closed listener ignores itself
  bool read_armed_ = false;
  bool write_armed_ = false;

  listener_core core_;
  listen_outcome outcome_;  // of the command in flight, read so far
  std::unordered_map<command_id, std::unique_ptr<completion<std::monostate>>> pending_;  // callers' commands not yet answered
  std::unique_ptr<completion<notification>> receiver_;
  std::uint64_t receiver_id_ = 0;             // receive_ids_ of receiver_
  std::atomic<std::uint64_t> receive_ids_{0};  // taken in callers' threads
};

}  // namespace detail

async_listener::async_listener(executor_type ex, pool_params params, logger_fn logger) : ex_(ex) {
  validate(params);
  impl_ = std::make_shared<detail::listener_impl>(std::move(ex), std::nullopt, std::move(params), std::move(logger));
  impl_->start();
}

async_listener::async_listener(async_client& client, pool_params params, logger_fn logger) : ex_(client.get_executor()) {
  validate(params);
  impl_ = std::make_shared<detail::listener_impl>(ex_, client.impl_->connector_executor(), std::move(params),
                                                  std::move(logger));
  impl_->start();
}

async_listener::~async_listener() { close(); }

async_listener& async_listener::operator=(async_listener&& other) noexcept {
  if (this != &other) {
    close();
    ex_ = std::move(other.ex_);
    impl_ = std::move(other.impl_);
  }
  return *this;
}

void async_listener::close() {
  if (impl_) impl_->close();
}

void async_listener::submit_command(const std::shared_ptr<detail::listener_impl>& impl, std::string channel, bool listen,
                              std::unique_ptr<detail::completion<std::monostate>> done) {
  if (!impl) {
    done->complete(boost::asio::system_executor(), true, make_error_code(errc::closed), {});
    return;
  }
  impl->command(std::move(channel), listen, std::move(done));
}

void async_listener::submit_receive(const std::shared_ptr<detail::listener_impl>& impl,
                              std::unique_ptr<detail::completion<notification>> done,
                              boost::asio::cancellation_slot slot) {
  if (!impl) {
    done->complete(boost::asio::system_executor(), true, make_error_code(errc::closed), {});
    return;
  }
  impl->receive(std::move(done), slot);
}

}  // namespace pgpipe
