// pgpipe::async_client: the pipelined asynchronous driver.
//
// A few event loops (threads each running a boost::asio::io_context, or the
// caller's own io_context) multiplex many in-flight queries over a small pool
// of libpq connections in pipeline mode. Threads do not grow with the pool or
// with concurrency: one connection carries up to pool_params::pipeline_depth
// queries at once, each with its own Sync, so one caller's error never
// touches another caller's query.
//
// Every operation takes any Asio completion token (a callback,
// asio::use_awaitable, asio::use_future, asio::deferred...):
//   client.async_query("select $1::int8", 42, [](std::error_code ec, pgpipe::result r) {...});
//   pgpipe::result r = co_await client.async_query("select 1", asio::use_awaitable);
//       // a failure throws pgpipe::error (code and diagnostics): use_awaitable
//       // and use_future get pgpipe::with_diagnostics applied by every operation
//   auto [ec, r] = co_await client.async_query("select 1", asio::as_tuple(asio::use_awaitable));
//       // the explicit form: the error code and the result (its diag())
//
// Executors: a handler runs on its associated executor when it has one (a
// coroutine's executor, a strand bound with bind_executor); otherwise on the
// event loop of the connection that ran the query (or, for an operation that
// fails before reaching a connection, any of the client's loops). Handlers are
// never invoked from inside the initiating function.
//
// Loop affinity: a query or acquire started on one of the client's own loop
// threads (a coroutine spawned on get_executor(i), a callback starting the
// next query) goes to a connection on that same loop when one can take it at
// once: a shared query to that loop's least-loaded connection while it
// carries at most twice the least-loaded connection's load plus one, a lease
// to an idle connection of that loop. The query then crosses no thread on its
// way in or out (its completion resumes the caller by dispatch, in the same
// turn). Otherwise, and from any other thread, it takes the least-loaded
// connection; it never waits for its own loop's. Spread callers over the
// loops (get_executor(i)) so that every connection gets work.
//
// Thread-safety: every member function of async_client may be called from any
// thread at the same time. A lease is like a connection: use one lease from
// one thread (or strand) at a time; its queries run in the order started.
//
// The client's companions have their own headers, included here so that
// <pgpipe/async_client.hpp> alone still gives the whole driver:
// <pgpipe/async_lease.hpp> (pgpipe::async_lease) and <pgpipe/async_row_stream.hpp>.
#pragma once

#include <pgpipe/async_lease.hpp>
#include <pgpipe/detail/async_glue.hpp>
#include <pgpipe/detail/typed_query_glue.hpp>
#include <pgpipe/error.hpp>
#include <pgpipe/logger.hpp>
#include <pgpipe/pool_params.hpp>
#include <pgpipe/result.hpp>
#include <pgpipe/stats.hpp>
#include <pgpipe/async_transaction_lease.hpp>
#include <pgpipe/transaction_options.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>
#include <variant>

namespace pgpipe {

// log_level and logger_fn: <pgpipe/logger.hpp>.

/// How an async_client runs its event loops (its pool is set by pool_params).
/// Every member has a default member initializer (see pool_params).
struct async_client_options {
  /// Event loops (threads) the client owns; 0 means 1. Ignored by the
  /// constructor that takes the caller's io_context.
  std::size_t loops = std::max(1u, std::thread::hardware_concurrency());
  /// See logger_fn. Empty: the library logs nothing (it never prints).
  logger_fn logger{};
  /// Every loop runs a probe this often to measure its lag (stats()).
  std::chrono::milliseconds loop_probe_interval{100};
  /// A loop whose probe has not run for this long is reported to the logger
  /// as blocked (a handler doing blocking work), once per episode, by a
  /// watchdog thread, like Vert.x's blocked-thread checker. 0 disables it.
  std::chrono::milliseconds blocked_loop_threshold{1000};
};

namespace detail {
class client_impl;
}  // namespace detail

/// The async driver: a pool of libpq connections in pipeline mode on Asio
/// event loops; queries from any thread are pipelined over the connections.
/// Thread-safe: every member may be called from any thread, including from
/// inside a completion handler. Move-only.
class async_client {
 public:
  /// The executor type of get_executor().
  using executor_type = boost::asio::any_io_executor;

