// pgpipe::async_lease: an exclusive connection of the async driver, taken with
// async_client::async_acquire (<pgpipe/async_client.hpp>). A lease is like a
// connection: use one lease from one thread (or strand) at a time; its
// queries run in the order started.
#pragma once

#include <pgpipe/async_copy.hpp>
#include <pgpipe/detail/async_glue.hpp>
#include <pgpipe/error.hpp>
#include <pgpipe/result.hpp>
#include <pgpipe/async_row_stream.hpp>
#include <pgpipe/async_typed_stream.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace pgpipe {

namespace detail {
class client_impl;
class lease_impl;
struct lease_access;
}  // namespace detail

/// An exclusive connection taken from the pool, for transactions and session
/// state. Move-only. Destroying it (or calling release()) returns the
/// connection: an open or failed transaction is rolled back first, a broken
/// connection is replaced. Queries started on a lease run in order on its
/// connection, still pipelined (several may be in flight).
class async_lease {
 public:
  /// The executor type of get_executor().
  using executor_type = boost::asio::any_io_executor;

  async_lease() noexcept = default;
  /// An empty lease carrying why async_acquire failed (see diag()).
  explicit async_lease(diagnostics failure) noexcept : failure_(std::move(failure)) {}
  /// Moves the lease; a move-assignment first releases the connection this one held.
  ///@{
  async_lease(async_lease&&) noexcept = default;
  async_lease& operator=(async_lease&& other) noexcept;
  ///@}
  async_lease(const async_lease&) = delete;
  async_lease& operator=(const async_lease&) = delete;
  ~async_lease();

  /// False for a default-constructed, moved-from or released lease.
  ///@{
  bool valid() const noexcept { return impl_ != nullptr; }
  explicit operator bool() const noexcept { return valid(); }
  ///@}

  /// Why async_acquire failed: the connect failure's server text and
  /// SQLSTATE (28P01, 3D000...) or pgpipe's message; empty for a lease
  /// that was granted.
  [[nodiscard]] const diagnostics& diag() const noexcept { return failure_; }

  /// Same contract as async_client::async_query, on this lease's connection,
  /// with one difference for cancellation (terminal or partial) of a written
  /// query:
  /// - If it is the only query written on the connection, it is cancelled on
  ///   the server with PQcancel (in a separate thread, never on the event
  ///   loop). Its handler gets errc::cancelled when the server reports the
  ///   cancel (SQLSTATE 57014), or at the latest after max(connect_timeout,
  ///   1 s) (its result is then discarded). A result that was already here
  ///   when the cancel was requested, or that the server finished before the
  ///   signal reached it, is delivered as is (success or error): the query
  ///   did run, and the caller needs to know.
  /// - If other queries are written with it (pipelined), a signal could hit
  ///   one of them instead, so it is detached as on the shared pool: the
  ///   handler gets errc::cancelled at once, the query runs to its end on the
  ///   server and its result is discarded.
  /// A cancel never fails a later query: while a PQcancel may still land,
  /// later queries on the lease (and the rollback when it is released) are
  /// held back, unwritten, until PQcancel has returned and the target's
  /// result has been read; a signal arriving after that finds the backend
  /// idle, which ignores it. If PQcancel does not return within the bound,
  /// the connection is closed (held-back queries fail with errc::not_sent).
  /// Queries on an empty or released lease fail with errc::closed.
  /// A COMMIT (END, COMMIT AND CHAIN, PREPARE TRANSACTION) of a transaction
  /// that had failed, which the server answers with the tag ROLLBACK and no
  /// error, fails with SQLSTATE 25P02 saying the transaction was rolled back
  /// (the result, tag ROLLBACK, comes with it); after AND CHAIN the new
  /// transaction the server opened is still the caller's to end.
  template <class... ArgsAndToken>
  auto async_query(std::string_view sql, ArgsAndToken&&... args_and_token) {
    return detail::initiate_query_args(target(), query_options{}, detail::rows_expected::any, sql,
                                       std::forward<ArgsAndToken>(args_and_token)...);
  }
  /// The same with per-call options (see query_options).
  template <class... ArgsAndToken>
  auto async_query(const query_options& opts, std::string_view sql, ArgsAndToken&&... args_and_token) {
    return detail::initiate_query_args(target(), opts, detail::rows_expected::any, sql,
                                       std::forward<ArgsAndToken>(args_and_token)...);
  }

