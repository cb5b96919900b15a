// blocking_pool: a pool of libpqxx connections (6.4 and 7.x), one thread per query.
//
// The classic model (JDBC/HikariCP): a caller borrows a connection, runs its
// statements on its own thread, and gives the connection back. To serve N
// concurrent callers you need N threads; that cost is the point of the
// comparison with the async driver, so the pool does not hide it.
//
// The pool runs on the shared sans-IO pool_core (slots of capacity 1,
// exclusive requests), so pool_params mean the same here as in async_client:
// max_size, min_size, max_queued, acquire_timeout, max_lifetime,
// idle_timeout, health_check_interval, connect back-off. connect_timeout
// bounds each connection attempt (per host of a multi-host string).
// prepared_statements applies to exec(). Not used here: pipeline_depth (always 1), query_timeout
// and stall_timeout (a blocked thread cannot time itself out; bound
// statements on the server with `SET statement_timeout`, which fails them
// with SQLSTATE 57014).
//
// Threads the pool owns (counted in stats().threads): one housekeeping thread
// that drives pool_core's deadlines, and connector threads that open and
// health-check connections off the pool's lock (started on demand, at most
// 4, one per connect or check in progress, gone after 100 ms without work). A slow connect never delays handing out an idle connection.
// Closing a connection happens on whichever thread dropped it, after the
// pool's lock is released.
//
//   pgpipe::blocking_pool pool{{.conninfo = "host=... dbname=...", .max_size = 8}};
//   pgpipe::result r = pool.exec("select ten from san_pham where ma = $1", key);
//   pool.transaction([&](pqxx::work& tx) { tx.exec_params("insert ...", 1); });
//   auto lease = pool.acquire();
//   pqxx::nontransaction tx{*lease};   // needs <pqxx/nontransaction>
//
// Of libpqxx, this header brings what transaction() takes (pqxx::work, with
// libpqxx's result, row and field): a file that uses another libpqxx class on
// a lease (nontransaction, pipeline, stream_from, an exception type...)
// includes that class's header, or <pqxx/pqxx> for all of them.
#pragma once

#include <pgpipe/blocking_lease.hpp>
#include <pgpipe/blocking_typed_stream.hpp>
#include <pgpipe/blocking_types.hpp>
#include <pgpipe/result.hpp>
#include <pgpipe/type_traits.hpp>
#include <pgpipe/error.hpp>
#include <pgpipe/logger.hpp>
#include <pgpipe/pool_params.hpp>
#include <pgpipe/stats.hpp>
#include <pgpipe/transaction_options.hpp>
#include <pgpipe/detail/pqxx_compat.hpp>

#include <pqxx/transaction>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace pgpipe {

namespace detail {
/// What a transaction work takes: a pqxx::work (the libpqxx idiom) when it
/// can, else the blocking_lease (statements through blocking_lease::exec).
template <class Fn>
inline constexpr bool takes_work_v = std::is_invocable_v<Fn&, pqxx::work&>;
template <class Fn, bool = takes_work_v<Fn>>
struct transaction_result {
  using type = std::invoke_result_t<Fn&, pqxx::work&>;
};
template <class Fn>
struct transaction_result<Fn, false> {
  using type = std::invoke_result_t<Fn&, blocking_lease&>;
};
template <class Fn>
using transaction_result_t = typename transaction_result<Fn>::type;
}  // namespace detail

/// What blocking_pool::transaction reports besides its value or exception,
/// in the shape of the async helper's async_transaction_report.
struct blocking_transaction_report {
  /// How many times the work ran (1 + retries); 0 when no connection was obtained.
  unsigned attempts = 0;
  /// When the transaction threw: the code and diagnostics of what it threw
  /// (a caller's own exception: std::errc::state_not_recoverable and its
  /// what()). Empty when it committed.
  std::error_code code;
  diagnostics diag;  ///< The server's fields (or the client's message) for `code`.
};