  /// Owns `options.loops` event-loop threads (default: one per hardware
  /// thread), with the logger and loop watchdog given in `options`:
  ///   pgpipe::async_client client(params, {.loops = 2});
  /// Validates params (throws pgpipe::error(errc::bad_params)) and the libpq
  /// loaded at run time (errc::unsupported_libpq when older than 14); opens
  /// min_size connections in the background; never blocks on the network.
  explicit async_client(pool_params params, async_client_options options = {});
  /// Owns `loops` event-loop threads. Deprecated: a bare number at the call
  /// site does not say what it counts; pass async_client_options.
  [[deprecated("pass async_client_options, e.g. async_client(params, {.loops = 4})")]]
  async_client(pool_params params, std::size_t loops);
  /// Runs on the caller's io_context (which the caller runs, on one or more
  /// threads); the client owns no loop thread (only the watchdog, if enabled).
  async_client(pool_params params, boost::asio::io_context& io, async_client_options options = {});

  /// close(), then waits (up to 2 s) for work in flight to finish, fails what
  /// is left with errc::closed, and joins the loops. Release leases and
  /// row_streams first: a lease that outlives its client only answers
  /// errc::closed.
  /// When run on one of the client's own loop threads (from a handler), the
  /// shutdown finishes on a separate thread after that handler returns.
  ~async_client();
  /// Takes `other`'s pool; `other` is empty afterwards.
  async_client(async_client&&) noexcept = default;
  /// Shuts down this client as the destructor does, then takes `other`'s.
  async_client& operator=(async_client&& other) noexcept;
  async_client(const async_client&) = delete;
  async_client& operator=(const async_client&) = delete;

  /// Runs `sql` with the given parameters on the least-loaded connection,
  /// pipelined with other callers' queries. Each parameter is sent in binary
  /// when its param_traits has a binary form, in text otherwise.
  ///   sql: one statement; $1, $2... refer to the parameters.
  ///   args: integers, floating point, bool, std::string, std::string_view,
  ///         const char* (nullptr is NULL), std::optional<T> (nullopt is NULL),
  ///         std::nullopt, or any type with a pgpipe::param_traits.
  ///   token: completion token for void(std::error_code, pgpipe::result).
  /// Prepared statements: with pool_params::prepared_statements the statement
  /// is prepared on first use per connection (Parse pipelined with the first
  /// Execute, no extra round trip) and cached by SQL text; otherwise the
  /// unnamed statement is used.
  /// Errors (the result's diag() has the details):
  ///   SQLSTATE codes (sqlstate_category) for errors the server reported;
  ///   errc::invalid_argument (a NUL byte in `sql`, which libpq would cut
  ///   there; a text parameter with a NUL byte, a parameter
  ///   over 1 GiB - 1 bytes or parameters over 1 GiB in all, the server's
  ///   limits; nothing sent);
  ///   errc::queue_full (max_queued already waiting), errc::pool_timeout (no
  ///   capacity within acquire_timeout), or the connect error when no
  ///   connection could be opened; errc::query_timeout (query_timeout or
  ///   query_options::timeout passed: the query may have executed);
  ///   errc::not_sent (connection lost before the query was written: safe to
  ///   retry), errc::connection_lost (lost after: it may have executed);
  ///   errc::cancelled; errc::closed (client closing or closed);
  ///   errc::transaction_needs_lease / errc::session_state_needs_lease (see
  ///   "Sharing rules"; nothing sent).
  /// Sharing rules: the connection is shared with other callers' pipelined
  ///   queries, so statements that would open a transaction or change the
  ///   session for all of them are refused before anything is sent (leases
  ///   are not checked):
  ///   - errc::transaction_needs_lease: BEGIN, START TRANSACTION. Use a lease
  ///     (async_acquire) for transactions.
  ///   - errc::session_state_needs_lease: SET (but SET LOCAL, SET TRANSACTION
  ///     and SET CONSTRAINTS are fine), SET SESSION ..., SET ROLE, SET SESSION
  ///     AUTHORIZATION, RESET, LISTEN, UNLISTEN, PREPARE (not PREPARE
  ///     TRANSACTION), DEALLOCATE, DISCARD, DECLARE, LOAD, COPY, CREATE
  ///     [LOCAL|GLOBAL] TEMP/TEMPORARY ..., CREATE TABLE/VIEW/SEQUENCE
  ///     pg_temp.x, SELECT ... INTO TEMP, and calls of set_config(n, v, x)
  ///     with x not literally true or of pg_advisory_lock[_shared] /
  ///     pg_try_advisory_lock[_shared]. Use a lease, or
  ///     pool_params::on_connect for settings every query should see;
  ///     for LISTEN/UNLISTEN, async_listener or blocking_listener.
  ///   Leading whitespace and comments are skipped, keywords are
  ///   case-insensitive, and strings, dollar quotes, quoted identifiers and
  ///   comments are never looked into (`select 'begin'` runs).
  /// Cancellation (per-operation slot, e.g. asio::bind_cancellation_slot):
  ///   a query still waiting for capacity or not yet written is removed
  ///   (terminal, partial and total cancellation); a written query is detached
  ///   (terminal and partial only): the handler gets errc::cancelled at once and
  ///   the server's answer is discarded when it arrives. PQcancel is never used
  ///   on a shared connection (it could hit a neighbour's query).
  template <class... ArgsAndToken>
  auto async_query(std::string_view sql, ArgsAndToken&&... args_and_token) {
    return detail::initiate_query_args(target(), query_options{}, detail::rows_expected::any, sql,
                                       std::forward<ArgsAndToken>(args_and_token)...);
  }
  /// As above, with per-call options (a timeout overriding the pool's).
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

