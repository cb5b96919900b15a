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
// The protocol (the commands, reconnect timing, re-LISTEN, where the gap
// goes, refused channels, the buffer's bound) is listener_core's
// (src/core/listen/listener_core.hpp), shared with the async listener and
// kept under mu_; this file is the I/O around it.
//
// Why the connect walks the hosts itself (pq/host_walk.hpp, as the async
// driver's connect_job): libpq's nonblocking connect has no per-host
// timeout, so with one deadline for a multi-host string a first host that
// accepts TCP and never answers would use up connect_timeout on every
// attempt and the next host would never be tried.
#include <pgpipe/blocking_listener.hpp>

#include <pgpipe/error.hpp>

#include "core/listen/listener_core.hpp"
#include "pq/connect_hooks.hpp"
#include "pq/host_walk.hpp"
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
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pgpipe {
namespace detail {

using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

class blocking_listener_impl {
 public:
  blocking_listener_impl(pool_params params, logger_fn logger)
      : params_(std::move(params)), logger_(std::move(logger)), configured_secrets_(passwords_of(params_.conninfo)),
        secrets_(configured_secrets_),
        core_({params_.connect_backoff_initial, params_.connect_backoff_max, blocking_listener::max_buffered,
               params_.acquire_timeout},
              clock::now()) {
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
    const std::string sql = (listen ? "LISTEN " : "UNLISTEN ") + quote_identifier(channel);
    std::unique_lock lock(mu_);
    if (core_.closed()) throw error(make_error_code(errc::closed), "blocking_listener is closed");
    const command_id id = listen ? core_.subscribe(channel, clock::now()) : core_.unsubscribe(channel, clock::now());
    listen_ack answer;
    bool done = false;
    waiting_.emplace(id, waiter{&answer, &done});
    wake();
    auto acknowledged = [&] { return done; };
    if (params_.query_timeout.count() > 0) {
      if (!cv_.wait_for(lock, params_.query_timeout, acknowledged)) {
        waiting_.erase(id);
        throw error(make_error_code(errc::query_timeout),
                    "blocking_listener: " + sql + " not acknowledged within query_timeout (" +
                        std::to_string(params_.query_timeout.count()) +
                        "ms); it stays recorded and is made as soon as the connection allows");
      }
    } else {
      cv_.wait(lock, acknowledged);
    }
    if (answer.ec) throw error(answer.ec, answer.diag);
  }

  std::optional<notification> receive(milliseconds timeout) {
    std::unique_lock lock(mu_);
    auto ready = [&] { return core_.closed() || core_.has_notification(); };
    cv_.wait_for(lock, std::max(timeout, milliseconds{0}), ready);
    if (core_.closed()) throw error(make_error_code(errc::closed), "blocking_listener is closed");
    if (!core_.has_notification()) return std::nullopt;
    // Reading paused on a full buffer: this pop makes room, so resume it.
    if (core_.full()) wake();
    return core_.pop();
  }

  void close() {
    {
      std::lock_guard lock(mu_);
      if (core_.closed()) return;
      core_.close();
      answer_locked();
      wake();
    }
    cv_.notify_all();
  }

 private:
  // A caller blocked in command(), on its own stack.
  struct waiter {
    listen_ack* answer;
    bool* done;
  };

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

  // Hands the core's answers to the callers waiting for them (under mu_).
  // Returns whether any caller was answered.
  bool answer_locked() {
    bool any = false;
    for (auto& a : core_.take_acks()) {
      auto it = waiting_.find(a.id);
      if (it == waiting_.end()) continue;  // that caller stopped waiting (query_timeout)
      *it->second.answer = std::move(a);
      *it->second.done = true;
      waiting_.erase(it);
      any = true;
    }
    return any;
  }

  // ---- the listener's thread -------------------------------------------------------

  void run() {
    for (;;) {
      clock::time_point connect_at;
      const listener_phase now_in = [&] {
        std::lock_guard lock(mu_);
        connect_at = core_.connect_at();
        expire_locked();
        return core_.phase();
      }();
      if (now_in == listener_phase::closed) break;
      switch (now_in) {
        case listener_phase::waiting:
          if (clock::now() >= connect_at) {
            begin_connect();
          } else {
            wait_for(-1, 0, std::min(connect_at, expiry_at_));
          }
          break;
        case listener_phase::connecting: step_connect(); break;
        case listener_phase::ready: step_ready(); break;
        case listener_phase::closed: break;
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

  // Answers the commands that waited acquire_timeout for a connection, and
  // notes when the next one will have (under mu_).
  void expire_locked() {
    core_.expire(clock::now());
    expiry_at_ = core_.next_deadline();
    if (answer_locked()) cv_.notify_all();
  }

  // ---- connecting ------------------------------------------------------------------

  void begin_connect() {
    {
      std::lock_guard lock(mu_);
      core_.on_connect_started();
    }
    // before_connect may block: this is the listener's own thread.
    connect_target t = prepare_connect(connect_hooks_of(params_), params_.conninfo, configured_secrets_);
    if (t.ec) {
      connect_failed(t.ec, t.error_message, {});
      return;
    }
    secrets_ = std::move(t.secrets);
    walk_.emplace(plan_host_walk(t.conninfo, "pgpipe"));
    start_attempt();
  }

  // One host of the walk, with its own connect_timeout.
  void start_attempt() {
    pg_ = start_connect(walk_->current());
    if (pg_ == nullptr || PQstatus(pg_) == CONNECTION_BAD) {
      attempt_failed("");
      return;
    }
    // Routed from the start: a notice during the handshake must reach the
    // logger too, never libpq's default printer on stderr.
    notices_.emplace(pg_, 0, [this](bool warning, const std::string& line) {
      log(warning ? log_level::warning : log_level::info, line);
    });
    connect_deadline_ = clock::now() + params_.connect_timeout;
    poll_want_ = PGRES_POLLING_WRITING;
  }

  void step_connect() {
    if (clock::now() >= connect_deadline_) {
      attempt_failed(connect_timeout_text(params_.connect_timeout));
      return;
    }
    const short want = poll_want_ == PGRES_POLLING_READING ? POLLIN : POLLOUT;
    const short got = wait_for(PQsocket(pg_), want, std::min(connect_deadline_, expiry_at_));
    if (got == 0) return;  // woken, or a deadline: the loop looks again
    switch (poll_want_ = PQconnectPoll(pg_)) {
      case PGRES_POLLING_OK: connected(); return;
      case PGRES_POLLING_READING:
      case PGRES_POLLING_WRITING: return;
      default: attempt_failed(""); return;
    }
  }

  // `reason` empty: libpq's message says why. The walk decides whether the
  // next host is tried (pq/host_walk.hpp).
  void attempt_failed(const std::string& reason) {
    const std::string why = !reason.empty() ? reason
                            : pg_ != nullptr ? clean_message(PQerrorMessage(pg_), secrets_)
                                             : std::string("out of memory");
    const bool needs_password = pg_ != nullptr && PQconnectionNeedsPassword(pg_) == 1;
    drop_connection();
    walk_step next = walk_->on_attempt_failed(why, needs_password, !reason.empty());
    if (next.try_next) {
      start_attempt();
      return;
    }
    connect_failed(next.ec, next.message, std::move(next.diag));
  }

  void connect_failed(std::error_code ec, const std::string& why, diagnostics diag) {
    log(log_level::warning, "connect failed: " + why);
    if (diag.client_message.empty()) diag.client_message = "connect failed: " + why;
    std::lock_guard lock(mu_);
    core_.on_connect_failed(clock::now(), ec, std::move(diag));
  }

  void connected() {
    PQsetnonblocking(pg_, 1);
    std::lock_guard lock(mu_);
    core_.on_connected();
    expiry_at_ = clock::time_point::max();
  }

  // ---- running ---------------------------------------------------------------------

  void step_ready() {
    std::string sql;
    bool in_flight = false;
    bool wants_read = false;
    {
      std::lock_guard lock(mu_);
      if (const listen_command* c = core_.next_command()) sql = c->sql;
      in_flight = core_.in_flight();
      wants_read = core_.wants_read();
    }
    if (!sql.empty() && PQsendQuery(pg_, sql.c_str()) != 1) {
      lost();
      return;
    }
    const int flushed = PQflush(pg_);
    if (flushed < 0) {
      lost();
      return;
    }
    short want = flushed == 1 ? POLLOUT : 0;
    // Backpressure is the core's (wants_read). libpq's rule while flushing:
    // read too, or a server blocked on its own writes never drains ours.
    if (wants_read || flushed == 1) want |= POLLIN;
    const short got = wait_for(PQsocket(pg_), want, clock::time_point::max());
    if (got & (POLLIN | POLLERR | POLLHUP)) on_readable(in_flight);
  }

  void on_readable(bool in_flight) {
    if (PQconsumeInput(pg_) != 1) {
      collect_notifications();  // what arrived before the loss is still delivered, in order
      lost();
      return;
    }
    // Notifications parsed with the answer came after the command ran: for
    // a re-LISTEN they are newer than the gap, so they queue after it.
    if (in_flight && read_command_results(pg_, outcome_)) command_done();
    if (!pg_) return;  // a refused re-LISTEN dropped the connection
    collect_notifications();
    if (PQstatus(pg_) == CONNECTION_BAD) lost();
  }

  void command_done() {
    listen_outcome outcome = std::exchange(outcome_, {});
    const std::string why = outcome.ec ? outcome.diag.to_string() : std::string();
    after_command next = after_command::carry_on;
    {
      std::lock_guard lock(mu_);
      next = core_.on_command_done(clock::now(), outcome.ec, std::move(outcome.diag));
      answer_locked();
    }
    cv_.notify_all();
    if (outcome.ec) log(log_level::warning, "command failed: " + why);
    if (next == after_command::reconnect) {
      collect_notifications();
      log(log_level::warning, connect_failed_text(pg_, relisten_failed_text(why), secrets_));
      drop_connection();
    }
  }

  void collect_notifications() {
    bool any = false;
    {
      std::lock_guard lock(mu_);
      any = take_notifications(pg_, core_);
    }
    if (any) cv_.notify_all();
  }

  void lost() {
    log(log_level::warning, connection_lost_text(pg_, secrets_));
    outcome_ = {};
    {
      std::lock_guard lock(mu_);
      core_.on_lost(clock::now());
    }
    drop_connection();
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
  const std::vector<std::string> configured_secrets_;
  std::vector<std::string> secrets_;  // this connect's: configured_secrets_ and before_connect's
  int wake_[2] = {-1, -1};  // the self-pipe: callers write, the thread's poll() wakes

  // The listener's thread only.
  PGconn* pg_ = nullptr;
  std::optional<notice_route> notices_;
  clock::time_point connect_deadline_{};
  std::optional<host_walk> walk_;  // the hosts of this connect, in libpq's order
  clock::time_point expiry_at_ = clock::time_point::max();  // core_.next_deadline(), read under mu_
  PostgresPollingStatusType poll_want_ = PGRES_POLLING_WRITING;
  listen_outcome outcome_;  // of the command in flight, read so far

  // Shared with callers, under mu_.
  std::mutex mu_;
  std::condition_variable cv_;
  listener_core core_;
  std::unordered_map<command_id, waiter> waiting_;

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