/// A pool of libpqxx connections for callers that block, one thread per
/// query in flight (the file comment above gives the model and its limits).
/// Thread-safe: any thread may acquire, exec, or read stats.
class blocking_pool {
 public:
  /// Validates `params` (pgpipe::error with errc::bad_params), the
  /// connection string (errc::bad_conninfo) and the libpq loaded at run
  /// time (errc::unsupported_libpq when older than 14), starts the pool's threads and
  /// begins opening min_size connections in the background (it does not wait
  /// for them: a server that is down shows up in acquire(), not here).
  explicit blocking_pool(pool_params params);
  /// The same, with a logger from the start (see logger_fn): it receives,
  /// in the async driver's words, "connected (slot n, backend pid p)" (info),
  /// "connect failed (slot n): ..." (warning), "disconnected (slot n,
  /// backend pid p): <why>" (info when the pool closed it for idleness,
  /// lifetime or shutdown; warning when it broke or failed a health check),
  /// and the server's NOTICE/WARNING messages (slot and backend pid
  /// included). The pool never prints; no line holds a password.
  blocking_pool(pool_params params, logger_fn logger);
  /// close(), then waits for the pool's own threads (an in-progress connect
  /// finishes or times out first, bounded by connect_timeout). Outstanding
  /// leases stay usable; their connections close when they end.
  ~blocking_pool();
  blocking_pool(const blocking_pool&) = delete;
  blocking_pool& operator=(const blocking_pool&) = delete;

  /// Borrows a connection, waiting at most pool_params::acquire_timeout.
  /// Thread-safe. Blocks the calling thread. Waiters are served first come,
  /// first served. Throws pgpipe::error:
  ///  - errc::pool_timeout: every connection stayed busy until the deadline;
  ///  - errc::server_unreachable, auth_failed, bad_conninfo, connect_failed
  ///    (or a SQLSTATE such as 3D000, 53300): no connection could be opened;
  ///    diag() carries the server's/libpq's message, password removed;
  ///  - errc::queue_full: max_queued callers were already waiting;
  ///  - errc::closed: close() was called.
  /// An idle connection whose server side died while it sat in the pool (a
  /// terminated backend, a restarted server) is detected before it is handed
  /// out and replaced, within the same deadline. (One given back less than
  /// 250 us ago is handed out unprobed: a busy pool skips a system call per
  /// query, and a backend dying that soon after the release is the same race
  /// as one dying just after the hand-out: connection_lost, then replaced.)
  blocking_lease acquire();
  /// The same with an explicit timeout instead of acquire_timeout.
  blocking_lease acquire(std::chrono::milliseconds timeout);

  /// Runs one statement in autocommit mode on a borrowed connection
  /// (blocking_lease::exec: libpq directly, no libpqxx transaction object)
  /// and returns its rows or command tag as a pgpipe::result, the class the
  /// async driver returns: the same get<T>, type checks and NULL rules.
  /// `args` are parameters $1, $2... encoded as async_client::async_query
  /// encodes them (type_traits.hpp; std::optional for NULL), so a statement
  /// infers the same parameter types in both drivers.
  /// With pool_params::prepared_statements (the default) the statement is
  /// prepared once per connection, on first use, and reused by SQL text and
  /// parameter types, as the async driver does (up to 1000 per connection,
  /// the least recently used one deallocated to make room); without it
  /// (PgBouncer in transaction mode) each call sends it unnamed.
  /// Thread-safe; blocks. Throws what acquire() throws, or pgpipe::error with
  /// the statement's SQLSTATE and the server's diagnostics, or
  /// errc::connection_lost when the connection died during the statement (it
  /// may have executed), or errc::invalid_argument (before anything is sent)
  /// when `sql` or a text argument contains a NUL byte, or a string or bytes argument
  /// is over 1 GiB - 1 bytes (or all of them over 1 GiB), the server's limits.
  /// Unlike async_client::async_query, exec() refuses no statement: the
  /// connection serves only this call meanwhile, and a transaction it leaves
  /// open is rolled back when the connection returns to the pool. A plain
  /// SET does stay on that connection for later callers: put session
  /// settings in pool_params::on_connect (or use SET LOCAL in transaction()).
  template <typename... Args>
  [[nodiscard]] result exec(std::string_view sql, const Args&... args) {
    return exec_encoded(sql, detail::encode_params(args...));
  }
  /// exec, with the result values in the format `results` asks for
  /// (result_format::binary: binary values, read with get<T>(), and
  /// field::text() refuses a column whose binary form is not text; automatic
  /// and text: text). Same contract otherwise.
  template <typename... Args>
  [[nodiscard]] result exec(result_format results, std::string_view sql, const Args&... args) {
    return exec_encoded(sql, detail::encode_params(args...), results == result_format::binary);
  }

