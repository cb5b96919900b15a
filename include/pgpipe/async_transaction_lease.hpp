// pgpipe::async_transaction_lease: a transaction you drive yourself, the RAII
// form (tokio-postgres' client.transaction(), libpqxx's work):
//
//   auto tx = co_await client.async_begin({}, asio::use_awaitable);
//   co_await tx.async_query("insert into orders values ($1)", id, asio::use_awaitable);
//   co_await tx.async_query("update stock set n = n - 1 where item = $1", item, asio::use_awaitable);
//   co_await tx.async_commit(asio::use_awaitable);
//
// Leaving the scope without async_commit (an exception, an early co_return)
// rolls the transaction back: the lease's release sends ROLLBACK before the
// connection serves anyone else. BEGIN is not a round trip of its own: it is
// written with the first statement and shares its Sync. For retries on
// 40001/40P01 use async_transaction (<pgpipe/transaction.hpp>), which can
// run the work again; a transaction driven by hand cannot be re-run by the
// driver.
#pragma once

#include <pgpipe/async_lease.hpp>
#include <pgpipe/detail/async_glue.hpp>
#include <pgpipe/error.hpp>
#include <pgpipe/result.hpp>
#include <pgpipe/transaction_options.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <string_view>
#include <utility>

namespace pgpipe {

class async_client;

namespace detail {
struct chain_state;
}  // namespace detail

/// An open transaction on a lease (see the file comment). Move-only.
/// Destroying it before async_commit or async_rollback rolls it back.
class async_transaction_lease {
 public:
  /// The executor type of get_executor().
  using executor_type = boost::asio::any_io_executor;

  async_transaction_lease() noexcept = default;
  /// An empty transaction carrying why async_begin failed (see diag()).
  explicit async_transaction_lease(diagnostics failure) noexcept : failure_(std::move(failure)) {}
  /// Moves the transaction; a move-assignment first rolls back the one this
  /// object held.
  ///@{
  async_transaction_lease(async_transaction_lease&&) noexcept = default;
  async_transaction_lease& operator=(async_transaction_lease&&) noexcept = default;
  ///@}
  async_transaction_lease(const async_transaction_lease&) = delete;
  async_transaction_lease& operator=(const async_transaction_lease&) = delete;
  ~async_transaction_lease() = default;

  /// True from async_begin until async_commit or async_rollback is started.
  ///@{
  bool valid() const noexcept { return lease_.valid(); }
  explicit operator bool() const noexcept { return valid(); }
  ///@}

  /// Why async_begin failed (the acquire's connect error with the server's
  /// text and SQLSTATE, or pgpipe's message); empty for a begun transaction.
  [[nodiscard]] const diagnostics& diag() const noexcept { return failure_; }

  /// The executor of the loop that owns the connection (empty when not valid()).
  executor_type get_executor() const noexcept { return lease_.get_executor(); }

  /// lease::async_query on the transaction's connection (same parameters,
  /// tokens, errors and cancellation). After commit or rollback: errc::closed.
  template <class... Args>
  auto async_query(Args&&... args) {
    return lease_.async_query(std::forward<Args>(args)...);
  }
  /// lease::async_query_one (exactly one row).
  template <class... Args>
  auto async_query_one(Args&&... args) {
    return lease_.async_query_one(std::forward<Args>(args)...);
  }
  /// lease::async_query_opt (at most one row).
  template <class... Args>
  auto async_query_opt(Args&&... args) {
    return lease_.async_query_opt(std::forward<Args>(args)...);
  }

  /// The lease under the transaction, for what it offers beyond queries
  /// (streams, COPY, async_savepoint). Ending the transaction by hand on it
  /// (COMMIT, ROLLBACK) leaves this object to roll back nothing.
  async_lease& connection() noexcept { return lease_; }

  /// Sends COMMIT and returns the connection to the pool.
  ///   token: completion token for void(std::error_code, result) (COMMIT's).
  /// Errors: BEGIN's (its SQLSTATE, or the connection failed before the
  ///   work started: nothing ran, and the transaction's statements after a
  ///   failed BEGIN were not sent, errc::not_sent); errc::query_timeout
  ///   when COMMIT outlasted its timeout (it may have committed);
  ///   SQLSTATE 25P02 when a statement of the transaction had failed (the
  ///   server answers COMMIT with ROLLBACK: nothing was committed);
  ///   COMMIT's own SQLSTATE (40001 for a serializable conflict, a deferred
  ///   constraint's 23505...); errc::connection_lost when the connection
  ///   died with COMMIT in flight, errc::query_timeout when COMMIT was not
  ///   answered within query_timeout (a synchronous standby that is down):
  ///   in both it may have committed, and the result's
  ///   diag().client_message says so; errc::closed
  ///   when the transaction was already ended. With use_awaitable the
  ///   failure throws pgpipe::error with the server's diagnostics.
  template <class CompletionToken>
  auto async_commit(CompletionToken&& token) {
    return end("COMMIT", std::forward<CompletionToken>(token));
  }
  /// Sends ROLLBACK and returns the connection to the pool; errors as
  /// async_commit (a ROLLBACK fails only with the connection).
  template <class CompletionToken>
  auto async_rollback(CompletionToken&& token) {
    return end("ROLLBACK", std::forward<CompletionToken>(token));
  }

 private:
  friend class async_client;
  async_transaction_lease(async_lease l, std::shared_ptr<detail::chain_state> begun) noexcept
      : lease_(std::move(l)), begun_(std::move(begun)) {}

  template <class CompletionToken>
  auto end(const char* sql, CompletionToken&& token) {
    return detail::initiate_op<result>(
        [](auto handler, async_lease l, std::shared_ptr<detail::chain_state> begun, const char* s) {
          using H = decltype(handler);
          finish(std::move(l), std::move(begun), s, std::make_unique<detail::completion_impl<result, H>>(std::move(handler)));
        },
        std::forward<CompletionToken>(token), std::move(lease_), std::move(begun_), sql);
  }
  static void finish(async_lease l, std::shared_ptr<detail::chain_state> begun, const char* sql,
                     std::unique_ptr<detail::completion<result>> done);

  async_lease lease_;
  std::shared_ptr<detail::chain_state> begun_;
  diagnostics failure_;
};

/// The name before the naming rule (docs/api-guide.md, "Names"): use async_transaction_lease. Kept for one release.
using transaction_lease [[deprecated("renamed pgpipe::async_transaction_lease (docs/api-guide.md, Names)")]] = async_transaction_lease;

}  // namespace pgpipe
