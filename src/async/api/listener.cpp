// pgpipe::listener: one libpq connection in nonblocking mode, on a strand.
//
// Why its own connection and not a pool lease: LISTEN is session state, a
// leased connection would carry it to its next borrower, and a lease can be
// replaced under us; here the listener decides when to reconnect and knows
// exactly which channels the server has.
//
// Why the gap is delivered after the re-LISTEN is acknowledged rather than
// when the loss is seen: a caller re-reads its state on a gap; if LISTEN were
// not active yet, a change made between that re-read and the LISTEN would be
// lost with no gap to say so.
//
// Commands (LISTEN, UNLISTEN, the re-subscription after a reconnect) go one
// at a time with PQsendQuery (the simple protocol, several statements
// allowed). One still in flight when the connection is lost is sent again on
// the next connection: LISTEN and UNLISTEN are idempotent.
#include <pgpipe/listener.hpp>

#include "async/connection/libpq_socket.hpp"
#include "pq/libpq_failure.hpp"
#include "pq/listen_protocol.hpp"
#include "pq/notice_route.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <libpq-fe.h>

#include <deque>
#include <optional>
#include <set>
#include <utility>

namespace pgpipe {

namespace detail {

namespace asio = boost::asio;
using std::chrono::milliseconds;

class listener_impl : public std::enable_shared_from_this<listener_impl> {
 public:
  listener_impl(asio::any_io_executor ex, pool_params params, logger_fn logger)
      : strand_(asio::make_strand(ex)), params_(std::move(params)), logger_(std::move(logger)),
        secrets_(passwords_of(params_.conninfo)), timer_(strand_) {}

  ~listener_impl() { drop_connection(); }

  void start() {
    asio::post(strand_, [self = shared_from_this()] { self->connect(); });
  }

  void command(std::string channel, bool listen, std::unique_ptr<completion<std::monostate>> done) {
    asio::post(strand_, [self = shared_from_this(), channel = std::move(channel), listen,
                         done = std::move(done)]() mutable {
      if (self->closed_) {
        done->complete(self->strand_, false, make_error_code(errc::closed), {});
        return;
      }
      if (listen) {
        self->channels_.insert(channel);
      } else {
        self->channels_.erase(channel);
      }
      std::string sql = (listen ? "LISTEN " : "UNLISTEN ") + quote_identifier(channel);
      self->commands_.push_back({std::move(sql), false, std::move(done), std::move(channel), listen});
      self->send_next();
    });
  }

  void receive(std::unique_ptr<completion<notification>> done) {
    asio::post(strand_, [self = shared_from_this(), done = std::move(done)]() mutable {
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
  struct pending_command {
    std::string sql;
    bool resubscribe = false;  // the re-LISTEN after a reconnect: delivers the gap when acknowledged
    std::unique_ptr<completion<std::monostate>> done;  // null for the listener's own commands
    std::string channel;  // of a caller's LISTEN/UNLISTEN
    bool listen = false;
  };

  void log(log_level level, const std::string& line) const {
    if (logger_) logger_(level, "listener: " + line);
  }

  // ---- connecting ------------------------------------------------------------

  void connect() {
    if (closed_) return;
    const char* keys[] = {"dbname", "fallback_application_name", nullptr};
    const char* vals[] = {params_.conninfo.c_str(), "pgpipe-listener", nullptr};
    pg_ = PQconnectStartParams(keys, vals, 1);
    if (pg_ == nullptr || PQstatus(pg_) == CONNECTION_BAD) {
      connect_failed();
      return;
    }
    // Routed from the start: a notice during the handshake must reach the
    // logger too, never libpq's default printer on stderr.
    notices_.emplace(pg_, 0, [self = weak_from_this()](bool warning, const std::string& line) {
      if (auto s = self.lock()) s->log(warning ? log_level::warning : log_level::info, line);
    });
    connecting_ = true;
    ++attempt_;
    if (params_.connect_timeout.count() > 0) {
      timer_.expires_after(params_.connect_timeout);
      timer_.async_wait([self = shared_from_this(), attempt = attempt_](const boost::system::error_code& ec) {
        if (ec || attempt != self->attempt_ || !self->connecting_) return;
        self->log(log_level::warning, "connect timed out");
        self->connect_failed();
      });
    }
    connect_wait(PGRES_POLLING_WRITING);
  }

  bool reassign_socket() {
    // Asio watches a duplicate of libpq's socket (as pipelined_connection
    // does): libpq may close and reuse its own fd number at any time.
    if (sd_) {
      boost::system::error_code ignored;
      sd_->close(ignored);
      sd_.reset();
    }
    ++gen_;
    read_armed_ = write_armed_ = false;
    sd_ = watch_libpq_socket(strand_, pg_);
    return sd_.has_value();
  }

  void connect_wait(PostgresPollingStatusType want) {
    if (!reassign_socket()) {
      connect_failed();
      return;
    }
    auto w = want == PGRES_POLLING_READING ? asio::posix::stream_descriptor::wait_read
                                           : asio::posix::stream_descriptor::wait_write;
    sd_->async_wait(w, [self = shared_from_this(), gen = gen_](const boost::system::error_code& ec) {
      if (gen != self->gen_ || !self->connecting_) return;
      if (ec) {
        self->connect_failed();
        return;
      }
      switch (PQconnectPoll(self->pg_)) {
        case PGRES_POLLING_OK: self->connected(); return;
        case PGRES_POLLING_READING: self->connect_wait(PGRES_POLLING_READING); return;
        case PGRES_POLLING_WRITING: self->connect_wait(PGRES_POLLING_WRITING); return;
        default: self->connect_failed(); return;
      }
    });
  }

  void connect_failed() {
    std::string why = pg_ ? clean_message(PQerrorMessage(pg_), secrets_) : "out of memory";
    log(log_level::warning, "connect failed: " + why);
    drop_connection();
    backoff_ = backoff_.count() == 0 ? params_.connect_backoff_initial
                                     : std::min(backoff_ * 2, params_.connect_backoff_max);
    retry_after(backoff_);
  }

  void retry_after(milliseconds delay) {
    if (closed_) return;
    ++attempt_;
    timer_.expires_after(delay);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec) self->connect();
    });
  }

