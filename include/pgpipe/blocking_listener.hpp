// pgpipe::blocking_listener: LISTEN/NOTIFY for the blocking driver, with the
// contract of pgpipe::async_listener (include/pgpipe/async_listener.hpp), delivered by a
// blocking wait with a timeout.
//
//   pgpipe::blocking_listener l(params);
//   l.subscribe("orders");                        // returns once LISTEN is acknowledged
//   for (;;) {
//     auto n = l.receive(std::chrono::seconds(1));
//     if (!n) continue;                            // nothing within the timeout
//     if (n->gap) { resynchronise(); continue; }   // the connection was lost
//     handle(n->channel, n->payload, n->sender_pid);
//   }
//
// The listener owns one libpq connection (not a pool lease: LISTEN is session
// state) and one thread of its own that reads it, so notifications are read
// while no receive() is waiting and a receive() with a timeout returns on time
// whatever the connection is doing (connecting, reconnecting, backed off).
//
// Under connection loss: it reconnects (at once, then after failed connects
// with pool_params' connect_backoff_initial doubling to connect_backoff_max),
// LISTENs again to every subscribed channel, and only then delivers a
// notification with gap == true: notifications sent while it was away may be
// missing, and any sent after the gap was delivered will arrive, so state
// re-read on a gap misses nothing. Notifications read before the loss are
// delivered first, in order; nothing read on the new connection comes before
// the gap. With no channel subscribed there is no gap (nothing was missed).
//
// Memory: at most max_buffered notifications wait for receive(); past that
// the listener stops reading its socket and the server keeps the rest in its
// notification queue (pg_notification_queue_usage()).
//
// Thread-safety: every member may be called from any thread, concurrently
// (several threads may wait in receive(); each notification goes to one).
// The destructor must not race with other calls on the same object.
#pragma once

#include <pgpipe/logger.hpp>
#include <pgpipe/notification.hpp>
#include <pgpipe/pool_params.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>

namespace pgpipe {

namespace detail {
class blocking_listener_impl;
}

/// LISTEN/NOTIFY on a connection and a thread of its own (see the file
/// comment). Move-only.
class blocking_listener {
 public:
  /// The most notifications held for receive() before reading pauses.
  static constexpr std::size_t max_buffered = 65536;

  /// Starts the listener's thread, which connects in the background. Uses
  /// params.conninfo (a multi-host string walked host by host),
  /// connect_timeout (per host), connect_backoff_initial/max, acquire_timeout
  /// (the wait of a command for a connection) and query_timeout as the bound
  /// on subscribe()/unsubscribe(). Throws
  /// pgpipe::error with errc::bad_params when validate(params) fails (a
  /// conninfo libpq cannot parse is errc::bad_conninfo). `logger` gets
  /// connection losses, failed connects and server notices (never a password);
  /// it runs on the listener's thread.
  explicit blocking_listener(pool_params params, logger_fn logger = {});
  /// close(), then waits for the listener's thread to end.
  ~blocking_listener();
  /// Moves the listener; a move-assignment first closes the one this held.
  ///@{
  blocking_listener(blocking_listener&&) noexcept;
  blocking_listener& operator=(blocking_listener&& other) noexcept;
  ///@}
  blocking_listener(const blocking_listener&) = delete;
  blocking_listener& operator=(const blocking_listener&) = delete;

  /// LISTEN `channel` (any name: it is quoted as an identifier, so case and
  /// Unicode are kept as given); returns once the server acknowledged.
  /// Subscribing twice is harmless. While disconnected the subscription is
  /// made on the next connection, after the re-LISTEN of the channels the
  /// server accepted before. Throws pgpipe::error with: the server's SQLSTATE
  /// (the channel is dropped and blocks no other); errc::closed (before or
  /// during the wait); the last connect error (errc::pool_timeout when no
  /// attempt failed yet) when no connection was ready within
  /// params.acquire_timeout (the command is dropped); errc::query_timeout
  /// when no acknowledgement came within params.query_timeout (the command
  /// stays queued and is made as soon as the connection allows, unless
  /// acquire_timeout drops it first).
  void subscribe(std::string_view channel);
  /// UNLISTEN `channel`; the same contract. Notifications of that channel
  /// already buffered are still delivered.
  void unsubscribe(std::string_view channel);

  /// The next notification (or gap) in the order the server sent them, or
  /// std::nullopt when none came within `timeout` (zero: only what is already
  /// buffered). Returns on time whatever the connection is doing. Throws
  /// pgpipe::error with errc::closed once close() was called (a receive
  /// waiting at that moment wakes at once); buffered notifications are
  /// dropped by close().
  std::optional<notification> receive(std::chrono::milliseconds timeout);

  /// Closes the connection and wakes every waiting call (errc::closed).
  /// Idempotent; returns without waiting for the listener's thread.
  void close();

 private:
  std::unique_ptr<detail::blocking_listener_impl> impl_;
};

}  // namespace pgpipe