  /// async_query for a statement that must return exactly one row (a lookup
  /// by key): a successful query with another row count fails with
  /// errc::out_of_range, diag().client_message naming the count. Read the
  /// row with result::one(); with use_awaitable:
  ///   auto r = co_await c.async_query_one("select name from users where id = $1", id, asio::use_awaitable);
  ///   std::string name = r.one().get<std::string>(0);
  template <class... ArgsAndToken>
  auto async_query_one(std::string_view sql, ArgsAndToken&&... args_and_token) {
    return detail::initiate_query_args(target(), query_options{}, detail::rows_expected::one, sql,
                                       std::forward<ArgsAndToken>(args_and_token)...);
  }
  /// The same for a statement that returns at most one row (none is fine):
  /// read it with result::opt().
  template <class... ArgsAndToken>
  auto async_query_opt(std::string_view sql, ArgsAndToken&&... args_and_token) {
    return detail::initiate_query_args(target(), query_options{}, detail::rows_expected::at_most_one, sql,
                                       std::forward<ArgsAndToken>(args_and_token)...);
  }

  /// Runs `sql`, a script of statements separated by semicolons (a
  /// migration, a schema), as one simple query: no parameters, no prepared
  /// statement. Completes with void(std::error_code, result): the last
  /// statement's result, or the error of the first statement that failed,
  /// with its diagnostics (with use_awaitable it throws pgpipe::error).
  /// Statements without a BEGIN/COMMIT of their own run as one implicit
  /// transaction, so a failure leaves none of them; after an explicit
  /// COMMIT in the script, what it committed stays; a transaction the
  /// script began and failed in is rolled back (the server runs nothing
  /// after the error, COMMIT included), while one begun on the lease before
  /// the script stays open and aborted. A COPY ... FROM STDIN in
  /// the script fails it (57014, naming async_lease::copy_in); the rows of
  /// a COPY ... TO STDOUT are dropped. The script runs after the queries
  /// started before it on this lease, alone (outside pipeline mode), and
  /// those started after it wait for it. `opts.timeout` (default
  /// pool_params::query_timeout) and the token's cancellation cancel it on
  /// the server. errc::invalid_argument, nothing sent: a text with no
  /// statement or with a NUL byte; errc::closed: an empty or released
  /// lease. Only on a lease: a script may change the session, so a
  /// statement that does (SET, LISTEN...) retires the connection when the
  /// lease ends, as a query would.
  template <class CompletionToken>
  auto async_execute_script(std::string_view sql, CompletionToken&& token) {
    return async_execute_script(query_options{}, sql, std::forward<CompletionToken>(token));
  }
  /// The same with per-call options (opts.timeout; opts.read_only does not apply).
  template <class CompletionToken>
  auto async_execute_script(const query_options& opts, std::string_view sql, CompletionToken&& token) {
    return detail::initiate_op<result>(
        [](auto handler, std::shared_ptr<detail::lease_impl> impl, std::string s,
           std::optional<std::chrono::milliseconds> timeout) {
          using H = decltype(handler);
          auto slot = boost::asio::get_associated_cancellation_slot(handler);
          submit_script(impl, std::move(s), timeout,
                        std::make_unique<detail::completion_impl<result, H>>(std::move(handler)), slot);
        },
        std::forward<CompletionToken>(token), impl_, std::string(sql), opts.timeout);
  }