  /// exec, with the rows read straight into T (a described struct, a
  /// std::tuple, an aggregate or one field type: <pgpipe/row_shape.hpp>):
  ///   std::vector<user> all = pool.query_as<user>("select * from users where team = $1", team);
  /// The result's columns are checked against T once, before any row is read.
  /// The values arrive in binary when every field type of T reads binary
  /// (field_traits' binary_results; result_format::automatic), else in text.
  /// Throws what exec() throws, then what result::to_vector<T>() throws
  /// (pgpipe/typed_rows.hpp): errc::columns_mismatch, errc::type_mismatch,
  /// errc::null_value, errc::conversion_error, errc::out_of_range, each
  /// naming the field and the column. Thread-safe; blocks.
  template <row_type T, typename... Args>
  [[nodiscard]] std::vector<T> query_as(std::string_view sql, const Args&... args) {
    return exec_encoded(sql, detail::encode_params(args...), detail::row_traits<T>::binary_results).template to_vector<T>();
  }
  /// The same for a statement that must return exactly one row (another
  /// count throws errc::out_of_range naming it).
  template <row_type T, typename... Args>
  [[nodiscard]] T query_as_one(std::string_view sql, const Args&... args) {
    return exec_encoded(sql, detail::encode_params(args...), detail::row_traits<T>::binary_results).template as<T>();
  }
  /// The same for a statement that returns at most one row: std::nullopt
  /// for none; several throw errc::out_of_range.
  template <row_type T, typename... Args>
  [[nodiscard]] std::optional<T> query_as_opt(std::string_view sql, const Args&... args) {
    return exec_encoded(sql, detail::encode_params(args...), detail::row_traits<T>::binary_results).template as_opt<T>();
  }

  /// The rows of `sql` read into T as they arrive, with bounded memory
  /// (<pgpipe/blocking_typed_stream.hpp>), on a connection the stream
  /// borrows and keeps until it is destroyed:
  ///   for (const user& u : pool.stream_as<user>("select * from users")) ...
  /// Throws what acquire() throws, then what blocking_typed_stream throws
  /// (the statement's errors, columns_mismatch / type_mismatch before any
  /// row, a value that does not read as its field). Leaving the loop early
  /// cancels the statement; the connection goes back to the pool clean.
  /// Thread-safe to call; the stream is used by one thread at a time.
  template <row_type T, typename... Args>
  [[nodiscard]] blocking_typed_stream<T> stream_as(std::string_view sql, const Args&... args) {
    return blocking_typed_stream<T>(std::make_unique<blocking_lease>(acquire()), sql, args...);
  }

  /// Runs fn(pqxx::work&) in a transaction on a borrowed connection: commits
  /// when fn returns, rolls back when it throws, and returns fn's result.
  /// fn may instead take the lease, `fn(blocking_lease&)`, and run its
  /// statements with blocking_lease::exec (pgpipe::result, the async
  /// driver's parameter types and statement cache): the pool sends BEGIN and
  /// COMMIT itself, and a COMMIT the server answers ROLLBACK (a statement
  /// failed and fn swallowed the error) fails with 25P02, as with a work.
  /// Exceptions from fn that come from libpqxx are translated to
  /// pgpipe::error (as exec does); any other exception is rethrown unchanged
  /// after the rollback. A failure of COMMIT itself is errc::connection_lost
  /// (pqxx::in_doubt_error: it may have committed) or the SQLSTATE (e.g.
  /// 40001 serialization failure). Thread-safe; blocks.
  template <typename Fn>
  auto transaction(Fn&& fn) -> detail::transaction_result_t<Fn>;

  /// The same with `opts` (transaction_options.hpp): the isolation level and
  /// access mode are set first thing in the transaction (SET TRANSACTION),
  /// and with opts.retry the whole of fn runs again, on a freshly borrowed
  /// connection after a jittered back-off (this thread sleeps), when fn or
  /// COMMIT fails with 40001 (serialization failure) or 40P01 (deadlock). fn
  /// must therefore be safe to run again (no side effects outside the
  /// transaction). After the last try the server's error is thrown as
  /// pgpipe::error with its SQLSTATE and diagnostics. A work that caught a
  /// server error and returned normally fails with SQLSTATE 25P02 (the
  /// transaction was rolled back), as in the async helper.
  /// Under connection loss: errc::connection_lost, never retried (a loss
  /// during COMMIT may have committed).
  template <typename Fn>
  auto transaction(const transaction_options& opts, Fn&& fn) -> detail::transaction_result_t<Fn>;

