// transaction_options: what both drivers' transaction helpers take, and the
// retry rule they share (async: <pgpipe/transaction.hpp>; blocking:
// blocking_pool::transaction(options, fn)).
//
// Driver-free (no Asio, no libpqxx): the BEGIN text, which errors are worth
// running the whole work again, and the jittered back-off between tries are
// decided here once, so the two drivers cannot drift apart.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <system_error>

namespace pgpipe {

/// The SQL isolation levels (READ UNCOMMITTED is READ COMMITTED in PostgreSQL).
enum class isolation_level {
  server_default,   ///< whatever default_transaction_isolation says (usually READ COMMITTED)
  read_committed,
  repeatable_read,
  serializable,
};

/// Opt-in retry of the whole work on a serialization failure (40001) or a
/// deadlock (40P01): the two errors PostgreSQL reports when running the same
/// transaction again may succeed. Nothing else is retried (a lost connection
/// may have committed: that is the caller's call).
struct retry_policy {
  /// Tries in all, the first one included. 1 (the default) never retries.
  unsigned max_attempts = 1;
  /// Back-off before try n+1 is a random duration in [0, min(max_backoff,
  /// initial_backoff * 2^(n-1))] ("full jitter"): contending transactions
  /// spread out instead of colliding again in step.
  std::chrono::milliseconds initial_backoff{5};
  /// The cap on any one back-off (see initial_backoff).
  std::chrono::milliseconds max_backoff{200};
};

/// How a transaction is started and whether it is retried.
struct transaction_options {
  /// ISOLATION LEVEL of the transaction.
  isolation_level isolation = isolation_level::server_default;
  /// READ ONLY: writes fail with 25006.
  bool read_only = false;
  /// Only meaningful with serializable + read_only (PostgreSQL ignores it otherwise).
  bool deferrable = false;
  /// Whether and how the whole work is retried (default: never).
  retry_policy retry;
};

/// "BEGIN ISOLATION LEVEL SERIALIZABLE, READ ONLY, DEFERRABLE" and the like
/// (plain "BEGIN" for the defaults).
std::string begin_statement(const transaction_options& opts);

/// The transaction modes alone ("ISOLATION LEVEL SERIALIZABLE, READ ONLY"),
/// empty for the defaults: for `SET TRANSACTION <modes>` inside an already
/// started transaction (the blocking driver, where libpqxx sends BEGIN).
std::string transaction_modes(const transaction_options& opts);

/// True for 40001 (serialization_failure) and 40P01 (deadlock_detected).
bool is_retryable_transaction_error(const std::error_code& ec) noexcept;

/// The back-off before try `next_attempt` (2 for the first retry), drawn
/// from `random` (any 64 uniformly distributed bits) as retry_policy says.
std::chrono::microseconds retry_backoff(const retry_policy& policy, unsigned next_attempt,
                                        std::uint64_t random) noexcept;

namespace detail {
/// 64 random bits for retry_backoff (a per-thread generator seeded once).
std::uint64_t retry_jitter_bits() noexcept;
}  // namespace detail

}  // namespace pgpipe
