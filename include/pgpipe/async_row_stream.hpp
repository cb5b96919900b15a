// pgpipe::async_row_stream: a large result of the async driver read in chunks with
// bounded memory, started by lease::stream() (<pgpipe/async_lease.hpp>).
#pragma once

#include <pgpipe/detail/async_glue.hpp>
#include <pgpipe/error.hpp>
#include <pgpipe/result.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>

#include <memory>
#include <utility>

namespace pgpipe {

namespace detail {
struct stream_state;
}  // namespace detail

/// A large result read in chunks with bounded memory (single-row mode), from
/// lease::stream(). Move-only. While the caller does not ask for more, the
/// connection stops reading the socket, so the server blocks instead of the
/// client buffering the whole result. Destroying the stream (or cancel())
/// stops early: buffered rows are dropped, the query is cancelled on the
/// server (PQcancel: a lease is exclusive) and the rest of its rows discarded.
class async_row_stream {
 public:
  async_row_stream() noexcept = default;
  /// An empty stream carrying why async_client::async_stream failed (see diag()).
  explicit async_row_stream(diagnostics failure) noexcept : failure_(std::move(failure)) {}
  /// Moves the stream; a move-assignment first stops the stream this one held.
  ///@{
  async_row_stream(async_row_stream&&) noexcept = default;
  async_row_stream& operator=(async_row_stream&& other) noexcept;
  ///@}
  async_row_stream(const async_row_stream&) = delete;
  async_row_stream& operator=(const async_row_stream&) = delete;
  ~async_row_stream();

  /// False for a default-constructed or moved-from stream.
  bool valid() const noexcept { return st_ != nullptr; }

  /// Why async_client::async_stream failed (the acquire's connect error with
  /// the server's text and SQLSTATE, or pgpipe's message); empty otherwise.
  [[nodiscard]] const diagnostics& diag() const noexcept { return failure_; }

  /// The next chunk: token for void(std::error_code, pgpipe::result). A chunk
  /// holds one or more rows. The end of the stream is an empty result
  /// (r.empty(); its command_tag() says e.g. "SELECT 1000" when known), and
  /// asking again keeps returning it. An SQL error (possibly after some rows)
  /// is reported once as its SQLSTATE, then the stream is at its end.
  /// One async_next at a time (a second concurrent one fails with
  /// errc::invalid_argument). Errors: SQLSTATE codes, errc::connection_lost,
  /// errc::cancelled (after cancel()), errc::closed (empty stream).
  /// Executor: the handler's, else the lease's loop. Not cancellable per
  /// operation: use cancel().
  template <class CompletionToken>
  auto async_next(CompletionToken&& token) {
    return detail::initiate_op<result>(
        [](auto handler, std::shared_ptr<detail::stream_state> st) {
          using H = decltype(handler);
          submit_next(st, std::make_unique<detail::completion_impl<result, H>>(std::move(handler)));
        },
        std::forward<CompletionToken>(token), st_);
  }

  /// The executor of the loop the stream's connection runs on (where
  /// async_next completes for a handler with no executor of its own); the
  /// system executor for an empty stream.
  boost::asio::any_io_executor get_executor() const noexcept;

  /// Stops the stream (see the class comment). Idempotent; thread-safe with
  /// respect to the loop, but not to a concurrent move of this object.
  void cancel() noexcept;

 private:
  friend class async_lease;
  friend class async_client;  // async_stream: the stream holds its own lease
  explicit async_row_stream(std::shared_ptr<detail::stream_state> st) noexcept : st_(std::move(st)) {}
  static void submit_next(const std::shared_ptr<detail::stream_state>& st,
                          std::unique_ptr<detail::completion<result>> done);
  std::shared_ptr<detail::stream_state> st_;
  // async_client::async_stream's lease (type-erased: this header comes
  // before the lease's), released after the stream is cancelled or read.
  std::shared_ptr<void> owner_;
  diagnostics failure_;
};

/// The name before the naming rule (docs/api-guide.md, "Names"): use async_row_stream. Kept for one release.
using row_stream [[deprecated("renamed pgpipe::async_row_stream (docs/api-guide.md, Names)")]] = async_row_stream;

}  // namespace pgpipe
