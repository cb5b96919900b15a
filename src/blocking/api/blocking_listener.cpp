// pgpipe::blocking_listener: one libpq connection in nonblocking mode, read by
// a thread of the listener's own with poll().
//
// Why direct libpq and not libpqxx 6.4 (the rest of the blocking driver):
// pqxx::connection::await_notification() can be woken neither by close() from
// another thread nor by a deadline of ours while it connects, and libpqxx 6.4
// reconnects a lost connection by itself on next use, which would hide the
// very loss this listener must report as a gap. libpq's nonblocking calls
// (PQconnectStartParams/PQconnectPoll, PQsendQuery, PQconsumeInput,
// PQnotifies) let one poll() wait on the socket, a wake-up pipe and the next
// deadline together, so nothing here blocks past what the caller asked for.
//
// Why a thread and not reading inside receive(): the socket must be read while
// nobody is in receive() (else the server's queue grows and a loss goes unseen
// until the next call), and subscribe() must be acknowledged while another
// thread waits in receive(). One thread owns the PGconn; callers talk to it
// through the state under mu_ and the wake-up pipe. It is the blocking
// driver's model: a thread for each thing that waits, visible in the count.
//
// The contract and its reasons are the async listener's (src/async/listener.cpp):
// the gap is queued when the re-LISTEN is acknowledged, not when the loss is
// seen, so a caller re-reading state on a gap cannot miss a change; a command
// in flight when the connection is lost is sent again (LISTEN and UNLISTEN
// are idempotent).
#include <pgpipe/blocking_listener.hpp>

#include <pgpipe/error.hpp>

#include "pq/libpq_failure.hpp"
#include "pq/listen_protocol.hpp"
#include "pq/notice_route.hpp"

#include <libpq-fe.h>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace pgpipe {
namespace detail {

using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

class blocking_listener_impl {
 public:
  blocking_listener_impl(pool_params params, logger_fn logger)
      : params_(std::move(params)), logger_(std::move(logger)), secrets_(passwords_of(params_.conninfo)) {
    if (auto why = conninfo_parse_error(params_.conninfo, secrets_); !why.empty())
      throw error(make_error_code(errc::bad_conninfo), "blocking_listener: " + why);
    if (::pipe2(wake_, O_NONBLOCK | O_CLOEXEC) != 0)
      throw std::system_error(errno, std::generic_category(), "blocking_listener: pipe2");
    thread_ = std::thread([this] { run(); });
  }

  ~blocking_listener_impl() {
    close();
    thread_.join();
    ::close(wake_[0]);
    ::close(wake_[1]);
  }

  blocking_listener_impl(const blocking_listener_impl&) = delete;
  blocking_listener_impl& operator=(const blocking_listener_impl&) = delete;

  void command(std::string_view channel, bool listen) {
    auto c = std::make_shared<pending_command>();
    c->sql = (listen ? "LISTEN " : "UNLISTEN ") + quote_identifier(channel);
    c->channel = channel;
    c->listen = listen;
    std::unique_lock lock(mu_);
    if (closed_) throw error(make_error_code(errc::closed), "blocking_listener is closed");
    if (listen) {
      channels_.emplace(channel);
    } else {
      channels_.erase(std::string(channel));
    }
    commands_.push_back(c);
    wake();
    auto acknowledged = [&] { return c->done || closed_; };
    if (params_.query_timeout.count() > 0) {
      if (!cv_.wait_for(lock, params_.query_timeout, acknowledged))
        throw error(make_error_code(errc::query_timeout),
                    "blocking_listener: " + c->sql + " not acknowledged within query_timeout (" +
                        std::to_string(params_.query_timeout.count()) +
                        "ms); it stays recorded and is made as soon as the connection allows");
    } else {
      cv_.wait(lock, acknowledged);
    }
    if (!c->done) throw error(make_error_code(errc::closed), "blocking_listener closed before " + c->sql + " was acknowledged");
    if (c->ec) throw error(c->ec, c->diag);
  }

