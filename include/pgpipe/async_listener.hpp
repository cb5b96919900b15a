// pgpipe::async_listener: LISTEN/NOTIFY on a connection of its own, that never
// loses notifications silently.
//
//   pgpipe::async_listener l(client, params);   // or (executor, params)
//   co_await l.async_subscribe("orders", asio::use_awaitable);
//   for (;;) {
//     auto [ec, n] = co_await l.async_receive(asio::as_tuple(asio::use_awaitable));
//     if (ec) break;                            // errc::closed after close()
//     if (n.gap) { resynchronise(); continue; } // the connection was lost
//     handle(n.channel, n.payload, n.sender_pid);
//   }
//
// The listener owns one libpq connection (not a pool lease: LISTEN is
// session state, and a pooled connection would carry it to other callers),
// driven on the executor it was given (the async_client's first loop for the
// client constructor), through a strand, so it never blocks that loop. It
// connects as the pool does: a multi-host string host by host, each attempt
// bounded by connect_timeout on its own; with the client constructor the
// handshake (DNS, SCRAM) runs on the client's connector thread.
//
// Under connection loss: it reconnects (at once, then after failed connects
// with pool_params' connect_backoff_initial doubling to connect_backoff_max),
// LISTENs again to every subscribed channel, and only then delivers a
// notification with gap == true: notifications sent while it was away may be
// missing, and any sent after the gap was delivered will arrive, so state
// re-read on a gap misses nothing. Notifications are delivered in the order
// the server sent them. Subscribing while disconnected is done on the next
// connection, after the re-LISTEN of the channels the server accepted
// before; its handler runs once the server answered. A channel the server
// refuses is dropped (its handler gets the SQLSTATE) and never blocks the
// others. A command that waited acquire_timeout for a connection fails with
// the last connect error (errc::pool_timeout when no attempt failed yet) and
// is dropped.
//
// Memory: at most max_buffered notifications wait for async_receive; past
// that the listener stops reading its socket and the server keeps the rest
// in its notification queue (pg_notification_queue_usage()).
//
// Thread-safety: every member may be called from any thread. One
// async_receive at a time. Handlers run on their associated executor, else
// on the listener's strand; never inside the initiating function.
#pragma once

#include <pgpipe/async_client.hpp>
#include <pgpipe/detail/async_glue.hpp>
#include <pgpipe/logger.hpp>
#include <pgpipe/notification.hpp>
#include <pgpipe/pool_params.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <system_error>
#include <variant>

namespace pgpipe {

namespace detail {
class listener_impl;
}

/// LISTEN/NOTIFY on a connection of its own (see the file comment). Move-only.
class async_listener {
 public:
  /// The executor type of get_executor().
  using executor_type = boost::asio::any_io_executor;
  /// The most notifications held for async_receive before reading pauses.
  static constexpr std::size_t max_buffered = 65536;

  /// Connects in the background on `ex` (the handshake too). Uses
  /// params.conninfo, connect_timeout (per host), connect_backoff_initial/max
  /// and acquire_timeout (the wait of a command for a connection); validates params
  /// (pgpipe::error with errc::bad_params). `logger` gets connection losses,
  /// failed connects and server notices.
  async_listener(executor_type ex, pool_params params, logger_fn logger = {});
  /// The same on `client`'s first event loop, the handshake on the client's
  /// connector thread (the client must outlive it).
  async_listener(async_client& client, pool_params params, logger_fn logger = {});
  /// close().
  ~async_listener();
  /// Moves the listener; a move-assignment first closes the one this held.
  ///@{
  async_listener(async_listener&&) noexcept = default;
  async_listener& operator=(async_listener&& other) noexcept;
  ///@}
  async_listener(const async_listener&) = delete;
  async_listener& operator=(const async_listener&) = delete;

  /// LISTEN `channel` (any name: it is quoted as an identifier, so case and
  /// Unicode are kept as given). token: void(std::error_code), once the
  /// server acknowledged. Errors: the server's SQLSTATE (the channel is then
  /// not subscribed); errc::closed; the connect error (or errc::pool_timeout)
  /// when no connection was ready within acquire_timeout (not subscribed).
  /// Subscribing twice is harmless. Not cancellable: use close().
  template <class CompletionToken>
  auto async_subscribe(std::string channel, CompletionToken&& token) {
    return initiate_command(std::move(channel), true, std::forward<CompletionToken>(token));
  }
  /// UNLISTEN `channel`; the same contract. Notifications of that channel
  /// already buffered are still delivered.
  template <class CompletionToken>
  auto async_unsubscribe(std::string channel, CompletionToken&& token) {
    return initiate_command(std::move(channel), false, std::forward<CompletionToken>(token));
  }

  /// The next notification (or gap): token for void(std::error_code,
  /// notification). Errors: errc::closed after close(); errc::invalid_argument
  /// when another async_receive is pending; errc::cancelled.
  /// Cancellation (per-operation slot, e.g. asio::bind_cancellation_slot, or
  /// a race with a timer through asio::experimental::awaitable_operators):
  /// terminal, partial and total alike, the receive completes at once with
  /// errc::cancelled. A waiting receive has taken nothing from the buffer, so
  /// nothing is lost: the next async_receive gets the next notification. A
  /// signal emitted after the receive completed does nothing. Emit it where
  /// the handler runs (Asio's rule for slots).
  template <class CompletionToken>
  auto async_receive(CompletionToken&& token) {
    return detail::initiate_op<notification>(
        [](auto handler, std::shared_ptr<detail::listener_impl> impl) {
          using H = decltype(handler);
          auto slot = boost::asio::get_associated_cancellation_slot(handler);
          submit_receive(impl, std::make_unique<detail::completion_impl<notification, H>>(std::move(handler)), slot);
        },
        std::forward<CompletionToken>(token), impl_);
  }

  /// Closes the connection; pending operations fail with errc::closed.
  /// Idempotent; returns at once.
  void close();

  /// The executor given at construction (the listener runs on a strand of it).
  executor_type get_executor() const noexcept { return ex_; }

 private:
  template <class CompletionToken>
  auto initiate_command(std::string channel, bool listen, CompletionToken&& token) {
    return detail::initiate_op<std::monostate>(
        [](auto handler, std::shared_ptr<detail::listener_impl> impl, std::string ch, bool on) {
          using H = decltype(handler);
          submit_command(impl, std::move(ch), on,
                         std::make_unique<detail::completion_impl<std::monostate, H>>(std::move(handler)));
        },
        std::forward<CompletionToken>(token), impl_, std::move(channel), listen);
  }
  static void submit_command(const std::shared_ptr<detail::listener_impl>& impl, std::string channel, bool listen,
                             std::unique_ptr<detail::completion<std::monostate>> done);
  static void submit_receive(const std::shared_ptr<detail::listener_impl>& impl,
                             std::unique_ptr<detail::completion<notification>> done,
                             boost::asio::cancellation_slot slot);

  executor_type ex_;
  std::shared_ptr<detail::listener_impl> impl_;
};

/// The name before the naming rule (docs/api-guide.md, "Names"): use async_listener. Kept for one release.
using listener [[deprecated("renamed pgpipe::async_listener (docs/api-guide.md, Names)")]] = async_listener;

}  // namespace pgpipe
