// The async transaction helper: BEGIN, the caller's work, COMMIT or ROLLBACK,
// retried on serialization failures and deadlocks when asked to.
//
//   pgpipe::transaction_options opts{.isolation = pgpipe::isolation_level::serializable,
//                                    .retry = {.max_attempts = 10}};
//   auto [ec, report] = co_await pgpipe::async_transaction(client, opts,
//       [](pgpipe::lease& l) -> asio::awaitable<void> {
//         auto [ec, r] = co_await l.async_query("update counter set n = n + 1", asio::use_awaitable);
//         pgpipe::throw_if_error(ec, r);   // or co_return ec from a work returning std::error_code
//       },
//       asio::use_awaitable);
//
// The work is a coroutine (asio::awaitable) that gets the lease, or a plain
// callback (pgpipe::transaction_callback) that gets the lease and a `done`
// to call with its outcome. A coroutine fails by
// throwing (pgpipe::error keeps the server's diagnostics; std::system_error
// keeps its code) or, for a work returning asio::awaitable<std::error_code>,
// by returning a non-zero code. The helper commits when the work succeeds,
// rolls back when it fails, and always releases the lease before completing.
// With transaction_options::retry the whole work runs again (on a fresh
// lease, after a jittered back-off) when the work or the COMMIT fails with
// 40001 or 40P01; after the last try the error is the server's.
//
// Under connection loss: a loss before COMMIT was written rolls back on the
// server (errc::not_sent / connection_lost from the work or BEGIN); a loss
// while COMMIT is in flight reports errc::connection_lost and the transaction
// may have committed. Neither is retried: the caller decides.
#pragma once

#include <pgpipe/async_client.hpp>
#include <pgpipe/error.hpp>
#include <pgpipe/transaction_options.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>

#include <exception>
#include <functional>
#include <memory>
#include <system_error>
#include <type_traits>
#include <utility>

namespace pgpipe {

/// What a transaction (or savepoint) helper reports besides its error code.
struct transaction_report {
  /// How many times the work ran (1 + retries); 0 when no lease was obtained.
  unsigned attempts = 0;
  /// The server's fields for a server error (from pgpipe::error, BEGIN or
  /// COMMIT), or the client's message.
  diagnostics diag;
  /// A work that threw something other than std::system_error: the exception
  /// (the code is then std::errc::state_not_recoverable). Rethrow it if you like.
  std::exception_ptr exception;
};

/// The caller's work in its canonical form (see the file comment).
using transaction_work = std::function<boost::asio::awaitable<std::error_code>(lease&)>;

/// The work as a plain callback: it gets the lease and a `done` it must call
/// exactly once (from any thread) with the outcome; a non-zero code rolls
/// back. A second call is ignored; never calling it leaves the transaction
/// open forever.
using transaction_callback = std::function<void(lease&, std::function<void(std::error_code)> done)>;

/// Throws pgpipe::error(ec, r.diag()) when ec is set: lets a work written
/// with error codes fail with the server's diagnostics.
inline void throw_if_error(const std::error_code& ec, const result& r) {
  if (ec) throw error(ec, r.diag());
}

namespace detail {
void start_transaction(async_client& client, transaction_options opts, transaction_work work,
                       std::unique_ptr<completion<transaction_report>> done);
void start_savepoint(lease& l, transaction_work work, std::unique_ptr<completion<transaction_report>> done);

boost::asio::awaitable<std::error_code> run_callback_work(const transaction_callback& work, lease& l);

template <class Work>
transaction_work to_coroutine_work(Work&& work) {
  using awaited = std::invoke_result_t<Work&, lease&>;
  if constexpr (std::is_same_v<awaited, boost::asio::awaitable<std::error_code>>) {
    return transaction_work(std::forward<Work>(work));
  } else {
    static_assert(std::is_same_v<awaited, boost::asio::awaitable<void>>,
                  "the work must be callable as (pgpipe::lease&) -> asio::awaitable<void> or "
                  "asio::awaitable<std::error_code>, or as (pgpipe::lease&, std::function<void(std::error_code)>)");
    return [w = std::decay_t<Work>(std::forward<Work>(work))](lease& l) -> boost::asio::awaitable<std::error_code> {
      co_await w(l);
      co_return std::error_code{};
    };
  }
}
template <class Work>
transaction_work to_transaction_work(Work&& work) {
  if constexpr (std::is_invocable_v<Work&, lease&, std::function<void(std::error_code)>>) {
    return [w = transaction_callback(std::forward<Work>(work))](lease& l) { return run_callback_work(w, l); };
  } else {
    return to_coroutine_work(std::forward<Work>(work));
  }
}
}  // namespace detail

/// Runs `work` in a transaction on a lease of `client` (see the file comment).
///   token: completion token for void(std::error_code, transaction_report).
/// Errors: the work's error; BEGIN's or COMMIT's SQLSTATE (40001 when a
///   serializable COMMIT fails); the acquire errors (errc::pool_timeout,
///   queue_full, closed, connect errors); errc::connection_lost when the
///   connection died with COMMIT in flight (it may have committed);
///   std::errc::state_not_recoverable with report.exception for other exceptions.
/// `client` must outlive the operation. The work runs on the client's first
/// loop (a coroutine: its queries' handlers resume it there). Not cancellable.
/// Executor of the handler: its own, else the client's first loop.
template <class Work, class CompletionToken>
auto async_transaction(async_client& client, transaction_options opts, Work&& work, CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(std::error_code, transaction_report)>(
      [](auto handler, async_client* c, transaction_options o, transaction_work w) {
        using H = decltype(handler);
        detail::start_transaction(*c, std::move(o), std::move(w),
                                  std::make_unique<detail::completion_impl<transaction_report, H>>(std::move(handler)));
      },
      token, &client, std::move(opts), detail::to_transaction_work(std::forward<Work>(work)));
}

/// A savepoint on a lease already inside a transaction: SAVEPOINT, the work,
/// then RELEASE SAVEPOINT on success or ROLLBACK TO SAVEPOINT on failure, so
/// the enclosing transaction carries on either way. Nests (each level uses
/// the same name; PostgreSQL resolves it to the innermost). No retry: a
/// serialization failure dooms the whole transaction, not a savepoint.
/// token: void(std::error_code, transaction_report) with the work's error (or
/// SAVEPOINT's). `l` must outlive the operation; do not use it meanwhile.
template <class Work, class CompletionToken>
auto async_savepoint(lease& l, Work&& work, CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(std::error_code, transaction_report)>(
      [](auto handler, lease* target, transaction_work w) {
        using H = decltype(handler);
        detail::start_savepoint(*target, std::move(w),
                                std::make_unique<detail::completion_impl<transaction_report, H>>(std::move(handler)));
      },
      token, &l, detail::to_transaction_work(std::forward<Work>(work)));
}

}  // namespace pgpipe