  /// async_query, with the rows read straight into T (a described struct, a
  /// std::tuple, an aggregate or one field type: <pgpipe/row_shape.hpp>):
  ///   std::vector<user> all = co_await c.async_query_as<user>("select * from users", asio::use_awaitable);
  ///   auto [ec, all] = co_await c.async_query_as<user>(sql, asio::as_tuple(asio::use_awaitable));
  /// token: completion token for void(std::error_code, std::vector<T>) (with
  ///   use_awaitable / use_future: std::vector<T>, or pgpipe::error thrown).
  /// The result's columns are checked against T once, before any row is
  /// read, and the rows are decoded on the connection's event loop before
  /// the handler runs (for very large results, async_stream reads row by row).
  /// The values arrive in binary when every field type of T reads binary
  /// (field_traits' binary_results), else in text; query_options::results
  /// overrides the choice (pgpipe/query_options.hpp).
  /// Errors: every error of async_query, then those of result::to_vector<T>
  /// (pgpipe/typed_rows.hpp): errc::columns_mismatch, errc::type_mismatch,
  /// errc::null_value, errc::conversion_error, errc::out_of_range; the value
  /// is then empty. The message naming the field and column, or the
  /// server's diagnostics, reach the caller in the pgpipe::error a throwing
  /// token throws; the (ec, value) form has only the code (read
  /// async_query's result with to_vector<T>() to keep its diag()).
  /// Thread-safety, cancellation and executor: as async_query.
  template <row_type T, class... ArgsAndToken>
  auto async_query_as(std::string_view sql, ArgsAndToken&&... args_and_token) {
    return detail::initiate_typed_args<T, detail::rows_expected::any>(target(), query_options{}, sql,
                                                                        std::forward<ArgsAndToken>(args_and_token)...);
  }
  /// As above, with per-call options.
  template <row_type T, class... ArgsAndToken>
  auto async_query_as(const query_options& opts, std::string_view sql, ArgsAndToken&&... args_and_token) {
    return detail::initiate_typed_args<T, detail::rows_expected::any>(target(), opts, sql,
                                                                        std::forward<ArgsAndToken>(args_and_token)...);
  }
  /// async_query_as for a statement that must return exactly one row: token
  /// for void(std::error_code, T); another row count is errc::out_of_range
  /// naming it (checked after the shape: a T that does not fit the columns
  /// fails with columns_mismatch / type_mismatch even when no row came back).
  template <row_type T, class... ArgsAndToken>
  auto async_query_as_one(std::string_view sql, ArgsAndToken&&... args_and_token) {
    return detail::initiate_typed_args<T, detail::rows_expected::one>(target(), query_options{}, sql,
                                                                        std::forward<ArgsAndToken>(args_and_token)...);
  }
  /// async_query_as for a statement that returns at most one row: token for
  /// void(std::error_code, std::optional<T>), std::nullopt for none; several
  /// rows are errc::out_of_range.
  template <row_type T, class... ArgsAndToken>
  auto async_query_as_opt(std::string_view sql, ArgsAndToken&&... args_and_token) {
    return detail::initiate_typed_args<T, detail::rows_expected::at_most_one>(
        target(), query_options{}, sql, std::forward<ArgsAndToken>(args_and_token)...);
  }