  std::optional<notification> receive(milliseconds timeout) {
    std::unique_lock lock(mu_);
    auto ready = [&] { return closed_ || !queue_.empty(); };
    cv_.wait_for(lock, std::max(timeout, milliseconds{0}), ready);
    if (closed_) throw error(make_error_code(errc::closed), "blocking_listener is closed");
    if (queue_.empty()) return std::nullopt;
    // Reading paused on a full buffer: this pop makes room, so resume it.
    if (queue_.size() >= blocking_listener::max_buffered) wake();
    notification n = std::move(queue_.front());
    queue_.pop_front();
    return n;
  }

  void close() {
    {
      std::lock_guard lock(mu_);
      if (closed_) return;
      closed_ = true;
      wake();
    }
    cv_.notify_all();
  }

 private:
  struct pending_command {
    std::string sql;
    std::string channel;  // of a caller's LISTEN/UNLISTEN
    bool listen = false;
    bool resubscribe = false;  // the re-LISTEN after a reconnect: queues the gap when acknowledged
    bool done = false;         // under mu_
    std::error_code ec;        // under mu_, valid once done
    diagnostics diag;
  };

  enum class state { backing_off, connecting, ready };

  // ---- wake-ups and logging ------------------------------------------------------

  void wake() {
    // Non-blocking: a full pipe already holds a wake-up, which is all we need.
    const char b = 1;
    [[maybe_unused]] auto n = ::write(wake_[1], &b, 1);
  }

  void drain_wake() {
    char buf[64];
    while (::read(wake_[0], buf, sizeof buf) > 0) {
    }
  }

  void log(log_level level, const std::string& line) const {
    if (logger_) logger_(level, "blocking_listener: " + line);
  }

  bool is_closed() {
    std::lock_guard lock(mu_);
    return closed_;
  }

  // ---- the listener's thread -------------------------------------------------------

  void run() {
    while (!is_closed()) {
      switch (state_) {
        case state::backing_off:
          if (clock::now() >= next_connect_) {
            start_connect();
          } else {
            wait_for(-1, 0, next_connect_);
          }
          break;
        case state::connecting: step_connect(); break;
        case state::ready: step_ready(); break;
      }
    }
    drop_connection();
  }