  /// Starts `sql` in single-row mode and returns an async_row_stream to read it
  /// chunk by chunk (see async_row_stream). Never blocks; errors (including a NUL
  /// byte in a parameter) arrive through the stream's first async_next. The
  /// statement is not prepared (unnamed) and has no query timeout: stop it
  /// with async_row_stream::cancel(). Queries started after it on this lease run
  /// once it has been read to the end or cancelled.
  template <class... Args>
  [[nodiscard]] async_row_stream stream(std::string_view sql, const Args&... args) {
    return start_stream(detail::query_spec{std::string(sql), detail::encode_params(args...), std::nullopt});
  }
  /// The same with opts.stream_chunk_rows (rows per libpq result; see
  /// query_options). opts.timeout and opts.read_only do not apply.
  template <class... Args>
  [[nodiscard]] async_row_stream stream(const query_options& opts, std::string_view sql, const Args&... args) {
    detail::query_spec spec{std::string(sql), detail::encode_params(args...), std::nullopt};
    spec.stream_chunk_rows = opts.stream_chunk_rows;
    spec.binary_results = opts.results == result_format::binary;
    return start_stream(std::move(spec));
  }

  /// stream, with the rows read into T as they arrive (see
  /// <pgpipe/async_typed_stream.hpp>): binary values when every field type
  /// of T reads binary, else text (opts.results overrides it);
  /// opts.stream_chunk_rows as for stream(). Never blocks; every error
  /// (the statement's, the shape check's, a value's) arrives through the
  /// stream's async_next.
  template <row_type T, class... Args>
  [[nodiscard]] async_typed_stream<T> stream_as(std::string_view sql, const Args&... args) {
    return stream_as<T>(query_options{}, sql, args...);
  }
  /// As above, with per-call options.
  template <row_type T, class... Args>
  [[nodiscard]] async_typed_stream<T> stream_as(const query_options& opts, std::string_view sql, const Args&... args) {
    detail::query_spec spec{std::string(sql), detail::encode_params(args...), std::nullopt};
    spec.stream_chunk_rows = opts.stream_chunk_rows;
    spec.binary_results = detail::wants_binary<T>(opts.results);
    return async_typed_stream<T>(start_stream(std::move(spec)));
  }

  /// Starts `copy_sql` (a COPY ... FROM STDIN) and returns the handle that
  /// feeds it (see async_copy_in and <pgpipe/async_copy.hpp>). Never blocks;
  /// errors arrive through the handle's operations: errc::invalid_argument
  /// when `copy_sql` is not a COPY (nothing is sent) or not FROM STDIN,
  /// the server's SQLSTATE (42P01...), errc::closed on an empty or released
  /// lease. The COPY runs after the queries started before it on this lease
  /// and before those started after it, which wait until it is over.
  /// `opts.timeout` bounds the whole COPY (errc::query_timeout, nothing
  /// stays); unlike a query, a COPY has no timeout by default: the caller
  /// paces it. opts.read_only does not apply.
  [[nodiscard]] async_copy_in copy_in(std::string_view copy_sql, const query_options& opts = {});
  /// Starts `copy_sql` (a COPY ... TO STDOUT) and returns the handle that
  /// reads it (see async_copy_out). Errors and order as copy_in.
  [[nodiscard]] async_copy_out copy_out(std::string_view copy_sql, const query_options& opts = {});

  /// Returns the connection to the pool now (what the destructor does):
  /// queries still in flight complete normally, then ROLLBACK is sent if a
  /// transaction is open, then the connection is released.
  void release() noexcept;

  /// The executor of the loop that owns the connection (invalid lease: empty).
  executor_type get_executor() const noexcept;

 private:
  friend class detail::client_impl;
  friend class async_client;  // async_stream starts a stream on a lease of its own
  friend struct detail::lease_access;  // the transaction helpers' pipelined batch
  explicit async_lease(std::shared_ptr<detail::lease_impl> impl) noexcept : impl_(std::move(impl)) {}
  std::shared_ptr<detail::query_target> target() const noexcept;
  async_row_stream start_stream(detail::query_spec spec);
  static void submit_script(const std::shared_ptr<detail::lease_impl>& impl, std::string sql,
                            std::optional<std::chrono::milliseconds> timeout,
                            std::unique_ptr<detail::completion<result>> done, boost::asio::cancellation_slot slot);
  std::shared_ptr<detail::lease_impl> impl_;
  diagnostics failure_;
};

/// The name before the naming rule (docs/api-guide.md, "Names"): use async_lease. Kept for one release.
using lease [[deprecated("renamed pgpipe::async_lease (docs/api-guide.md, Names)")]] = async_lease;

}  // namespace pgpipe
