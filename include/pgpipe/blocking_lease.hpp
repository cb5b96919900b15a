// blocking_lease: exclusive use of one pooled libpqxx connection (RAII).
//
// A lease is what blocking_pool::acquire() hands out: for its lifetime the
// calling thread owns one server connection and runs libpqxx code on it
// (`pqxx::work tx{*lease};`). Destroying the lease gives the connection back:
//  - left inside a transaction block (a `BEGIN` run through a
//    pqxx::nontransaction, say), it is rolled back before anyone else sees it;
//  - broken (the server went away, libpqxx reported broken_connection), or in
//    a state that cannot be cleaned up (a pqxx transaction object still open,
//    a query still running), it is discarded and the pool opens a replacement.
// A pqxx::work destroyed without commit() already rolls itself back: declare
// transaction objects *after* the lease so that they die first.
// A raw `commit` through a pqxx::nontransaction is libpqxx's own call: when
// the transaction had failed, the server answers it with the tag ROLLBACK
// and no error, and libpqxx 6.4 returns that as a success (it keeps the tag
// to itself). Use blocking_pool::transaction, which reports 25P02, or a
// pqxx::work, whose commit() refuses a transaction that had failed.
//
// Precondition of release(), discard(), move-assignment and the destructor:
// no libpqxx transaction object (work, nontransaction, pipeline, stream) is
// still alive on the connection. As with a pqxx::connection, an object that
// outlives its connection dangles: the pool may hand the connection to
// another thread or close it.
#pragma once

#include <pgpipe/error.hpp>
#include <pgpipe/query_options.hpp>
#include <pgpipe/result.hpp>
#include <pgpipe/type_traits.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>

#include <pqxx/version>

// The class every libpqxx transaction takes: connection_base in 6.4;
// pqxx::connection from 7 on (7 keeps connection_base as an alias of it, which
// a forward declaration of the class would clash with; 8 drops the alias).
namespace pqxx {
#if PQXX_VERSION_MAJOR < 7
class connection_base;
#else
class connection;
#endif
}  // namespace pqxx

namespace pgpipe {

class blocking_pool;

class blocking_lease;

namespace detail {
struct blocking_pool_impl;
class pooled_connection;
struct lease_access;
class exec_watch;

/// Translates the exception being handled (call from a catch block) into a
/// pgpipe::error and throws it: pqxx::sql_error becomes its SQLSTATE code with
/// the server's fields parsed into diagnostics; pqxx::broken_connection and
/// pqxx::in_doubt_error become errc::connection_lost (the statement may have
/// executed) and mark `lease` broken; pqxx::conversion_error becomes
/// errc::conversion_error; pqxx::usage_error/argument_error become
/// errc::invalid_argument. pgpipe::error and any exception that does not come
/// from libpqxx are rethrown unchanged. `lease` may be null; when it is not,
/// the error is counted in its pool's stats().
[[noreturn]] void rethrow_translated(blocking_lease* lease);

/// The same translation, as a value: the code and diagnostics of `ex`
/// (a pqxx, pgpipe or std::system_error exception). Any other exception maps
/// to std::errc::state_not_recoverable with its what() as client_message.
[[nodiscard]] std::error_code translate_exception(std::exception_ptr ex, diagnostics* diag) noexcept;
}  // namespace detail

/// Move-only handle on one connection of a blocking_pool.
///
/// Thread-safety: a lease (and its connection) is used by one thread at a
/// time, like a pqxx::connection. It may be moved to and destroyed on another
/// thread. It may outlive its blocking_pool: the connection is then closed
/// when the lease ends.
///
/// The connection type (connection_type) is the one every libpqxx
/// transaction class takes: pqxx::connection_base with libpqxx 6.4 (pooled
/// connections are one of its subclasses), pqxx::connection from libpqxx 7 on
/// (pgpipe opens the libpq connection itself and hands it to a
/// pqxx::connection). Either way the pool sees libpq's transaction status and
/// honours pool_params::connect_timeout.
class blocking_lease {
 public:
#if PQXX_VERSION_MAJOR < 7
  /// What every libpqxx transaction class takes (libpqxx 6.4: the base of the pooled connection).
  using connection_type = pqxx::connection_base;
#else
  /// What every libpqxx transaction class takes (libpqxx 7 on: holds the libpq connection pgpipe opened).
  using connection_type = pqxx::connection;
#endif
  blocking_lease() noexcept = default;
  /// Moves the connection; `other` is empty afterwards (a move-assignment
  /// first gives back the connection this lease held).
  ///@{
  blocking_lease(blocking_lease&& other) noexcept;
  blocking_lease& operator=(blocking_lease&& other) noexcept;
  ///@}
  blocking_lease(const blocking_lease&) = delete;
  blocking_lease& operator=(const blocking_lease&) = delete;
  /// Returns the connection (see release()). Never throws.
  ~blocking_lease();

