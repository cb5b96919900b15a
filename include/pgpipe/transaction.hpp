// The async transaction helper: BEGIN, the caller's work, COMMIT or ROLLBACK,
// retried on serialization failures and deadlocks when asked to.
//
//   pgpipe::transaction_options opts{.isolation = pgpipe::isolation_level::serializable,
//                                    .retry = {.max_attempts = 10}};
//   pgpipe::async_transaction_report report = co_await pgpipe::async_transaction(client, opts,
//       [](pgpipe::async_lease& l) -> asio::awaitable<void> {
//         co_await l.async_query("update counter set n = n + 1", asio::use_awaitable);  // throws
//       },
//       asio::use_awaitable);   // throws pgpipe::error(code, report.diag) when it failed
//
// The work is a coroutine (asio::awaitable) that gets the lease, or a plain
// callback (pgpipe::async_transaction_callback) that gets the lease and a `done`
// to call with its outcome. A coroutine fails by
// throwing (pgpipe::error keeps the server's diagnostics; std::system_error
// keeps its code) or, for a work returning asio::awaitable<std::error_code>,
// by returning a non-zero code. The helper commits when the work succeeds,
// rolls back when it fails, and always releases the lease before completing.
// With transaction_options::retry the whole work runs again (on a fresh
// lease, after a jittered back-off) when the work or the COMMIT fails with
// 40001 or 40P01; after the last try the error is the server's.
//
// BEGIN is not awaited on its own: it goes out with the work's first query
// (in the same write and, when the work starts that query at once, the same
// Sync segment), and COMMIT is sent as soon as the work completes.
//
// Under connection loss: a loss before COMMIT was written rolls back on the
// server (errc::not_sent / connection_lost from the work or BEGIN); a loss
// while COMMIT is in flight reports errc::connection_lost and the transaction
// may have committed. A COMMIT slower than query_timeout (a synchronous
// standby that is down, a slow deferred trigger) reports errc::query_timeout
// and may have committed too: the client stopped waiting, the server goes
// on. The report's client_message says "may have committed" in both cases.
// Neither is retried: the caller decides.
//
// When the statements are known up front, async_transaction_batch sends
// BEGIN, all of them and COMMIT in one write with one Sync and waits once:
// one round trip per transaction (see its comment below).
#pragma once

#include <pgpipe/async_client.hpp>
#include <pgpipe/error.hpp>
#include <pgpipe/transaction_options.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <system_error>
#include <type_traits>
#include <utility>

namespace pgpipe {

/// What a transaction (or savepoint) helper reports besides its error code.
struct async_transaction_report {
  /// How many times the work ran (1 + retries); 0 when no lease was obtained.
  unsigned attempts = 0;
  /// Why it failed, the one place besides the code: the server's fields for
  /// a server error (from the work's pgpipe::error, BEGIN or COMMIT, or the
  /// connect error of the acquire), else the client's message (a work that
  /// threw something other than std::system_error: its what(), the code
  /// being std::errc::state_not_recoverable).
  diagnostics diag;
};

/// The caller's work in its canonical form (see the file comment).
using async_transaction_work = std::function<boost::asio::awaitable<std::error_code>(async_lease&)>;

/// The work as a plain callback: it gets the lease and a `done` it must call
/// exactly once (from any thread) with the outcome; a non-zero code rolls
/// back. A second call is ignored; never calling it leaves the transaction
/// open forever.
using async_transaction_callback = std::function<void(async_lease&, std::function<void(std::error_code)> done)>;

namespace detail {
struct statement_access;
}  // namespace detail

/// One statement of async_transaction_batch: its SQL and parameters, encoded
/// when it is made (the same parameter types as async_query; a text
/// parameter with a NUL byte makes the whole batch fail with
/// errc::invalid_argument before anything is sent). Copyable: a retried
/// batch sends the same statements again.
class statement {
 public:
  /// `sql` with $1, $2... bound to `args` (see async_client::async_query).
  template <class... Args>
  explicit statement(std::string_view sql, const Args&... args)
      : spec_{std::string(sql), detail::encode_params(args...), std::nullopt} {}
  /// The SQL text.
  std::string_view sql() const noexcept { return spec_.sql; }
  /// The encoded statement (for the driver).
  const detail::query_spec& spec() const noexcept { return spec_; }

