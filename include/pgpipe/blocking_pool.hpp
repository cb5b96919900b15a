// blocking_pool: a pool of libpqxx 6.4 connections, one thread per query.
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
//   pqxx::result r = pool.exec("select ten from san_pham where ma = $1", key);
//   pool.transaction([&](pqxx::work& tx) { tx.exec_params("insert ...", 1); });
//   auto lease = pool.acquire();
//   pqxx::nontransaction tx{*lease};
#pragma once

#include <pgpipe/blocking_lease.hpp>
#include <pgpipe/blocking_types.hpp>
#include <pgpipe/detail/param_limits.hpp>
#include <pgpipe/error.hpp>
#include <pgpipe/logger.hpp>
#include <pgpipe/pool_params.hpp>
#include <pgpipe/stats.hpp>
#include <pgpipe/transaction_options.hpp>
#include <pgpipe/detail/pqxx_compat.hpp>

#include <pqxx/pqxx>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>

namespace pgpipe {

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

  /// Runs one statement in autocommit mode (pqxx::nontransaction) on a
  /// borrowed connection and returns its rows. `args` are passed as
  /// parameters $1, $2... converted by pgpipe::pqxx_arg (pgpipe's types, see
  /// blocking_types.hpp) or libpqxx (its own types; std::optional for NULL).
  /// With pool_params::prepared_statements (the default) the statement is
  /// prepared once per connection, on first use, and reused by SQL text, as
  /// the async driver does (up to 1000 texts per connection, then unnamed);
  /// without it (PgBouncer in transaction mode) each call sends it unnamed
  /// (exec_params).
  /// Thread-safe; blocks. Throws what acquire() throws, or pgpipe::error with
  /// the statement's SQLSTATE and the server's diagnostics, or
  /// errc::connection_lost when the connection died during the statement (it
  /// may have executed), or errc::invalid_argument (before anything is sent)
  /// when a `std::string`/`std::string_view` argument contains a NUL byte,
  /// or a string or bytes argument is over 1 GiB - 1 bytes (or all of them
  /// over 1 GiB), the server's limits.
  /// Unlike async_client::async_query, exec() refuses no statement: the
  /// connection serves only this call meanwhile, and a transaction it leaves
  /// open is rolled back when the connection returns to the pool. A plain
  /// SET does stay on that connection for later callers: put session
  /// settings in pool_params::on_connect (or use SET LOCAL in transaction()).
  template <typename... Args>
  [[nodiscard]] pqxx::result exec(std::string_view sql, Args&&... args);

  /// Runs fn(pqxx::work&) in a transaction on a borrowed connection: commits
  /// when fn returns, rolls back when it throws, and returns fn's result.
  /// Exceptions from fn that come from libpqxx are translated to
  /// pgpipe::error (as exec does); any other exception is rethrown unchanged
  /// after the rollback. A failure of COMMIT itself is errc::connection_lost
  /// (pqxx::in_doubt_error: it may have committed) or the SQLSTATE (e.g.
  /// 40001 serialization failure). Thread-safe; blocks.
  template <typename Fn>
  auto transaction(Fn&& fn) -> std::invoke_result_t<Fn&, pqxx::work&>;

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
  auto transaction(const transaction_options& opts, Fn&& fn) -> std::invoke_result_t<Fn&, pqxx::work&>;

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
  template <typename... Args>
  pqxx::result exec_converted(std::string_view sql, Args&&... args);

  std::shared_ptr<detail::blocking_pool_impl> impl_;
  bool prepared_statements_ = true;  // params().prepared_statements, read without a call
};

namespace detail {
template <typename T>
struct is_optional_param : std::false_type {};
template <typename T>
struct is_optional_param<std::optional<T>> : std::true_type {};

// libpq sends text parameters as C strings: an embedded NUL would silently
// cut the value short. Such a value cannot be sent as text at all.
template <typename T>
bool text_has_nul(const T& v) {
  using D = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<D, std::string> || std::is_same_v<D, std::string_view>) {
    return v.find('\0') != D::npos;
  } else if constexpr (is_optional_param<D>::value) {
    return v.has_value() && text_has_nul(*v);
  } else {
    return false;
  }
}

// The bytes a converted argument puts on the wire, where it can be large
// (strings and bytes); 0 for the rest, whose text forms are short.
template <typename T>
std::size_t param_bytes(const T& v) {
  using D = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<D, std::string> || std::is_same_v<D, std::string_view> ||
                std::is_same_v<D, pqxx::binarystring>) {
    return v.size();
  } else if constexpr (is_optional_param<D>::value) {
    return v.has_value() ? param_bytes(*v) : 0;
  } else {
    return 0;
  }
}

/// Throws errc::invalid_argument for parameter $n (the message both drivers use).
[[noreturn]] void throw_nul_param(std::size_t one_based_index);

/// The server refused a cached prepared statement before executing it:
/// 26000 (it does not exist), or 0A000 "cached plan must not change result
/// type" (a migration changed a table it reads). Safe to prepare again and
/// run once more.
inline bool is_stale_statement(const pqxx::sql_error& e) {
  const std::string_view state = e.sqlstate();  // a std::string before libpqxx 8
  return state == "26000" ||
         (state == "0A000" &&
          std::string_view(e.what()).find("cached plan must not change result type") != std::string_view::npos);
}