  /// The same, and fills `report` (the async helper's async_transaction_report
  /// shape): attempts, and on failure the diagnostics also thrown. `report`
  /// is written whether the transaction commits or throws.
  template <typename Fn>
  auto transaction(const transaction_options& opts, Fn&& fn, blocking_transaction_report& report)
      -> detail::transaction_result_t<Fn>;

  /// Stops the pool: queued acquires fail with errc::closed, new ones too;
  /// idle connections close; leased ones close when their lease ends.
  /// Returns without waiting. Idempotent; thread-safe.
  void close();

  /// Replaces the logger (see logger_fn; empty: log nothing). Thread-safe.
  void set_logger(logger_fn logger);

  /// A snapshot, the same shape as async_client::stats(). `threads` counts
  /// the pool's own threads (housekeeping + connector), not the callers';
  /// loop lag is always zero. Thread-safe.
  pool_stats stats() const;

  /// The parameters the pool was built with (validated).
  const pool_params& params() const noexcept;

 private:
  result exec_encoded(std::string_view sql, detail::encoded_params params, bool binary_results = false);
  template <typename Fn>
  auto run_transaction(const transaction_options& opts, Fn& fn, unsigned& attempts)
      -> detail::transaction_result_t<Fn>;

  std::shared_ptr<detail::blocking_pool_impl> impl_;
};

namespace detail {
/// tx.commit(), except that a work which caught a server error and returned
/// normally fails with SQLSTATE 25P02, as in the async helper: libpqxx 6.4
/// rolled that transaction back when the statement failed, and refuses the
/// commit with a usage_error that would otherwise read as invalid_argument;
/// libpqxx 7 would send the COMMIT, which the server turns into a rollback.
void commit_work(pqxx::work& tx, const blocking_lease& lease);

}  // namespace detail

template <typename Fn>
auto blocking_pool::transaction(Fn&& fn) -> detail::transaction_result_t<Fn> {
  return transaction(transaction_options{}, fn);
}

template <typename Fn>
auto blocking_pool::transaction(const transaction_options& opts, Fn&& fn)
    -> detail::transaction_result_t<Fn> {
  blocking_transaction_report unused;
  return transaction(opts, fn, unused);
}

template <typename Fn>
auto blocking_pool::transaction(const transaction_options& opts, Fn&& fn, blocking_transaction_report& report)
    -> detail::transaction_result_t<Fn> {
  report = blocking_transaction_report{};
  try {
    return run_transaction(opts, fn, report.attempts);
  } catch (...) {
    report.code = detail::translate_exception(std::current_exception(), &report.diag);
    throw;
  }
}

template <typename Fn>
auto blocking_pool::run_transaction(const transaction_options& opts, Fn& fn, unsigned& attempts)
    -> detail::transaction_result_t<Fn> {
  using result_type = detail::transaction_result_t<Fn>;
  const std::string modes = transaction_modes(opts);
  const std::string begin = begin_statement(opts);
  const unsigned max_attempts = opts.retry.max_attempts < 1 ? 1 : opts.retry.max_attempts;
  for (unsigned attempt = 1;; ++attempt) {
    try {
      blocking_lease lease = acquire();
      attempts = attempt;
      try {
        if constexpr (detail::takes_work_v<Fn>) {
          // The work object dies before the catch block runs: an exception from fn
          // rolls the transaction back (pqxx::work's destructor aborts).
          pqxx::work tx{*lease};
          if (!modes.empty()) tx.exec("SET TRANSACTION " + modes);
          if constexpr (std::is_void_v<result_type>) {
            fn(tx);
            detail::commit_work(tx, lease);
            return;
          } else {
            result_type out = fn(tx);
            detail::commit_work(tx, lease);
            return out;
          }
        } else {
          // An exception from fn leaves the transaction open: the lease's
          // release rolls it back before the connection is reused.
          (void)lease.exec(begin);
          if constexpr (std::is_void_v<result_type>) {
            fn(lease);
            (void)lease.exec("COMMIT");
            return;
          } else {
            result_type out = fn(lease);
            (void)lease.exec("COMMIT");
            return out;
          }
        }
      } catch (...) {
        detail::rethrow_translated(&lease);
      }
    } catch (const error& e) {
      // The lease is back in the pool here: the back-off holds no connection.
      if (!is_retryable_transaction_error(e.code()) || attempt >= max_attempts) throw;
    }
    std::this_thread::sleep_for(retry_backoff(opts.retry, attempt + 1, detail::retry_jitter_bits()));
  }
}

}  // namespace pgpipe