 private:
  friend struct detail::statement_access;  // moves the spec out for a batch's last attempt
  detail::query_spec spec_;
};

/// What async_transaction_batch reports besides its error code.
struct async_batch_report {
  /// One result per statement, in order, once the transaction committed;
  /// empty otherwise: nothing of it stayed, except after errc::connection_lost
  /// with COMMIT written, when it may have committed (see the batch's errors).
  std::vector<result> results;
  /// The statement whose error is reported: its index in the batch, or the
  /// batch's size when COMMIT itself failed; nullopt when BEGIN or the
  /// connection failed, or nothing was sent.
  std::optional<std::size_t> failed_statement;
  /// How many times the batch was sent (1 + retries); 0 when no lease was obtained.
  unsigned attempts = 0;
  /// The failing statement's server fields (or the client's message).
  diagnostics diag;
};

/// Throws pgpipe::error(ec, r.diag()) when ec is set: lets a work written
/// with error codes fail with the server's diagnostics.
inline void throw_if_error(const std::error_code& ec, const result& r) {
  if (ec) throw error(ec, r.diag());
}

namespace detail {
void start_transaction(async_client& client, transaction_options opts, async_transaction_work work,
                       std::unique_ptr<completion<async_transaction_report>> done);
/// The same, the transaction's coroutine running on `ex`.
void start_transaction(async_client& client, transaction_options opts, async_transaction_work work,
                       boost::asio::any_io_executor ex, std::unique_ptr<completion<async_transaction_report>> done);
void start_savepoint(async_lease& l, async_transaction_work work, std::unique_ptr<completion<async_transaction_report>> done);

boost::asio::awaitable<std::error_code> run_callback_work(const async_transaction_callback& work, async_lease& l);

/// Where a helper's coroutine runs: the handler's own event-loop executor
/// (a coroutine's, so that resuming it costs no hop), else `fallback`.
/// Executors that are not an event loop's (use_future's, which completes a
/// promise) are not fit to run a coroutine on and get `fallback`.
template <class Handler>
boost::asio::any_io_executor helper_executor(const Handler& h, const boost::asio::any_io_executor& fallback) {
  using assoc = boost::asio::associated_executor_t<Handler>;
  if constexpr (std::is_same_v<assoc, boost::asio::any_io_executor> ||
                std::is_same_v<assoc, boost::asio::io_context::executor_type>) {
    return boost::asio::get_associated_executor(h);
  } else {
    return fallback;
  }
}

/// `lease_target` null: on a fresh lease of `client` per attempt; else on
/// that lease (client unused). Runs on `ex`.
void start_transaction_batch(async_client* client, async_lease* lease_target, transaction_options opts,
                             std::vector<statement> statements, boost::asio::any_io_executor ex,
                             std::unique_ptr<completion<async_batch_report>> done);

template <class Work>
async_transaction_work to_coroutine_work(Work&& work) {
  using awaited = std::invoke_result_t<Work&, async_lease&>;
  if constexpr (std::is_same_v<awaited, boost::asio::awaitable<std::error_code>>) {
    return async_transaction_work(std::forward<Work>(work));
  } else {
    static_assert(std::is_same_v<awaited, boost::asio::awaitable<void>>,
                  "the work must be callable as (pgpipe::async_lease&) -> asio::awaitable<void> or "
                  "asio::awaitable<std::error_code>, or as (pgpipe::async_lease&, std::function<void(std::error_code)>)");
    return [w = std::decay_t<Work>(std::forward<Work>(work))](async_lease& l) -> boost::asio::awaitable<std::error_code> {
      co_await w(l);
      co_return std::error_code{};
    };
  }
}
template <class Work>
async_transaction_work to_transaction_work(Work&& work) {
  if constexpr (std::is_invocable_v<Work&, async_lease&, std::function<void(std::error_code)>>) {
    return [w = async_transaction_callback(std::forward<Work>(work))](async_lease& l) { return run_callback_work(w, l); };
  } else {
    return to_coroutine_work(std::forward<Work>(work));
  }
}
}  // namespace detail

/// Runs `work` in a transaction on a lease of `client` (see the file comment).
///   token: completion token for void(std::error_code, async_transaction_report).
/// Errors: the work's error (errc::not_sent for its statements after BEGIN
///   failed: none of them is sent); BEGIN's SQLSTATE (nothing ran) or
///   COMMIT's (40001 when a serializable COMMIT fails); errc::query_timeout
///   from COMMIT (it may have committed); the acquire errors (errc::pool_timeout,
///   queue_full, closed, connect errors); errc::connection_lost when the
///   connection died with COMMIT in flight, errc::query_timeout when COMMIT
///   was not answered within query_timeout (in both it may have committed,
///   and report.diag.client_message says so); a query_timeout from the
///   work's own statement (nothing stayed: ROLLBACK is sent);
///   std::errc::state_not_recoverable for other exceptions (report.diag
///   holds their what()). With use_awaitable/use_future the failure throws
///   pgpipe::error(code, report.diag).
/// `client` must outlive the operation. The work runs on the handler's
/// event-loop executor when it has one (a coroutine's: no hop back to it),
/// else on the client's first loop. Not cancellable.
/// Executor of the handler: its own, else the client's first loop.
template <class Work, class CompletionToken>
auto async_transaction(async_client& client, transaction_options opts, Work&& work, CompletionToken&& token) {
  return detail::initiate_op<async_transaction_report>(
      [](auto handler, async_client* c, transaction_options o, async_transaction_work w) {
        using H = decltype(handler);
        boost::asio::any_io_executor ex = detail::helper_executor(handler, c->get_executor());
        detail::start_transaction(*c, std::move(o), std::move(w), std::move(ex),
                                  std::make_unique<detail::completion_impl<async_transaction_report, H>>(std::move(handler)));
      },
      std::forward<CompletionToken>(token), &client, std::move(opts), detail::to_transaction_work(std::forward<Work>(work)));
}

/// Runs `statements` as one transaction in one round trip: BEGIN (with
/// opts' isolation and access mode), every statement and COMMIT go out in
/// one write with one Sync, and the client waits once.
///   token: completion token for void(std::error_code, async_batch_report).
/// On success report.results holds each statement's result, in order.
/// When a statement fails, the server skips the rest of the batch (COMMIT
/// included): the error is that statement's (report.failed_statement is its
/// index, report.diag its fields), ROLLBACK is sent, and nothing of the
/// batch stays. When BEGIN fails, nothing of the batch is run. A COMMIT the server answers with ROLLBACK is SQLSTATE 25P02
/// naming the statement that failed first. With opts.retry, the whole batch
/// is sent again (after a jittered back-off) when it fails with 40001 or
/// 40P01, as async_transaction does.
/// Deadline: the pool's query_timeout. Once the batch is written it does not
/// end the batch by itself (the server decides what stays): the driver
/// cancels the statement the server runs and reports what the server then
/// did, waiting for that answer at most max(connect_timeout, 1 s) more.
/// Errors, and what each means about what stayed on the server:
///   - a statement's SQLSTATE (failed_statement its index), BEGIN's
///     (failed_statement empty) or COMMIT's (failed_statement the batch's
///     size; 40001/40P01 once retries are spent): nothing stayed;
///   - errc::query_timeout with diag.sqlstate 57014: the deadline passed and
///     the server stopped the statement failed_statement names (the batch's
///     size: COMMIT; empty: BEGIN) and rolled back: nothing stayed;
///   - errc::query_timeout without a server SQLSTATE: the deadline passed
///     before the batch was written: nothing was sent;
///   - errc::connection_lost with failed_statement empty and diag saying
///     "may have committed": COMMIT was written and the connection died, or
///     the server answered nothing within the bound after the deadline's
///     cancel (the connection is then retired): it may have committed; check
///     before running it again;
///   - errc::connection_lost / errc::not_sent before COMMIT was written:
///     nothing stayed (the server rolls back when the session ends);
///   - errc::invalid_argument (a parameter with a NUL byte, or an empty
///     batch) and the acquire errors (errc::pool_timeout, queue_full,
///     closed, connect errors): nothing was sent.
/// Every row, with the test that pins it: docs/reliability.md, "What a
/// transaction helper's error means".
/// Statements run on a lease: the shared path's sharing rules do not apply.
/// `client` must outlive the operation. Not cancellable. Executor of the handler: its own, else the client's first loop.
template <class CompletionToken>
auto async_transaction_batch(async_client& client, transaction_options opts, std::vector<statement> statements,
                             CompletionToken&& token) {
  return detail::initiate_op<async_batch_report>(
      [](auto handler, async_client* c, transaction_options o, std::vector<statement> s) {
        using H = decltype(handler);
        boost::asio::any_io_executor ex = detail::helper_executor(handler, c->get_executor());
        detail::start_transaction_batch(c, nullptr, std::move(o), std::move(s), std::move(ex),
                                        std::make_unique<detail::completion_impl<async_batch_report, H>>(std::move(handler)));
      },
      std::forward<CompletionToken>(token), &client, std::move(opts), std::move(statements));
}

/// The same on a lease you hold, which must not be inside a transaction
/// (BEGIN would only warn, and the batch's COMMIT would end yours). Retries
/// run on the same lease. `l` must outlive the operation; start nothing else
/// on it meanwhile. Errors as above, without the acquire errors; errc::closed
/// on an empty or released lease. Executor of the handler: its own, else the
/// lease's loop.
template <class CompletionToken>
auto async_transaction_batch(async_lease& l, transaction_options opts, std::vector<statement> statements,
                             CompletionToken&& token) {
  return detail::initiate_op<async_batch_report>(
      [](auto handler, async_lease* target, transaction_options o, std::vector<statement> s) {
        using H = decltype(handler);
        boost::asio::any_io_executor fallback = target->get_executor();
        if (!fallback) fallback = boost::asio::system_executor();
        boost::asio::any_io_executor ex = detail::helper_executor(handler, fallback);
        detail::start_transaction_batch(nullptr, target, std::move(o), std::move(s), std::move(ex),
                                        std::make_unique<detail::completion_impl<async_batch_report, H>>(std::move(handler)));
      },
      std::forward<CompletionToken>(token), &l, std::move(opts), std::move(statements));
}

/// A savepoint on a lease already inside a transaction: SAVEPOINT, the work,
/// then RELEASE SAVEPOINT on success or ROLLBACK TO SAVEPOINT on failure, so
/// the enclosing transaction carries on either way. Nests (each level uses
/// the same name; PostgreSQL resolves it to the innermost). No retry: a
/// serialization failure dooms the whole transaction, not a savepoint.
/// token: void(std::error_code, async_transaction_report) with the work's error (or
/// SAVEPOINT's). `l` must outlive the operation; do not use it meanwhile.
template <class Work, class CompletionToken>
auto async_savepoint(async_lease& l, Work&& work, CompletionToken&& token) {
  return detail::initiate_op<async_transaction_report>(
      [](auto handler, async_lease* target, async_transaction_work w) {
        using H = decltype(handler);
        detail::start_savepoint(*target, std::move(w),
                                std::make_unique<detail::completion_impl<async_transaction_report, H>>(std::move(handler)));
      },
      std::forward<CompletionToken>(token), &l, detail::to_transaction_work(std::forward<Work>(work)));
}

/// The name before the naming rule (docs/api-guide.md, "Names"): use async_transaction_report. Kept for one release.
using transaction_report [[deprecated("renamed pgpipe::async_transaction_report (docs/api-guide.md, Names)")]] = async_transaction_report;
/// The name before the naming rule (docs/api-guide.md, "Names"): use async_batch_report. Kept for one release.
using batch_report [[deprecated("renamed pgpipe::async_batch_report (docs/api-guide.md, Names)")]] = async_batch_report;
/// The name before the naming rule (docs/api-guide.md, "Names"): use async_transaction_work. Kept for one release.
using transaction_work [[deprecated("renamed pgpipe::async_transaction_work (docs/api-guide.md, Names)")]] = async_transaction_work;
/// The name before the naming rule (docs/api-guide.md, "Names"): use async_transaction_callback. Kept for one release.
using transaction_callback [[deprecated("renamed pgpipe::async_transaction_callback (docs/api-guide.md, Names)")]] = async_transaction_callback;

}  // namespace pgpipe