  void connected() {
    connecting_ = false;
    timer_.cancel();
    backoff_ = milliseconds{0};
    PQsetnonblocking(pg_, 1);
    if (ever_ready_ && !channels_.empty()) {
      commands_.push_front({relisten_sql(channels_), true, nullptr, {}, false});
    } else if (ever_ready_ && gap_pending_) {
      // Nothing subscribed: nothing could have been missed.
      gap_pending_ = false;
    }
    ever_ready_ = true;
    ready_ = true;
    arm_read();
    send_next();
  }

  // ---- running ---------------------------------------------------------------

  void send_next() {
    if (!ready_ || in_flight_ || commands_.empty()) return;
    if (PQsendQuery(pg_, commands_.front().sql.c_str()) != 1) {
      lost();
      return;
    }
    in_flight_ = true;
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
    if (!ready_ || read_armed_ || !sd_) return;
    // Backpressure: with the buffer full and no command waiting for its
    // answer, leave the rest in the server's notification queue.
    if (queue_.size() >= listener::max_buffered && !in_flight_) return;
    watch(asio::posix::stream_descriptor::wait_read, &listener_impl::read_armed_, &listener_impl::on_readable);
  }

  void on_readable() {
    if (PQconsumeInput(pg_) != 1) {
      collect_notifications();  // what arrived before the loss is still delivered, in order
      lost();
      return;
    }
    if (in_flight_ && read_command_results(pg_, outcome_)) command_done();
    if (!pg_) {  // a failed re-LISTEN dropped the connection
      deliver();
      return;
    }
    collect_notifications();
    if (PQstatus(pg_) == CONNECTION_BAD) {
      lost();
      return;
    }
    deliver();
    arm_read();
    send_next();
  }

  void command_done() {
    in_flight_ = false;
    pending_command c = std::move(commands_.front());
    commands_.pop_front();
    const listen_outcome outcome = std::exchange(outcome_, {});
    const std::error_code ec = outcome.ec;
    if (ec) log(log_level::warning, "command failed: " + outcome.diag.to_string());
    // A LISTEN the server refused is not a subscription: kept, it would make
    // every re-LISTEN after a reconnect fail.
    if (ec && c.listen) channels_.erase(c.channel);
    if (c.done) c.done->complete(strand_, false, ec, {});
    if (c.resubscribe && ec) {
      // Delivering the gap now would claim the channels are listened again
      // when the server refused: reconnect after the back-off, gap pending.
      collect_notifications();
      connect_failed();
      return;
    }
    if (c.resubscribe && gap_pending_) {
      gap_pending_ = false;
      notification gap;
      gap.gap = true;
      queue_.push_back(std::move(gap));
    }
  }

  void collect_notifications() { take_notifications(pg_, queue_); }

  void deliver() {
    if (!receiver_ || queue_.empty()) return;
    auto done = std::move(receiver_);
    notification n = std::move(queue_.front());
    queue_.pop_front();
    done->complete(strand_, false, {}, std::move(n));
  }

  void lost() {
    log(log_level::warning, "connection lost (" + (pg_ ? clean_message(PQerrorMessage(pg_), secrets_) : "") +
                                "): reconnecting; a gap event follows");
    // A command in flight is sent again on the next connection.
    in_flight_ = false;
    outcome_ = {};
    gap_pending_ = true;
    drop_connection();
    deliver();
    retry_after(milliseconds{0});
  }

  void drop_connection() {
    ready_ = false;
    connecting_ = false;
    notices_.reset();
    if (sd_) {
      boost::system::error_code ignored;
      sd_->close(ignored);
      sd_.reset();
    }
    ++gen_;
    read_armed_ = write_armed_ = false;
    if (pg_) {
      PQfinish(pg_);
      pg_ = nullptr;
    }
  }

  void shut() {
    if (closed_) return;
    closed_ = true;
    timer_.cancel();
    drop_connection();
    for (auto& c : commands_) {
      if (c.done) c.done->complete(strand_, false, make_error_code(errc::closed), {});
    }
    commands_.clear();
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
  bool connecting_ = false;
  bool ready_ = false;
  bool ever_ready_ = false;
  bool gap_pending_ = false;
  bool closed_ = false;
  bool in_flight_ = false;
  bool read_armed_ = false;
  bool write_armed_ = false;
  milliseconds backoff_{0};

  std::set<std::string> channels_;
  std::deque<pending_command> commands_;
  listen_outcome outcome_;  // of the command in flight
  std::deque<notification> queue_;
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