  /// The leased connection. Precondition: the lease is valid (operator bool).
  ///@{
  connection_type& operator*() const noexcept;
  connection_type* operator->() const noexcept;
  connection_type& connection() const noexcept { return **this; }
  ///@}

  /// False for a default-constructed, moved-from or released lease.
  explicit operator bool() const noexcept { return conn_ != nullptr; }

  /// Gives the connection back now (what the destructor does): rolls back an
  /// open transaction block, discards the connection when it is broken or
  /// cannot be cleaned. Blocks for at most one ROLLBACK round trip. Never
  /// throws; the lease is empty afterwards.
  void release() noexcept;

  /// Gives the connection back and tells the pool to close it rather than
  /// reuse it (for example after changing session state you do not want the
  /// next borrower to inherit). The pool opens a replacement on demand.
  void discard() noexcept;

  /// Marks the connection as broken without giving it back yet; the pool
  /// discards it on release. Used by the error translation when libpqxx
  /// reports a lost connection.
  void mark_broken() noexcept { broken_ = true; }

  /// Runs one statement on this connection with libpq (no libpqxx
  /// transaction object, no libpqxx call) and returns its rows or command
  /// tag as a pgpipe::result, read as the async driver's (result.hpp).
  /// `args` are $1, $2... encoded as async_client::async_query encodes
  /// them (type_traits.hpp: binary and typed where the async driver sends
  /// binary, so both drivers infer the same parameter types).
  /// With pool_params::prepared_statements (the default) the statement is
  /// prepared on this connection the first time it sees the text (and
  /// parameter types) and reused, up to 1000 per connection, the least
  /// recently used one deallocated to make room (as the async driver); a
  /// cached statement that a migration made stale is prepared again and run
  /// again (at most 3 times), outside a transaction block.
  /// Notifications that arrive meanwhile stay queued in libpq: libpqxx
  /// delivers them at its next call on this connection (get_notifs(), or
  /// any statement run through a libpqxx transaction); the queue is emptied
  /// when the lease gives the connection back.
  /// Throws pgpipe::error: the statement's SQLSTATE with the server's
  /// diagnostics; 25P02 when a COMMIT (END, PREPARE TRANSACTION) was answered
  /// ROLLBACK (the transaction had failed); errc::connection_lost (the
  /// connection is discarded on release; the statement may have executed);
  /// errc::invalid_argument before anything is sent, for `sql` or a text
  /// parameter holding a NUL byte, a value over the server's size limits
  /// (param_limits.hpp) or over 65535 parameters, and after a COPY ... FROM
  /// STDIN / TO STDOUT (use blocking_copy_in / blocking_copy_out; the connection is discarded).
  /// Precondition: valid lease, used by one thread, no libpqxx transaction
  /// object open on it (the statement would run inside it unseen).
  template <class... Args>
  [[nodiscard]] result exec(std::string_view sql, const Args&... args) {
    return exec_encoded(sql, detail::encode_params(args...));
  }
  /// exec, with the result values in the format `results` asks for
  /// (result_format::binary: binary values, read with get<T>(); automatic
  /// and text: text). Same contract otherwise.
  template <class... Args>
  [[nodiscard]] result exec(result_format results, std::string_view sql, const Args&... args) {
    return exec_encoded(sql, detail::encode_params(args...), results == result_format::binary);
  }

