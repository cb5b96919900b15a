// listener_core: the LISTEN/NOTIFY protocol of one listener, sans-IO.
//
// Both listeners drive it: pgpipe::async_listener (src/async/api/listener.cpp, on
// a strand) and pgpipe::blocking_listener (src/blocking/api/
// blocking_listener.cpp, on a thread of its own). They own the connection,
// the socket, the timers and the threads; the core owns what the public
// headers (listener.hpp, blocking_listener.hpp) and docs/service.md promise:
//
//  - the channels subscribed, and the commands in order (a caller's LISTEN
//    or UNLISTEN, the re-LISTEN after a reconnect), one in flight at a time.
//    One still in flight when the connection is lost is sent again on the
//    next connection: LISTEN and UNLISTEN are idempotent;
//  - when to connect: the first attempt at once, the first after a loss at
//    once, after a failed connect connect_backoff_initial doubling up to
//    connect_backoff_max; a successful connect resets the back-off;
//  - after a reconnect, every channel is LISTENed again (one command, one
//    implicit transaction: all or none) before any caller's command;
//  - the gap event, queued when that re-LISTEN is acknowledged: after every
//    notification read before the loss, before any notification read with or
//    after the acknowledgement. Why not when the loss is seen: a caller
//    re-reads its state on a gap, and a change made between that re-read and
//    an active LISTEN would be lost with no gap to say so. With nothing
//    subscribed at the reconnect there is no gap (nothing was missed);
//  - a channel is a subscription once the server accepted its LISTEN: the
//    re-LISTEN holds only those, and a LISTEN still waiting (asked while
//    disconnected, or in flight at a loss) follows it as its own command, so
//    a channel the server refuses is answered with the server's error and
//    dropped, never part of a re-LISTEN that would fail for every channel. A
//    refused re-LISTEN (the server refusing an accepted channel) counts as a
//    failed connect: the driver drops the connection, the core waits the
//    back-off, and the gap stays pending (never delivered while a channel is
//    not listened);
//  - a caller's command waits at most acquire_timeout for a connection (from
//    when it was asked, or from the loss that sent it back to waiting): then
//    it is answered with the last connect error (or errc::pool_timeout when
//    no attempt has failed yet) and dropped, so a listener that can never
//    connect (a wrong password) does not leave its callers waiting forever;
//  - the notification buffer and its bound: with max_buffered waiting and no
//    command waiting for its answer, the driver stops reading, and the server
//    keeps the rest in its notification queue.
//
// Calls follow the connection's phases:
//
//   waiting --on_connect_started--> connecting --on_connected--> ready
//      ^                               |                          |
//      +------ on_connect_failed ------+                          |
//      +------ on_lost, or on_command_done answering reconnect ---+
//
// and close() ends them all (closed). Each caller's command is answered
// exactly once, through take_acks(): with the server's verdict, or
// errc::closed. Commands are named by the id subscribe()/unsubscribe()
// returned; the listener's own re-LISTEN has none and is never acked.
//
// Never touches libpq, a socket, a thread or a clock: the driver passes
// `now` where time matters. Not thread-safe: the driver serializes calls
// (the async listener's strand, the blocking listener's mutex).
#pragma once

#include <pgpipe/error.hpp>
#include <pgpipe/notification.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace pgpipe::detail {

using listen_clock = std::chrono::steady_clock;
/// A caller's command; never reused within one listener_core, never 0.
using command_id = std::uint64_t;

enum class listener_phase { waiting, connecting, ready, closed };

/// One command for the server. The SQL is what the driver sends (the simple
/// query protocol: the re-LISTEN holds one statement per channel); the rest
/// says what it means, for the core's bookkeeping and for tests.
struct listen_command {
  enum class kind { listen, unlisten, relisten };
  kind what = kind::listen;
  std::vector<std::string> channels;  ///< one, or every channel for a re-LISTEN
  std::string sql;
  command_id id = 0;  ///< 0 for the listener's own re-LISTEN
  /// A caller's command not answered by then, with no connection ready,
  /// fails with the connect error (expire()).
  listen_clock::time_point deadline{};
};

/// A caller's command answered: empty `ec` when the server acknowledged it,
/// else the server's SQLSTATE (with its diagnostics) or errc::closed.
struct listen_ack {
  command_id id = 0;
  std::error_code ec;
  diagnostics diag;
};

/// What the driver does after on_command_done.
enum class after_command {
  carry_on,   ///< read on, send the next command
  reconnect,  ///< the re-LISTEN was refused: drop the connection; connect again at connect_at()
};

class listener_core {
 public:
  struct settings {
    std::chrono::milliseconds backoff_initial{50};  ///< pool_params::connect_backoff_initial
    std::chrono::milliseconds backoff_max{500};     ///< pool_params::connect_backoff_max
    std::size_t max_buffered = 65536;               ///< listener::max_buffered
    std::chrono::milliseconds acquire_timeout{30'000};  ///< pool_params::acquire_timeout
  };

  /// Phase waiting, the first connect due at `now`.
  listener_core(settings s, listen_clock::time_point now);

  // ---- callers ------------------------------------------------------------

