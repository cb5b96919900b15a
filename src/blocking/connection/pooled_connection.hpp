// pooled_connection: a libpqxx connection the pool can inspect.
//
// libpqxx keeps its PGconn private, but a pool must know what libpq knows
// (the transaction status when a lease comes back, whether the socket shows
// the server has gone) without spending a round trip. So pgpipe opens the
// libpq connection itself, with PQconnectdbParams (pool_params::
// connect_timeout applies, and the connect error is classified before libpqxx
// flattens it into a string), keeps the handle, and gives libpqxx the rest:
//  - libpqxx 6.4: through its public extension point, the connection policy
//    (connection_base takes a connectionpolicy that creates the PGconn), as
//    pqxx::basic_connection_base does; the pooled connection is a
//    connection_base;
//  - libpqxx 7 and 8: pqxx::connection::seize_raw_connection() takes an open
//    PGconn; the pooled connection holds that pqxx::connection (final in 8).
#pragma once

#include <pgpipe/blocking_lease.hpp>
#include <pgpipe/error.hpp>

#include "core/statements/statement_cache.hpp"
#include "pq/connect_hooks.hpp"
#include "pq/notice_route.hpp"

#include <libpq-fe.h>
#include <pqxx/version>
#if PQXX_VERSION_MAJOR < 7
#include <pqxx/connection_base>
#include <pqxx/connectionpolicy>
#else
#include <pqxx/connection>
#endif

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pgpipe::detail {

/// Connect parameters shared by every connection of a pool.
struct connect_settings {
  std::string conninfo;                   ///< as the user gave it (may hold a password)
  std::vector<std::string> secrets;       ///< the password's spellings (passwords_of), scrubbed from messages
  std::chrono::milliseconds connect_timeout{10'000};
  std::vector<std::string> on_connect;    ///< pool_params::on_connect, run before the pool hands it out
  connect_hooks hooks;                    ///< before_connect, load_balance_hosts: run per open
};

/// Parses conninfo (key=value or URI) with libpq. Throws
/// pgpipe::error(errc::bad_conninfo) with libpq's reason (no password).
/// Connect failures are classified by pq/libpq_failure (the async driver's list too).
connect_settings make_connect_settings(const std::string& conninfo, std::chrono::milliseconds connect_timeout);

/// Opens a libpq connection (blocking, up to settings.connect_timeout).
/// Throws pgpipe::error with the classified connect error (no password).
PGconn* open_libpq(const connect_settings& settings);

#if PQXX_VERSION_MAJOR < 7
class recording_policy final : public pqxx::connectionpolicy {
 public:
  explicit recording_policy(const std::string& opts) : pqxx::connectionpolicy{opts} {}
  void configure(const connect_settings* settings) noexcept { settings_ = settings; }

  /// Connects (blocking). Throws pgpipe::error with the classified connect error.
  handle do_startconnect(handle orig) override;
  handle do_dropconnect(handle orig) noexcept override;
  handle do_disconnect(handle orig) noexcept override;
  PGconn* raw() const noexcept { return handle_; }

 private:
  const connect_settings* settings_ = nullptr;
  PGconn* handle_ = nullptr;
};
#endif

#if PQXX_VERSION_MAJOR < 7
class pooled_connection final : public pqxx::connection_base {
#else
class pooled_connection final {
#endif
 public:
  /// Opens the connection (blocks up to connect_timeout). Throws
  /// pgpipe::error with the connect error. libpqxx's silent reconnect is
  /// turned off: a connection that breaks stays broken and the pool replaces
  /// it, so the pool's count of server connections is the truth.
  /// Then runs settings.on_connect (a failure is the connect failure, with
  /// the server's SQLSTATE and message). The server's notices go to
  /// `notices` (pq/notice_route.hpp), never to stderr.
  pooled_connection(const connect_settings& settings, std::uint64_t slot, notice_fn notices);
  ~pooled_connection() noexcept;
  pooled_connection(const pooled_connection&) = delete;
  pooled_connection& operator=(const pooled_connection&) = delete;

  /// What libpqxx code runs on (a lease's operator*).
#if PQXX_VERSION_MAJOR < 7
  blocking_lease::connection_type& pqxx_conn() noexcept { return *this; }
  PGconn* raw() const noexcept { return policy_.raw(); }
#else
  blocking_lease::connection_type& pqxx_conn() noexcept { return conn_; }
  // Null once libpqxx closed it (a user may call close() through the lease).
  PGconn* raw() const noexcept { return conn_.is_open() ? raw_ : nullptr; }
#endif
  /// The password spellings of this connection (the pool's conninfo's and
  /// the one before_connect gave it): scrubbed from every message about it.
  const std::vector<std::string>& secrets() const noexcept { return secrets_; }
  /// The server process serving this connection (0 when not connected), for log lines.
  int backend_pid() const noexcept { return raw() ? PQbackendPID(raw()) : 0; }

  /// No round trip: false when libpq already knows the connection is dead, or
  /// when the idle socket is readable and reading it shows the server closed
  /// it (a terminated backend sends FATAL then EOF). Call only while idle.
  bool looks_alive() noexcept;

  /// Brings a returned connection back to "idle, no transaction": rolls back
  /// an open or failed transaction block. False when it cannot (broken, a
  /// query still running, a libpqxx transaction object still open).
  bool reset_for_reuse() noexcept;

  /// A trivial query ("SELECT 1"); false on any failure.
  bool health_check() noexcept;

  /// See blocking_lease::statement_for: a name the user holds, pinned in
  /// the cache for the connection's life (never evicted).
  const std::string* statement_for(std::string_view sql);
  /// The connection's prepared statements: the policy both drivers follow
  /// (core/statements). blocking_lease::exec prepares its statements with
  /// libpq directly (libpqxx does not know them); statement_for's are
  /// declared to libpqxx, under keys of their own (declared_statement).
  statement_cache& statements() noexcept { return statements_; }
  /// Sends the DEALLOCATE of every name statements() invalidated, in one
  /// round trip, when the server is idle (outside a transaction block a
  /// DEALLOCATE neither fails for an aborted block nor waits for its end);
  /// otherwise they wait for the next call. No round trip when there are none.
  void drop_invalidated();
  /// Frees the notifications libpq queued while exec() ran without libpqxx
  /// (libpqxx delivers and frees them on its own next call); called when the
  /// connection comes back to the pool, so that a LISTEN left on a pooled
  /// connection cannot grow the queue without bound.
  void drop_queued_notifications() noexcept;

 private:
  /// drop_invalidated() for a connection coming back to the pool: false when
  /// it cannot (then the connection goes).
  bool drop_left_statements() noexcept;
  void run_on_connect(const std::vector<std::string>& statements);
  void close_conn() noexcept;

  // Statements die with the connection: one cache per connection.
  statement_cache statements_;
#if PQXX_VERSION_MAJOR < 7
  recording_policy policy_;
#else
  // Owned by conn_ (which closes it); null once closed.
  PGconn* raw_ = nullptr;
  pqxx::connection conn_;
#endif
  std::unique_ptr<notice_route> notices_;
  std::vector<std::string> secrets_;
};

}  // namespace pgpipe::detail