  /// Runs `sql`, a script of statements separated by semicolons (a
  /// migration, a schema), as one simple query: no parameters, no prepared
  /// statement. Returns the last statement's result. Statements without a
  /// BEGIN/COMMIT of their own run as one implicit transaction, so a
  /// failure leaves none of them; after an explicit COMMIT in the script,
  /// what it committed stays; a transaction the script began and failed in
  /// is rolled back (the server runs nothing after the error, COMMIT
  /// included), while one the caller began before stays open and aborted.
  /// A COPY ... FROM STDIN in the script fails it
  /// (57014, naming blocking_copy_in); the rows of a COPY ... TO STDOUT are
  /// dropped. Throws pgpipe::error: the first failing statement's SQLSTATE
  /// and diagnostics (the server skipped the rest of its transaction);
  /// errc::connection_lost (the connection is discarded on release);
  /// errc::invalid_argument before anything is sent, for a text with no
  /// statement or with a NUL byte. Settings the script changes with plain
  /// SET stay on the connection, as with exec().
  /// Precondition: valid lease, used by one thread, no libpqxx transaction
  /// object open on it.
  [[nodiscard]] result execute_script(std::string_view sql);

  /// The name of a prepared statement for `sql` on this connection, declared
  /// with the connection's prepare() the first time this connection sees
  /// `sql` (libpqxx 6.4 then prepares it on the server at its first use, in
  /// the same call; libpqxx 7 prepares it at once). Use with exec_prepared(). The names are the pool's own
  /// ("pgpipe_1", ...): do not unprepare them. A name handed out stays for
  /// the connection's life: it counts towards the connection's bound
  /// (max_prepared_per_connection, the async driver's), and once every name
  /// in it is one handed out, this answers null: run other SQL texts
  /// unnamed (exec_params), so an application that builds SQL strings
  /// cannot grow server memory without bound.
  /// Precondition: valid lease.
  const std::string* statement_for(std::string_view sql);
  /// The most statements statement_for() prepares on one connection.
  static constexpr std::size_t max_prepared_per_connection = 1000;

 private:
  friend class blocking_pool;
  friend struct detail::blocking_pool_impl;
  friend void detail::rethrow_translated(blocking_lease* lease);
  friend struct detail::lease_access;
  friend class detail::exec_watch;  // the observer's slot and backend pid
  /// exec() with its parameters encoded (blocking_pool::exec encodes them
  /// before it borrows a connection); its outcome counted (note_outcome).
  /// `binary_results` asks the server for binary values (resultFormat 1).
  result exec_encoded(std::string_view sql, detail::encoded_params params, bool binary_results = false);
  /// exec_encoded without the counting.
  result run_encoded(std::string_view sql, detail::encoded_params params, bool binary_results = false);
  /// exec(), after an error that only a transaction pooler explains (42P05
  /// for a name this connection never used, 26000 for a statement just
  /// prepared): this connection stops naming statements, the pool logs it
  /// once per connection (`first_sign`), and the error is thrown with the SQLSTATE and a
  /// client message naming the cause and pool_params::prepared_statements = false.
  [[noreturn]] void pooler_suspected(const PGresult* res, bool first_sign);
  /// A statement run through this lease's API (exec, execute_script) ended:
  /// counted once in the pool's stats().completed and, failed, by its kind.
  void note_outcome(const std::error_code& ec) noexcept;
  /// Counts a failed statement in the pool's stats() errors only: one run
  /// through libpqxx, whose successes the pool never sees.
  void note_error(const std::error_code& ec) noexcept;
  blocking_lease(std::shared_ptr<detail::blocking_pool_impl> pool, std::uint64_t slot,
                 detail::pooled_connection* conn) noexcept;

  std::shared_ptr<detail::blocking_pool_impl> pool_;
  std::uint64_t slot_ = 0;
  detail::pooled_connection* conn_ = nullptr;
  bool broken_ = false;
};

}  // namespace pgpipe