  /// Takes a whole connection exclusively: token for void(std::error_code, lease).
  /// Waits up to acquire_timeout for an idle connection; while an exclusive
  /// request heads the queue, shared work cannot starve it.
  /// Errors: errc::pool_timeout, errc::queue_full, errc::closed, connect errors.
  /// Cancellation: while waiting (all types): errc::cancelled.
  /// Executor: as async_query (the lease's loop when the handler has none).
  template <class CompletionToken>
  auto async_acquire(CompletionToken&& token) {
    return detail::initiate_op<async_lease>(
        [](auto handler, std::shared_ptr<detail::client_impl> impl) {
          using H = decltype(handler);
          auto slot = boost::asio::get_associated_cancellation_slot(handler);
          submit_acquire(impl, std::make_unique<detail::completion_impl<async_lease, H>>(std::move(handler)), slot);
        },
        std::forward<CompletionToken>(token), impl_);
  }

  /// lease::stream without taking a lease by hand: acquires one, starts
  /// `sql` on it in single-row mode and hands over the async_row_stream, which
  /// holds the lease until it is destroyed (then the lease goes back to the
  /// pool, the statement cancelled if unread). Read it with async_next.
  ///   async_stream(sql, args..., token): token for
  ///   void(std::error_code, async_row_stream).
  /// Errors here are the acquire's (errc::pool_timeout, queue_full, closed,
  /// connect errors with the server's text in the stream's diag()); the
  /// statement's own errors (an SQLSTATE, a NUL byte in a parameter) come
  /// through the stream's first async_next, as with lease::stream.
  /// Cancellation: as async_acquire, until the lease is granted.
  template <class... ArgsAndToken>
  auto async_stream(std::string_view sql, ArgsAndToken&&... args_and_token) {
    static_assert(sizeof...(ArgsAndToken) >= 1, "async_stream: the last argument must be a completion token");
    return stream_split(query_options{}, sql, std::forward_as_tuple(std::forward<ArgsAndToken>(args_and_token)...),
                        std::make_index_sequence<sizeof...(ArgsAndToken) - 1>{});
  }
  /// The same with opts.stream_chunk_rows (rows per libpq result; see
  /// query_options). opts.timeout and opts.read_only do not apply.
  template <class... ArgsAndToken>
  auto async_stream(const query_options& opts, std::string_view sql, ArgsAndToken&&... args_and_token) {
    static_assert(sizeof...(ArgsAndToken) >= 1, "async_stream: the last argument must be a completion token");
    return stream_split(opts, sql, std::forward_as_tuple(std::forward<ArgsAndToken>(args_and_token)...),
                        std::make_index_sequence<sizeof...(ArgsAndToken) - 1>{});
  }

