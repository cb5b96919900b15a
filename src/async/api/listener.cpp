// pgpipe::listener: one libpq connection in nonblocking mode, on a strand.
//
// Why its own connection and not a pool lease: LISTEN is session state, a
// leased connection would carry it to its next borrower, and a lease can be
// replaced under us; here the listener decides when to reconnect and knows
// exactly which channels the server has.
//
// What to send, when to reconnect, where the gap goes and what a refused
// LISTEN means is listener_core's (src/core/listen/listener_core.hpp, its
// contract and reasons); this file is the I/O around it: the nonblocking
// connect, the socket watched through Asio, the connect timeout and the
// back-off timer. Commands go one at a time with PQsendQuery (the simple
// protocol: the re-LISTEN holds several statements).
#include <pgpipe/listener.hpp>

#include "async/connection/libpq_socket.hpp"
#include "core/listen/listener_core.hpp"
#include "pq/libpq_failure.hpp"
#include "pq/listen_protocol.hpp"
#include "pq/notice_route.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <libpq-fe.h>

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
  listener_impl(asio::any_io_executor ex, pool_params params, logger_fn logger)
      : strand_(asio::make_strand(ex)), params_(std::move(params)), logger_(std::move(logger)),
        secrets_(passwords_of(params_.conninfo)), timer_(strand_),
        core_({params_.connect_backoff_initial, params_.connect_backoff_max, listener::max_buffered},
              listen_clock::now()) {}

  ~listener_impl() { drop_connection(); }

  void start() {
    asio::post(strand_, [self = shared_from_this()] { self->connect(); });
  }

  void command(std::string channel, bool listen, std::unique_ptr<completion<std::monostate>> done) {
    asio::post(strand_, [self = shared_from_this(), channel = std::move(channel), listen,
                         done = std::move(done)]() mutable {
      const command_id id = listen ? self->core_.subscribe(channel) : self->core_.unsubscribe(channel);
      self->pending_.emplace(id, std::move(done));
      self->answer();
      self->send_next();
    });
  }

  void receive(std::unique_ptr<completion<notification>> done) {
    asio::post(strand_, [self = shared_from_this(), done = std::move(done)]() mutable {
      if (self->core_.closed()) {
        done->complete(self->strand_, false, make_error_code(errc::closed), {});
        return;
      }
      if (self->receiver_) {
        done->complete(self->strand_, false, make_error_code(errc::invalid_argument), {});
        return;
      }
      self->receiver_ = std::move(done);
      self->deliver();
      self->arm_read();  // reading may have paused on a full buffer
    });
  }

  void close() {
    asio::post(strand_, [self = shared_from_this()] { self->shut(); });
  }

 private:
  void log(log_level level, const std::string& line) const {
    if (logger_) logger_(level, "listener: " + line);
  }

  // ---- connecting ------------------------------------------------------------

  void connect() {
    if (core_.phase() != listener_phase::waiting) return;
    core_.on_connect_started();
    pg_ = start_listener_connect(params_.conninfo, "pgpipe-listener");
    if (pg_ == nullptr || PQstatus(pg_) == CONNECTION_BAD) {
      connect_failed("");
      return;
    }
    // Routed from the start: a notice during the handshake must reach the
    // logger too, never libpq's default printer on stderr.
    notices_.emplace(pg_, 0, [self = weak_from_this()](bool warning, const std::string& line) {
      if (auto s = self.lock()) s->log(warning ? log_level::warning : log_level::info, line);
    });
    ++attempt_;
    if (params_.connect_timeout.count() > 0) {
      timer_.expires_after(params_.connect_timeout);
      timer_.async_wait([self = shared_from_this(), attempt = attempt_](const boost::system::error_code& ec) {
        if (ec || attempt != self->attempt_ || self->core_.phase() != listener_phase::connecting) return;
        self->connect_failed(connect_timeout_text(self->params_.connect_timeout));
      });
    }
    connect_wait(PGRES_POLLING_WRITING);
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

  void connect_wait(PostgresPollingStatusType want) {
    if (!reassign_socket()) {
      connect_failed("");
      return;
    }
    auto w = want == PGRES_POLLING_READING ? asio::posix::stream_descriptor::wait_read
                                           : asio::posix::stream_descriptor::wait_write;
    sd_->async_wait(w, [self = shared_from_this(), gen = gen_](const boost::system::error_code& ec) {
      if (gen != self->gen_ || self->core_.phase() != listener_phase::connecting) return;
      if (ec) {
        self->connect_failed("");
        return;
      }
      switch (PQconnectPoll(self->pg_)) {
        case PGRES_POLLING_OK: self->connected(); return;
        case PGRES_POLLING_READING: self->connect_wait(PGRES_POLLING_READING); return;
        case PGRES_POLLING_WRITING: self->connect_wait(PGRES_POLLING_WRITING); return;
        default: self->connect_failed(""); return;
      }
    });
  }

  // `reason` empty: libpq's message says why.
  void connect_failed(const std::string& reason) {
    log(log_level::warning, connect_failed_text(pg_, reason, secrets_));
    drop_connection();
    core_.on_connect_failed(listen_clock::now());
    retry_at_connect_time();
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
    timer_.cancel();
    PQsetnonblocking(pg_, 1);
    core_.on_connected();
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
    drop_connection();
    answer();
    if (receiver_) {
      auto done = std::move(receiver_);
      done->complete(strand_, false, make_error_code(errc::closed), {});
    }
  }

  asio::strand<asio::any_io_executor> strand_;
  const pool_params params_;
  const logger_fn logger_;
  const std::vector<std::string> secrets_;
  asio::steady_timer timer_;

  PGconn* pg_ = nullptr;
  std::optional<asio::posix::stream_descriptor> sd_;
  std::optional<notice_route> notices_;
  std::uint64_t gen_ = 0;      // socket registrations: a stale wait's handler ignores itself
  std::uint64_t attempt_ = 0;  // connect attempts: a stale connect timeout ignores itself
  bool read_armed_ = false;
  bool write_armed_ = false;

  listener_core core_;
  listen_outcome outcome_;  // of the command in flight, read so far
  std::unordered_map<command_id, std::unique_ptr<completion<std::monostate>>> pending_;  // callers' commands not yet answered
  std::unique_ptr<completion<notification>> receiver_;
};

}  // namespace detail