  // poll() on the wake-up pipe and, when fd >= 0, on `fd` for `events`, until
  // `until` (clock::time_point::max(): no deadline). Returns the socket's revents.
  short wait_for(int fd, short events, clock::time_point until) {
    pollfd fds[2] = {{wake_[0], POLLIN, 0}, {fd, events, 0}};
    int timeout_ms = -1;
    if (until != clock::time_point::max()) {
      auto left = std::chrono::ceil<milliseconds>(until - clock::now()).count();
      timeout_ms = static_cast<int>(std::clamp<long long>(left, 0, 60'000));
    }
    const int n = ::poll(fds, fd >= 0 ? 2 : 1, timeout_ms);
    if (n <= 0) return 0;  // timeout or EINTR: the caller's loop re-checks everything
    if (fds[0].revents != 0) drain_wake();
    return fd >= 0 ? fds[1].revents : 0;
  }

  // ---- connecting ------------------------------------------------------------------

  void start_connect() {
    const char* keys[] = {"dbname", "fallback_application_name", nullptr};
    const char* vals[] = {params_.conninfo.c_str(), "pgpipe-blocking-listener", nullptr};
    pg_ = PQconnectStartParams(keys, vals, 1);
    if (pg_ == nullptr || PQstatus(pg_) == CONNECTION_BAD) {
      connect_failed("");
      return;
    }
    // Routed from the start: a notice during the handshake must reach the
    // logger too, never libpq's default printer on stderr.
    notices_.emplace(pg_, 0, [this](bool warning, const std::string& line) {
      log(warning ? log_level::warning : log_level::info, line);
    });
    state_ = state::connecting;
    connect_deadline_ = clock::now() + params_.connect_timeout;
    poll_want_ = PGRES_POLLING_WRITING;
  }

  void step_connect() {
    if (clock::now() >= connect_deadline_) {
      connect_failed("connect timed out after " + std::to_string(params_.connect_timeout.count()) + "ms");
      return;
    }
    const short want = poll_want_ == PGRES_POLLING_READING ? POLLIN : POLLOUT;
    const short got = wait_for(PQsocket(pg_), want, connect_deadline_);
    if (got == 0) return;  // woken, or the deadline: the loop looks again
    switch (poll_want_ = PQconnectPoll(pg_)) {
      case PGRES_POLLING_OK: connected(); return;
      case PGRES_POLLING_READING:
      case PGRES_POLLING_WRITING: return;
      default: connect_failed(""); return;
    }
  }

  void connect_failed(const std::string& reason) {
    const std::string why = !reason.empty() ? reason
                            : pg_           ? clean_message(PQerrorMessage(pg_), secrets_)
                                            : "out of memory";
    log(log_level::warning, "connect failed: " + why);
    drop_connection();
    backoff_ = backoff_.count() == 0 ? params_.connect_backoff_initial
                                     : std::min(backoff_ * 2, params_.connect_backoff_max);
    next_connect_ = clock::now() + backoff_;
    state_ = state::backing_off;
  }

  void connected() {
    backoff_ = milliseconds{0};
    PQsetnonblocking(pg_, 1);
    state_ = state::ready;
    std::lock_guard lock(mu_);
    if (ever_ready_ && !channels_.empty()) {
      auto c = std::make_shared<pending_command>();
      c->resubscribe = true;
      c->sql = relisten_sql(channels_);
      commands_.push_front(std::move(c));
    } else {
      // Nothing subscribed: nothing could have been missed.
      gap_pending_ = false;
    }
    ever_ready_ = true;
  }

  // ---- running ---------------------------------------------------------------------

  void step_ready() {
    if (!in_flight_) {
      std::string sql;
      {
        std::lock_guard lock(mu_);
        if (!commands_.empty()) {
          in_flight_ = commands_.front();
          sql = in_flight_->sql;
        }
      }
      if (in_flight_ && PQsendQuery(pg_, sql.c_str()) != 1) {
        lost();
        return;
      }
    }
    const int flushed = PQflush(pg_);
    if (flushed < 0) {
      lost();
      return;
    }
    short want = flushed == 1 ? POLLOUT : 0;
    bool full = false;
    {
      std::lock_guard lock(mu_);
      full = queue_.size() >= blocking_listener::max_buffered;
    }
    // Backpressure: with the buffer full and no command waiting for its
    // answer, leave the rest in the server's notification queue. libpq's rule
    // while flushing: read too, or a server blocked on its own writes never
    // drains ours.
    if (!full || in_flight_ || flushed == 1) want |= POLLIN;
    const short got = wait_for(PQsocket(pg_), want, clock::time_point::max());
    if (got & (POLLIN | POLLERR | POLLHUP)) on_readable();
  }

  void on_readable() {
    if (PQconsumeInput(pg_) != 1) {
      collect_notifications();  // what arrived before the loss is still delivered, in order
      lost();
      return;
    }
    // Notifications parsed with the answer came after the command ran: for
    // a re-LISTEN they are newer than the gap, so they queue after it.
    if (in_flight_ && read_command_results(pg_, outcome_)) command_done();
    if (!pg_) return;  // a failed re-LISTEN dropped the connection
    collect_notifications();
    if (PQstatus(pg_) == CONNECTION_BAD) lost();
  }

  void command_done() {
    auto c = std::move(in_flight_);
    bool resubscribe_failed = false;
    {
      std::lock_guard lock(mu_);
      if (!commands_.empty() && commands_.front() == c) commands_.pop_front();
      c->done = true;
      c->ec = outcome_.ec;
      c->diag = std::exchange(outcome_, {}).diag;
      // A LISTEN the server refused is not a subscription: kept, it would
      // make every re-LISTEN after a reconnect fail.
      if (c->ec && c->listen) channels_.erase(c->channel);
      if (c->resubscribe && c->ec) {
        // Delivering the gap now would claim channels are listened again
        // when the server refused: drop the connection and try again, the
        // gap still pending.
        resubscribe_failed = true;
      } else if (c->resubscribe && gap_pending_) {
        gap_pending_ = false;
        notification gap;
        gap.gap = true;
        queue_.push_back(std::move(gap));
      }
    }
    cv_.notify_all();
    if (c->ec) log(log_level::warning, "command failed: " + c->diag.to_string());
    if (resubscribe_failed) {
      collect_notifications();
      connect_failed("LISTEN again after a reconnect failed: " + c->diag.to_string());
    }
  }

  void collect_notifications() {
    bool any = false;
    {
      std::lock_guard lock(mu_);
      any = take_notifications(pg_, queue_);
    }
    if (any) cv_.notify_all();
  }

  void lost() {
    log(log_level::warning, "connection lost (" + (pg_ ? clean_message(PQerrorMessage(pg_), secrets_) : "") +
                                "): reconnecting; a gap event follows");
    // A command in flight stays at the head of commands_ and is sent again
    // on the next connection.
    in_flight_.reset();
    outcome_ = {};
    {
      std::lock_guard lock(mu_);
      gap_pending_ = true;
    }
    drop_connection();
    // The first attempt at once: the back-off is for a server that refuses.
    state_ = state::backing_off;
    next_connect_ = clock::now();
  }

  void drop_connection() {
    notices_.reset();
    if (pg_) {
      PQfinish(pg_);
      pg_ = nullptr;
    }
  }

  const pool_params params_;
  const logger_fn logger_;
  const std::vector<std::string> secrets_;
  int wake_[2] = {-1, -1};  // the self-pipe: callers write, the thread's poll() wakes

  // The listener's thread only.
  PGconn* pg_ = nullptr;
  std::optional<notice_route> notices_;
  state state_ = state::backing_off;
  clock::time_point next_connect_{};  // the first connect at once
  clock::time_point connect_deadline_{};
  PostgresPollingStatusType poll_want_ = PGRES_POLLING_WRITING;
  milliseconds backoff_{0};
  std::shared_ptr<pending_command> in_flight_;
  listen_outcome outcome_;  // of the command in flight

  // Shared with callers, under mu_.
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;
  bool ever_ready_ = false;
  bool gap_pending_ = false;
  std::set<std::string> channels_;
  std::deque<std::shared_ptr<pending_command>> commands_;
  std::deque<notification> queue_;

  std::thread thread_;  // last: started once everything above exists
};

}  // namespace detail

namespace {
[[noreturn]] void throw_closed() { throw error(make_error_code(errc::closed), "blocking_listener was moved from"); }
}  // namespace

blocking_listener::blocking_listener(pool_params params, logger_fn logger) {
  validate(params);
  impl_ = std::make_unique<detail::blocking_listener_impl>(std::move(params), std::move(logger));
}

blocking_listener::~blocking_listener() = default;
blocking_listener::blocking_listener(blocking_listener&&) noexcept = default;

blocking_listener& blocking_listener::operator=(blocking_listener&& other) noexcept {
  if (this != &other) impl_ = std::move(other.impl_);  // the old impl's destructor closes and joins
  return *this;
}

void blocking_listener::subscribe(std::string_view channel) {
  if (!impl_) throw_closed();
  impl_->command(channel, true);
}

void blocking_listener::unsubscribe(std::string_view channel) {
  if (!impl_) throw_closed();
  impl_->command(channel, false);
}

std::optional<notification> blocking_listener::receive(std::chrono::milliseconds timeout) {
  if (!impl_) throw_closed();
  return impl_->receive(timeout);
}

void blocking_listener::close() {
  if (impl_) impl_->close();
}

}  // namespace pgpipe