  /// async_stream, with the rows read into T as they arrive (a described
  /// struct, a std::tuple, an aggregate or one field type; see
  /// <pgpipe/async_typed_stream.hpp>): token for
  /// void(std::error_code, async_typed_stream<T>) (use_awaitable /
  /// use_future: the stream, or pgpipe::error thrown). The stream holds its
  /// lease until it is destroyed. The values arrive in binary when every
  /// field type of T reads binary, else in text; opts.results overrides the
  /// choice, opts.stream_chunk_rows as for async_stream.
  ///   auto s = co_await c.async_stream_as<user>("select * from users", asio::use_awaitable);
  ///   while (auto u = co_await s.async_next(asio::use_awaitable)) use(*u);
  /// Errors here are the acquire's, as async_stream; the statement's, the
  /// shape check's and each value's come through the stream's async_next.
  /// Cancellation: as async_acquire, until the lease is granted.
  /// Thread-safety and executor: as async_stream.
  template <row_type T, class... ArgsAndToken>
  auto async_stream_as(std::string_view sql, ArgsAndToken&&... args_and_token) {
    return async_stream_as<T>(query_options{}, sql, std::forward<ArgsAndToken>(args_and_token)...);
  }
  /// As above, with per-call options (results, stream_chunk_rows).
  template <row_type T, class... ArgsAndToken>
  auto async_stream_as(const query_options& opts, std::string_view sql, ArgsAndToken&&... args_and_token) {
    static_assert(sizeof...(ArgsAndToken) >= 1, "async_stream_as: the last argument must be a completion token");
    query_options o = opts;
    o.results = detail::wants_binary<T>(opts.results) ? result_format::binary : result_format::text;
    return typed_stream_split<T>(o, sql, std::forward_as_tuple(std::forward<ArgsAndToken>(args_and_token)...),
                                 std::make_index_sequence<sizeof...(ArgsAndToken) - 1>{});
  }

  /// Starts a transaction on a lease of its own and hands it over as a
  /// async_transaction_lease (<pgpipe/async_transaction_lease.hpp>): drive it with its
  /// async_query, end it with async_commit or async_rollback; destroyed
  /// before that, it is rolled back.
  ///   token: completion token for void(std::error_code, async_transaction_lease).
  /// BEGIN (with opts' isolation, access mode, deferrable) is not awaited
  /// here: it goes out with the first statement, in the same write and
  /// Sync. Errors: the acquire's (errc::pool_timeout, queue_full, closed,
  /// connect errors with the server's text in the transaction's diag());
  /// errc::invalid_argument for opts.retry with more than one attempt (a
  /// transaction driven by hand cannot be re-run: use async_transaction).
  /// A BEGIN that fails (only with the connection) fails the first
  /// statement and async_commit. Cancellation: as async_acquire, until the
  /// lease is granted.
  template <class CompletionToken>
  auto async_begin(transaction_options opts, CompletionToken&& token) {
    return detail::initiate_op<async_transaction_lease>(
        [](auto handler, std::shared_ptr<detail::client_impl> impl, transaction_options o) {
          using H = decltype(handler);
          auto slot = boost::asio::get_associated_cancellation_slot(handler);
          submit_begin(impl, std::move(o), std::make_unique<detail::completion_impl<async_transaction_lease, H>>(std::move(handler)),
                       slot);
        },
        std::forward<CompletionToken>(token), impl_, std::move(opts));
  }

  /// Stops taking work: new operations fail with errc::closed, queued ones
  /// fail with errc::closed, work in flight completes, idle connections close,
  /// busy ones close when their work is done. Returns at once. Idempotent.
  void close();

  /// close(), and completes (void(std::error_code), always success) once every
  /// connection has closed, leases included. Not cancellable. Executor: the
  /// handler's, else one of the client's loops.
  template <class CompletionToken>
  auto async_close(CompletionToken&& token) {
    return detail::initiate_op<std::monostate>(
        [](auto handler, std::shared_ptr<detail::client_impl> impl) {
          using H = decltype(handler);
          submit_close(impl, std::make_unique<detail::completion_impl<std::monostate, H>>(std::move(handler)));
        },
        std::forward<CompletionToken>(token), impl_);
  }

  /// A snapshot: connections by state, requests in flight and queued,
  /// completions, errors by kind, connects/disconnects, loop lag and threads.
  /// Render with pgpipe::to_prometheus(). Thread-safe, cheap (one short lock).
  pool_stats stats() const;

  /// Replaces the logger (see logger_fn); thread-safe.
  void set_logger(logger_fn logger);