  /// Queues the LISTEN of `channel` (sent once ready, after the commands
  /// before it); the channel is subscribed once the server accepts it. Its
  /// answer comes through take_acks() under the id returned: the server's
  /// verdict, or the connect error when no connection was ready by
  /// `now` + acquire_timeout (see expire()). When closed, the ack
  /// (errc::closed) is queued at once.
  command_id subscribe(std::string_view channel, listen_clock::time_point now);
  /// Forgets `channel` at once (no re-LISTEN holds it) and queues its
  /// UNLISTEN; the same contract. Notifications of that channel already
  /// buffered are still delivered.
  command_id unsubscribe(std::string_view channel, listen_clock::time_point now);

  /// Answers every caller's command not yet answered with errc::closed,
  /// drops the buffered notifications, and refuses everything from now on
  /// (phase closed). Idempotent.
  void close();

  /// Every answer queued since the last call, in the order they were decided.
  std::vector<listen_ack> take_acks();

  // ---- the connection -----------------------------------------------------

  listener_phase phase() const noexcept { return phase_; }
  bool closed() const noexcept { return phase_ == listener_phase::closed; }
  /// In phase waiting: when the next connect attempt is due (the driver
  /// starts it then, calling on_connect_started). Meaningless in other phases.
  listen_clock::time_point connect_at() const noexcept { return connect_at_; }

  /// waiting -> connecting: the driver started a connect attempt.
  void on_connect_started() noexcept;
  /// connecting -> ready. After a loss, queues the re-LISTEN of every
  /// channel ahead of every other command (or, with none subscribed, clears
  /// the pending gap).
  void on_connected();
  /// -> waiting: the attempt failed or timed out (`ec`, `diag`: why, kept as
  /// the error of the commands that expire); the next one is due after the
  /// back-off. Ignored once closed.
  void on_connect_failed(listen_clock::time_point now, std::error_code ec = {}, diagnostics diag = {});
  /// ready -> waiting: the connection was lost. A gap is pending; the next
  /// attempt is due at once (the back-off is for a server that refuses); a
  /// command in flight is sent again; every caller's command waits at most
  /// acquire_timeout from `now` again. Ignored once closed.
  void on_lost(listen_clock::time_point now) noexcept;

  /// With no connection ready (waiting, connecting): answers every caller's
  /// command whose deadline is at or before `now` with the last connect error
  /// and drops it (an expired LISTEN subscribes nothing; an expired UNLISTEN
  /// leaves its channel forgotten). The driver calls it at next_deadline().
  void expire(listen_clock::time_point now);
  /// When expire() has something to do: the earliest deadline of a caller's
  /// command while no connection is ready, else time_point::max().
  listen_clock::time_point next_deadline() const noexcept;

  /// In phase ready with nothing in flight: the next command, now in flight
  /// (the driver sends its SQL, then reports on_command_done, or on_lost).
  /// Otherwise null. The pointer is valid until the next non-const call.
  const listen_command* next_command() noexcept;
  /// A command is waiting for its answer.
  bool in_flight() const noexcept { return in_flight_; }
  /// The server answered the command in flight (`ec` empty: accepted). Queues
  /// its ack; a refused LISTEN forgets its channel; an accepted re-LISTEN
  /// queues the pending gap. A refused re-LISTEN moves to waiting with the
  /// back-off (as on_connect_failed) and answers reconnect.
  after_command on_command_done(listen_clock::time_point now, std::error_code ec, diagnostics diag);

  // ---- notifications ------------------------------------------------------

  /// A notification the connection delivered, appended to the buffer in the
  /// server's order. Ignored once closed.
  void on_notification(notification n);
  /// Whether the driver should read its socket (backpressure): false only
  /// with the buffer full and no command waiting for its answer.
  bool wants_read() const noexcept { return !full() || in_flight_; }
  bool full() const noexcept { return buffer_.size() >= settings_.max_buffered; }
  bool has_notification() const noexcept { return !buffer_.empty(); }
  /// The oldest buffered notification (or gap). Precondition: has_notification().
  notification pop();

  // ---- for tests ----------------------------------------------------------

  const std::set<std::string>& channels() const noexcept { return channels_; }
  bool gap_pending() const noexcept { return gap_pending_; }
  std::chrono::milliseconds backoff() const noexcept { return backoff_; }

 private:
  command_id queue_command(listen_command::kind what, std::string_view channel, listen_clock::time_point now);
  void back_off(listen_clock::time_point now) noexcept;

  const settings settings_;
  listener_phase phase_ = listener_phase::waiting;
  listen_clock::time_point connect_at_;
  std::chrono::milliseconds backoff_{0};
  bool ever_ready_ = false;
  bool gap_pending_ = false;
  bool in_flight_ = false;  // the head of commands_ was sent
  command_id next_id_ = 1;
  std::set<std::string> channels_;  // accepted by the server, not unsubscribed since
  std::error_code last_connect_error_;
  diagnostics last_connect_diag_;
  std::deque<listen_command> commands_;
  std::vector<listen_ack> acks_;
  std::deque<notification> buffer_;
};

/// One simple query LISTENing to every channel (they run in one implicit
/// transaction: all or none are listened).
std::string relisten_sql(const std::set<std::string>& channels);

}  // namespace pgpipe::detail