listener::listener(executor_type ex, pool_params params, logger_fn logger) : ex_(ex) {
  validate(params);
  impl_ = std::make_shared<detail::listener_impl>(std::move(ex), std::move(params), std::move(logger));
  impl_->start();
}

listener::listener(async_client& client, pool_params params, logger_fn logger)
    : listener(client.get_executor(), std::move(params), std::move(logger)) {}

listener::~listener() { close(); }

listener& listener::operator=(listener&& other) noexcept {
  if (this != &other) {
    close();
    ex_ = std::move(other.ex_);
    impl_ = std::move(other.impl_);
  }
  return *this;
}

void listener::close() {
  if (impl_) impl_->close();
}

void listener::submit_command(const std::shared_ptr<detail::listener_impl>& impl, std::string channel, bool listen,
                              std::unique_ptr<detail::completion<std::monostate>> done) {
  if (!impl) {
    done->complete(boost::asio::system_executor(), true, make_error_code(errc::closed), {});
    return;
  }
  impl->command(std::move(channel), listen, std::move(done));
}

void listener::submit_receive(const std::shared_ptr<detail::listener_impl>& impl,
                              std::unique_ptr<detail::completion<notification>> done) {
  if (!impl) {
    done->complete(boost::asio::system_executor(), true, make_error_code(errc::closed), {});
    return;
  }
  impl->receive(std::move(done));
}

}  // namespace pgpipe
