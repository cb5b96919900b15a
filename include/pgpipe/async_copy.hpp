// COPY on an async lease, streamed both ways with bounded memory, started by
// lease::copy_in() / lease::copy_out() (<pgpipe/async_lease.hpp>). The names
// mirror the blocking driver's (<pgpipe/blocking_copy.hpp>).
//
//   auto in = lease.copy_in("copy items(id, name) from stdin");
//   co_await in.async_write(chunk, use_awaitable);  // rows may straddle chunks; throws pgpipe::error
//   pgpipe::result r = co_await in.async_finish(use_awaitable);  // r.affected_rows(); or async_abort(reason)
//
//   auto out = lease.copy_out("copy items to stdout");
//   for (;;) {
//     auto chunk = co_await out.async_next(use_awaitable);  // whole rows, up to ~64 KiB
//     if (chunk.empty()) break;                             // the end: out.rows() is known
//   }
// (asio::as_tuple(use_awaitable) gives (ec, value) instead of throwing.)
//
// How it runs: libpq 15 allows no COPY in pipeline mode, so a COPY waits
// until every query started before it on the lease has been answered, then
// the connection leaves pipeline mode, runs the COPY alone and enters
// pipeline mode again. Queries started on the lease while a COPY is open
// wait behind it (they are not refused): do not wait for such a query before
// finishing or aborting the COPY, or the two wait for each other (until the
// query's timeout). The lease serves queries again once the COPY is over,
// whatever its outcome, unless the connection was lost.
//
// Guarantees: a COPY is one statement, so unless the caller opened a
// transaction on the lease, a COPY that fails, is aborted, is destroyed
// unfinished, times out or loses its connection leaves nothing in the table.
// A loss during async_finish means the rows may or may not have been
// committed (errc::connection_lost, as for any written query).
#pragma once

#include <pgpipe/detail/async_glue.hpp>
#include <pgpipe/error.hpp>
#include <pgpipe/result.hpp>

#include <boost/asio/async_result.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

namespace pgpipe {

class async_lease;

namespace detail {
struct copy_state;
}  // namespace detail

/// COPY ... FROM STDIN on a lease (from lease::copy_in). Move-only. Use one
/// object from one thread at a time, one operation at a time (a second
/// concurrent one fails with errc::invalid_argument). Handlers run on their
/// own executor, else on the lease's loop. Operations are not cancellable
/// one by one: use async_abort, or destroy the object. Destroying it before
/// async_finish or async_abort completed aborts the COPY (nothing stays).
class async_copy_in {
 public:
  async_copy_in() noexcept = default;
  /// Moves the COPY; a move-assignment first aborts the COPY this one held.
  ///@{
  async_copy_in(async_copy_in&&) noexcept = default;
  async_copy_in& operator=(async_copy_in&& other) noexcept;
  ///@}
  async_copy_in(const async_copy_in&) = delete;
  async_copy_in& operator=(const async_copy_in&) = delete;
  ~async_copy_in();

  /// False for a default-constructed or moved-from object.
  bool valid() const noexcept { return st_ != nullptr; }

  /// Sends a chunk of COPY data (text, CSV or binary as the statement says):
  /// token for void(std::error_code). Completes once the connection has
  /// written the chunk to the socket (a chunk given before the server opened
  /// the COPY waits for it), so a producer that waits for each write holds
  /// at most one chunk in the client, whatever its speed. The chunk is
  /// copied; it may end mid-row. The server checks the data as it goes but
  /// reports bad data at async_finish. Errors: the COPY's own error when it
  /// already ended (a SQLSTATE such as 42P01 when it could not start,
  /// errc::connection_lost, errc::query_timeout), errc::invalid_argument after
  /// async_finish/async_abort or with another operation pending,
  /// errc::closed on an empty object.
  template <class CompletionToken>
  auto async_write(std::string_view chunk, CompletionToken&& token) {
    return detail::initiate_op<std::monostate>(
        [](auto handler, std::shared_ptr<detail::copy_state> st, std::string data) {
          using H = decltype(handler);
          submit_write(st, std::move(data),
                       std::make_unique<detail::completion_impl<std::monostate, H>>(std::move(handler)));
        },
        std::forward<CompletionToken>(token), st_, std::string(chunk));
  }