  /// The first event loop's executor.
  executor_type get_executor() const noexcept;
  /// The executor of event loop `loop % loop_count()` (on a caller's
  /// io_context: the client's one strand of it). For spreading the caller's
  /// own work (e.g. one coroutine per logical client) over the client's
  /// threads: queries started there prefer that loop's connections (loop
  /// affinity, above), so a coroutine is resumed with no hop between
  /// threads, and no single loop carries every caller. Empty on a moved-from
  /// client. Thread-safe; the executor stays valid until the client is
  /// destroyed.
  executor_type get_executor(std::size_t loop) const noexcept;
  /// Number of event loops (1 with a caller's io_context).
  std::size_t loop_count() const noexcept;
  /// The pool_params the client was built with (as blocking_pool::params()).
  /// Throws std::logic_error on a moved-from client.
  const pool_params& params() const;

 private:
  template <class Tuple, std::size_t... I>
  auto stream_split(const query_options& opts, std::string_view sql, Tuple&& t, std::index_sequence<I...>) {
    constexpr std::size_t n = sizeof...(I);
    detail::query_spec spec{std::string(sql), detail::encode_params(std::get<I>(t)...), std::nullopt};
    spec.stream_chunk_rows = opts.stream_chunk_rows;
    spec.binary_results = opts.results == result_format::binary;
    return detail::initiate_op<async_row_stream>(
        [](auto handler, std::shared_ptr<detail::client_impl> impl, detail::query_spec s) {
          using H = decltype(handler);
          auto slot = boost::asio::get_associated_cancellation_slot(handler);
          submit_stream(impl, std::move(s), std::make_unique<detail::completion_impl<async_row_stream, H>>(std::move(handler)),
                        slot);
        },
        std::forward<std::tuple_element_t<n, std::remove_reference_t<Tuple>>>(std::get<n>(t)), impl_, std::move(spec));
  }
  static void submit_stream(const std::shared_ptr<detail::client_impl>& impl, detail::query_spec spec,
                            std::unique_ptr<detail::completion<async_row_stream>> done, boost::asio::cancellation_slot slot);
  template <row_type T, class Tuple, std::size_t... I>
  auto typed_stream_split(const query_options& opts, std::string_view sql, Tuple&& t, std::index_sequence<I...>) {
    constexpr std::size_t n = sizeof...(I);
    detail::query_spec spec{std::string(sql), detail::encode_params(std::get<I>(t)...), std::nullopt};
    spec.stream_chunk_rows = opts.stream_chunk_rows;
    spec.binary_results = opts.results == result_format::binary;
    return detail::initiate_op<async_typed_stream<T>>(
        [](auto handler, std::shared_ptr<detail::client_impl> impl, detail::query_spec s) {
          using H = decltype(handler);
          auto slot = boost::asio::get_associated_cancellation_slot(handler);
          submit_stream(impl, std::move(s),
                        std::make_unique<detail::typed_stream_start<T>>(
                            std::make_unique<detail::completion_impl<async_typed_stream<T>, H>>(std::move(handler))),
                        slot);
        },
        std::forward<std::tuple_element_t<n, std::remove_reference_t<Tuple>>>(std::get<n>(t)), impl_, std::move(spec));
  }

  // The read router hands encoded queries to its clients' targets directly
  // (re-running a failed replica read on the primary needs the encoded query).
  friend class async_read_router;
  friend class async_listener;  // its connects run on the client's connector thread
  static void submit_acquire(const std::shared_ptr<detail::client_impl>& impl,
                             std::unique_ptr<detail::completion<async_lease>> done, boost::asio::cancellation_slot slot);
  static void submit_begin(const std::shared_ptr<detail::client_impl>& impl, transaction_options opts,
                           std::unique_ptr<detail::completion<async_transaction_lease>> done,
                           boost::asio::cancellation_slot slot);
  static void submit_close(const std::shared_ptr<detail::client_impl>& impl,
                           std::unique_ptr<detail::completion<std::monostate>> done);
  std::shared_ptr<detail::query_target> target() const noexcept;

  std::shared_ptr<detail::client_impl> impl_;
};

}  // namespace pgpipe