/// One exec() as the pool's query_duration histogram and its query_observer
/// (pool_params::observer) see it: times the wait for a connection and the
/// statement, reports start and end. Used by blocking_pool::exec only.
class exec_watch {
 public:
  exec_watch(blocking_pool_impl& pool, std::string_view sql) noexcept;
  exec_watch(const exec_watch&) = delete;
  exec_watch& operator=(const exec_watch&) = delete;
  /// blocking_pool::acquire(); on success the observer's on_start runs, on
  /// failure its on_end, then the error is thrown.
  blocking_lease acquire();
  /// The statement succeeded: on_end with its rows.
  pqxx::result done(pqxx::result r) noexcept;
  /// Call from a catch block: translates the exception as rethrow_translated
  /// does, reports it to on_end, throws it.
  [[noreturn]] void fail(blocking_lease* lease);

 private:
  void end(const std::error_code& ec, std::string_view sqlstate, std::uint64_t rows) noexcept;

  blocking_pool_impl& pool_;
  std::string_view sql_;
  std::chrono::steady_clock::time_point submitted_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::nanoseconds waited_{0};
  std::uint64_t slot_ = 0;
  int backend_pid_ = 0;
  void* user_ = nullptr;
  bool observed_start_ = false;
};

/// tx.commit(), except that a work which caught a server error and returned
/// normally fails with SQLSTATE 25P02, as in the async helper: libpqxx 6.4
/// rolled that transaction back when the statement failed, and refuses the
/// commit with a usage_error that would otherwise read as invalid_argument;
/// libpqxx 7 would send the COMMIT, which the server turns into a rollback.
void commit_work(pqxx::work& tx, const blocking_lease& lease);

/// Throws errc::invalid_argument naming the first parameter ($n) over the
/// server's size limit (param_limits.hpp), or the total, or else the first
/// holding a NUL byte.
template <typename... Args>
void check_text_params(const Args&... args) {
  const std::size_t sizes[] = {param_bytes(args)..., 0};
  std::string too_large = param_size_refusal(sizeof...(Args), [&](std::size_t i) { return sizes[i]; });
  if (!too_large.empty()) throw error(make_error_code(errc::invalid_argument), std::move(too_large));
  std::size_t n = 0;
  std::size_t bad = 0;
  ((++n, bad = (bad == 0 && text_has_nul(args)) ? n : bad), ...);
  (void)n;  // unused when there are no arguments
  if (bad != 0) throw_nul_param(bad);
}
}  // namespace detail

template <typename... Args>
pqxx::result blocking_pool::exec(std::string_view sql, Args&&... args) {
  // The converted arguments live until the end of this full expression.
  return exec_converted(sql, pqxx_arg(std::forward<Args>(args))...);
}

template <typename... Args>
pqxx::result blocking_pool::exec_converted(std::string_view sql, Args&&... args) {
  detail::exec_watch watch(*impl_, sql);
  try {
    detail::check_text_params(args...);
  } catch (...) {
    watch.fail(nullptr);
  }
  blocking_lease lease = watch.acquire();
  try {
    const std::string* name = nullptr;
    if (prepared_statements_) {
      try {
        // libpqxx 7 sends the Parse here, 6.4 with the first exec_prepared:
        // a server error from either is handled below.
        name = lease.statement_for(sql);
        if (name != nullptr) {
          pqxx::nontransaction tx{*lease};
          return watch.done(detail::pqxx_exec_prepared(tx, *name, args...));
        }
      } catch (const pqxx::sql_error& e) {
        // Names are never reused on a connection: one that already exists
        // was made by another client of the same server session.
        if (e.sqlstate() == "42P05") lease.pooler_suspected();
        // A migration changed a table the cached statement reads, and the
        // server refused it before executing anything: prepare it again and
        // run it once more, so the caller never sees the stale plan.
        if (name == nullptr || !detail::is_stale_statement(e)) throw;
      }
    }
    if (name != nullptr) {
      try {
        pqxx::nontransaction tx{*lease};
        return watch.done(
            detail::pqxx_exec_prepared(tx, *lease.renew_statement(sql), std::forward<Args>(args)...));
      } catch (const pqxx::sql_error& e) {
        // The statement was just prepared afresh: gone again, or its new name
        // taken, means the server session changes between our calls.
        if (e.sqlstate() == "26000" || e.sqlstate() == "42P05") lease.pooler_suspected();
        throw;
      }
    }
    pqxx::nontransaction tx{*lease};
    return watch.done(detail::pqxx_exec_params(tx, sql, std::forward<Args>(args)...));
  } catch (...) {
    watch.fail(&lease);
  }
}

template <typename Fn>
auto blocking_pool::transaction(Fn&& fn) -> std::invoke_result_t<Fn&, pqxx::work&> {
  return transaction(transaction_options{}, fn);
}

template <typename Fn>
auto blocking_pool::transaction(const transaction_options& opts, Fn&& fn)
    -> std::invoke_result_t<Fn&, pqxx::work&> {
  using result_type = std::invoke_result_t<Fn&, pqxx::work&>;
  const std::string modes = transaction_modes(opts);
  const unsigned max_attempts = opts.retry.max_attempts < 1 ? 1 : opts.retry.max_attempts;
  for (unsigned attempt = 1;; ++attempt) {
    try {
      blocking_lease lease = acquire();
      try {
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