  /// Ends the data and waits for the server's verdict: token for
  /// void(std::error_code, pgpipe::result). On success the result's
  /// affected_rows() is the number of rows copied (command tag "COPY n").
  /// On failure nothing of the COPY stays: the server's SQLSTATE (22P02 for
  /// a malformed value, 23505...) with its diagnostics in the result, or
  /// errc::invalid_argument when the statement was not one COPY ... FROM STDIN
  /// (a second statement in the text is refused before anything is sent),
  /// errc::query_timeout, errc::connection_lost (for a loss during finish: the
  /// rows may or may not have been committed). Asking again gives the same.
  template <class CompletionToken>
  auto async_finish(CompletionToken&& token) {
    return detail::initiate_op<result>(
        [](auto handler, std::shared_ptr<detail::copy_state> st) {
          using H = decltype(handler);
          submit_finish(st, std::make_unique<detail::completion_impl<result, H>>(std::move(handler)));
        },
        std::forward<CompletionToken>(token), st_);
  }

  /// Ends the COPY with a failure `reason` (the server answers 57014 "COPY
  /// from stdin failed: <reason>"): token for void(std::error_code), which is
  /// success once the server has confirmed the COPY is over and nothing of it
  /// stayed, and the lease is ready for its next query. Also success when the
  /// COPY had already failed. errc::connection_lost when the connection
  /// broke (nothing stays then either; the lease's connection is replaced).
  template <class CompletionToken>
  auto async_abort(std::string_view reason, CompletionToken&& token) {
    return detail::initiate_op<std::monostate>(
        [](auto handler, std::shared_ptr<detail::copy_state> st, std::string why) {
          using H = decltype(handler);
          submit_abort(st, std::move(why),
                       std::make_unique<detail::completion_impl<std::monostate, H>>(std::move(handler)));
        },
        std::forward<CompletionToken>(token), st_, std::string(reason));
  }

 private:
  friend class async_lease;
  explicit async_copy_in(std::shared_ptr<detail::copy_state> st) noexcept : st_(std::move(st)) {}
  static void submit_write(const std::shared_ptr<detail::copy_state>& st, std::string data,
                           std::unique_ptr<detail::completion<std::monostate>> done);
  static void submit_finish(const std::shared_ptr<detail::copy_state>& st,
                            std::unique_ptr<detail::completion<result>> done);
  static void submit_abort(const std::shared_ptr<detail::copy_state>& st, std::string reason,
                           std::unique_ptr<detail::completion<std::monostate>> done);
  std::shared_ptr<detail::copy_state> st_;
};

/// COPY ... TO STDOUT on a lease (from lease::copy_out), read chunk by chunk
/// like async_row_stream. Move-only; one async_next at a time. While the caller
/// does not ask for more, the connection stops reading the socket (the server
/// then blocks): the client holds at most about one chunk. Destroying the
/// object (or cancel()) stops early: the COPY is cancelled on the server
/// (PQcancel: a lease is exclusive), the rest is discarded, and the lease
/// serves its next query afterwards.
class async_copy_out {
 public:
  async_copy_out() noexcept = default;
  /// Moves the COPY; a move-assignment first stops the COPY this one held.
  ///@{
  async_copy_out(async_copy_out&&) noexcept = default;
  async_copy_out& operator=(async_copy_out&& other) noexcept;
  ///@}
  async_copy_out(const async_copy_out&) = delete;
  async_copy_out& operator=(const async_copy_out&) = delete;
  ~async_copy_out();

  /// False for a default-constructed or moved-from object.
  bool valid() const noexcept { return st_ != nullptr; }

  /// The next chunk: token for void(std::error_code, std::string). A chunk
  /// holds one or more whole COPY rows (in text and CSV formats; binary
  /// format: whole CopyData messages), about 64 KiB at most. The end is an
  /// empty chunk, after which rows() is the server's count; asking again
  /// keeps returning it. Errors (reported once, then the end): the server's
  /// SQLSTATE (42P01...), errc::invalid_argument when the statement was not
  /// a COPY ... TO STDOUT, errc::cancelled after cancel(), errc::query_timeout,
  /// errc::connection_lost, errc::closed on an empty object.
  template <class CompletionToken>
  auto async_next(CompletionToken&& token) {
    return detail::initiate_op<std::string>(
        [](auto handler, std::shared_ptr<detail::copy_state> st) {
          using H = decltype(handler);
          submit_next(st, std::make_unique<detail::completion_impl<std::string, H>>(std::move(handler)));
        },
        std::forward<CompletionToken>(token), st_);
  }

  /// Rows the server reported, once async_next has delivered the end (0 before).
  std::uint64_t rows() const noexcept;

  /// Stops the COPY (see the class comment). Idempotent; thread-safe with
  /// respect to the loop, but not to a concurrent move of this object.
  void cancel() noexcept;

 private:
  friend class async_lease;
  explicit async_copy_out(std::shared_ptr<detail::copy_state> st) noexcept : st_(std::move(st)) {}
  static void submit_next(const std::shared_ptr<detail::copy_state>& st,
                          std::unique_ptr<detail::completion<std::string>> done);
  std::shared_ptr<detail::copy_state> st_;
};

}  // namespace pgpipe
