#include "blocking/connection/pooled_connection.hpp"

#include "pq/libpq_failure.hpp"

#include <pgpipe/blocking_lease.hpp>

#include <pgpipe/detail/pqxx_compat.hpp>

#include <pqxx/nontransaction>

#include <poll.h>

#include <algorithm>
#include <memory>
#include <string_view>

namespace pgpipe::detail {

connect_settings make_connect_settings(const std::string& conninfo, std::chrono::milliseconds connect_timeout) {
  connect_settings out;
  out.secrets = passwords_of(conninfo);
  if (auto why = conninfo_parse_error(conninfo, out.secrets); !why.empty())
    throw error(errc::bad_conninfo, "invalid connection string: " + why);
  out.conninfo = conninfo;
  out.connect_timeout = connect_timeout;
  return out;
}

PGconn* open_libpq(const connect_settings& settings) {
  // before_connect and the host order, per open: this is the thread opening
  // the connection, never a caller holding a lock.
  connect_target target =
      prepare_connect_within(settings.hooks, settings.conninfo, settings.secrets,
                             std::max(settings.connect_timeout, std::chrono::milliseconds(1000)));  // as libpq rounds it
  if (target.ec) throw error(target.ec, std::move(target.error_message));
  if (settings.hooks.before_connect) {
    if (auto why = conninfo_parse_error(target.conninfo, target.secrets); !why.empty())
      throw error(errc::bad_conninfo, "invalid connection string from pool_params::before_connect: " + why);
  }
  // Our settings come first so that a value in the user's conninfo (expanded
  // from "dbname" by expand_dbname=1) overrides them.
  const auto seconds = std::max<long long>(
      1, (settings.connect_timeout.count() + 999) / 1000);  // libpq counts whole seconds
  const std::string timeout = std::to_string(seconds);
  const char* keys[] = {"connect_timeout", "dbname", nullptr};
  const char* values[] = {timeout.c_str(), target.conninfo.c_str(), nullptr};
  PGconn* conn = PQconnectdbParams(keys, values, 1);
  if (conn == nullptr) throw std::bad_alloc();
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(conn);
    const bool needs_password = PQconnectionNeedsPassword(conn) != 0;
    PQfinish(conn);
    connect_failure f = classify_connect_failure(msg, needs_password, target.secrets);
    throw error(f.ec, std::move(f.diag));
  }
  return conn;
}

#if PQXX_VERSION_MAJOR < 7
recording_policy::handle recording_policy::do_startconnect(handle orig) {
  if (orig != nullptr) return orig;
  handle_ = open_libpq(*settings_);
  return handle_;
}

recording_policy::handle recording_policy::do_dropconnect(handle orig) noexcept {
  handle_ = nullptr;
  return pqxx::connectionpolicy::do_dropconnect(orig);
}

recording_policy::handle recording_policy::do_disconnect(handle orig) noexcept {
  handle_ = nullptr;
  return pqxx::connectionpolicy::do_disconnect(orig);
}

pooled_connection::pooled_connection(const connect_settings& settings, std::uint64_t slot, notice_fn notices)
    : pqxx::connection_base(policy_), policy_(settings.conninfo) {
  policy_.configure(&settings);
  init();
  // Our receiver, not libpq's stderr printer (libpqxx 6.4 only ever sets the
  // notice *processor*, which the receiver replaces).
  notices_ = std::make_unique<notice_route>(raw(), slot, std::move(notices));
  // Why: libpqxx 6 reconnects silently when a connection is used after it
  // broke. In a pool that would open server connections the pool does not
  // count, outside its connect timeout and back-off. A broken pooled
  // connection is discarded and replaced by the pool instead.
#include <pqxx/internal/ignore-deprecated-pre.hxx>
  inhibit_reactivation(true);
#include <pqxx/internal/ignore-deprecated-post.hxx>
  // Verbose errors carry the SQLSTATE in the text. libpqxx 6.4 turns every
  // class-08 SQLSTATE into pqxx::broken_connection without keeping the code,
  // although 08P01 (e.g. a Bind with the wrong parameter count) leaves the
  // connection healthy; the text is then the only place the code survives.
  set_verbosity(pqxx::connection_base::verbose);
  // libpq keeps the password it logged in with (PQpass), the one
  // before_connect gave too, which the pool's conninfo does not carry.
  secrets_ = secrets_of(raw(), settings.secrets);
  // The settings object may not outlive us; the policy needs it only to connect.
  policy_.configure(nullptr);
  run_on_connect(settings.on_connect);
}
#else
pooled_connection::pooled_connection(const connect_settings& settings, std::uint64_t slot, notice_fn notices)
    : raw_(open_libpq(settings)), conn_(pqxx::connection::seize_raw_connection(raw_)) {
  // Our receiver, not libpq's stderr printer (libpqxx 7 sets only a notice
  // *processor*, and only when an error handler is registered; the receiver
  // replaces both). libpqxx 7 never reconnects by itself.
  notices_ = std::make_unique<notice_route>(raw_, slot, std::move(notices));
  // Verbose errors carry the SQLSTATE in the text: libpqxx turns every
  // class-08 SQLSTATE into pqxx::broken_connection without keeping the code,
  // although 08P01 (e.g. a Bind with the wrong parameter count) leaves the
  // connection healthy; the text is then the only place the code survives.
  conn_.set_verbosity(pqxx::error_verbosity::verbose);
  // libpq keeps the password it logged in with (PQpass), the one
  // before_connect gave too, which the pool's conninfo does not carry.
  secrets_ = secrets_of(raw_, settings.secrets);
  run_on_connect(settings.on_connect);
}
#endif

void pooled_connection::run_on_connect(const std::vector<std::string>& statements) {
  for (std::size_t i = 0; i < statements.size(); ++i) {
    try {
      pqxx::nontransaction tx{pqxx_conn(), "pgpipe_on_connect"};
      tx.exec(statements[i]);
    } catch (...) {
      // The connect failure: the server's code and fields, the entry named.
      diagnostics d;
      const std::error_code ec = translate_exception(std::current_exception(), &d);
      scrub(d, secrets_);
      d.client_message = on_connect_failure(i, statements[i], d.to_string());
      close_conn();
      throw error(ec, std::move(d));
    }
  }
}

pooled_connection::~pooled_connection() noexcept { close_conn(); }

void pooled_connection::close_conn() noexcept {
  try {
#if PQXX_VERSION_MAJOR < 7
    close();  // protected in 6.4
#else
    conn_.close();
    raw_ = nullptr;
#endif
  } catch (...) {
    // Nothing the pool could act on: the handle is gone either way.
  }
}

bool pooled_connection::looks_alive() noexcept {
  PGconn* c = raw();
  if (c == nullptr || PQstatus(c) != CONNECTION_OK || !pqxx_conn().is_open()) return false;
  pollfd p{};
  p.fd = PQsocket(c);
  if (p.fd < 0) return false;
  // POLLRDHUP: the server closed its side. A live session is never
  // half-closed, so that alone proves the backend is gone (terminated,
  // crashed, server stopped), without parsing its goodbye message.
  p.events = POLLIN | POLLRDHUP;
  const int n = ::poll(&p, 1, 0);
  if (n == 0) return true;  // nothing to read: the usual case for an idle connection
  if (n < 0) return true;   // EINTR and friends: no evidence either way
  if ((p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0) return false;
  // Readable while idle and still open: a NOTIFY or ParameterStatus. Read it
  // so that a later close shows up on the next check.
  if (PQconsumeInput(c) == 0) return false;
  return PQstatus(c) == CONNECTION_OK;
}

bool pooled_connection::reset_for_reuse() noexcept {
  PGconn* c = raw();
  if (c == nullptr || !pqxx_conn().is_open()) return false;
  drop_queued_notifications();
  switch (PQtransactionStatus(c)) {
    case PQTRANS_IDLE: return drop_left_statements();
    case PQTRANS_INTRANS:
    case PQTRANS_INERROR: break;
    default: return false;  // a query still running (ACTIVE) or a dead link (UNKNOWN)
  }
  try {
    // Throws usage_error when a pqxx transaction object is still open on this
    // connection: then it is not ours to clean, and the connection goes.
    pqxx::nontransaction tx{pqxx_conn(), "pgpipe_rollback"};
    pqxx_exec0(tx, "ROLLBACK");
  } catch (...) {
    return false;
  }
  return pqxx_conn().is_open() && PQtransactionStatus(c) == PQTRANS_IDLE && drop_left_statements();
}

bool pooled_connection::drop_left_statements() noexcept {
  // Statements invalidated inside the lease's transaction block are dropped
  // before the connection serves anyone else, so the bound holds between
  // leases too.
  try {
    drop_invalidated();
  } catch (const std::bad_alloc&) {
    return false;  // the names stay on the server: the connection goes
  }
  return PQstatus(raw()) == CONNECTION_OK;
}

namespace {

// statement_for's statements are declared to libpqxx, which must know every
// name passed to exec_prepared (6.4 prepares them on first use), while
// exec()'s are prepared with libpq behind libpqxx's back: the same SQL text
// is one statement to each, so the two keep apart. This marker is their
// types part: exec()'s typed keys hold whole 4-byte OIDs, never one byte.
constexpr std::string_view declared_statement{"\x01", 1};

}  // namespace

const std::string* pooled_connection::statement_for(std::string_view sql) {
  const statement_key key(sql, declared_statement);
  if (const std::string* n = statements_.get(key)) return n;
  PGconn* c = raw();
  const std::string* name =
      statements_.put(key, c != nullptr && PQtransactionStatus(c) != PQTRANS_INERROR);
  if (name == nullptr) return nullptr;
  try {
    // libpqxx 6.4 only declares it here (it prepares on first use); 7 sends
    // the Parse now, so a server error (42P05 in a transaction pooler) is
    // thrown from here.
    pqxx_conn().prepare(*name, std::string(sql));
  } catch (...) {
    statements_.invalidate(key, *name, false);
    throw;
  }
  statements_.use(key, *name, +1);  // the user holds the name: never evicted under it
  return name;
}

void pooled_connection::drop_invalidated() {
  PGconn* c = raw();
  if (statements_.invalidated().empty() || c == nullptr || PQtransactionStatus(c) != PQTRANS_IDLE) return;
  std::string sql;
  for (const std::string& name : statements_.invalidated()) sql.append("DEALLOCATE ").append(name).append(";");
  // Every name is one the server still has: none of them fails. Whatever the
  // outcome, the names are not sent again (nothing names them any more).
  std::unique_ptr<PGresult, pgresult_deleter> r{PQexec(c, sql.c_str())};
  statements_.remove_invalidated();
}

void pooled_connection::drop_queued_notifications() noexcept {
  PGconn* c = raw();
  if (c == nullptr) return;
  // PQnotifies pops what libpq already read; it never touches the socket.
  while (PGnotify* n = PQnotifies(c)) PQfreemem(n);
}

bool pooled_connection::health_check() noexcept {
  if (!looks_alive()) return false;
  try {
    pqxx::nontransaction tx{pqxx_conn(), "pgpipe_check"};
    tx.exec("SELECT 1");  // one row: exec0 would throw unexpected_rows
  } catch (...) {
    return false;
  }
  return pqxx_conn().is_open() && PQtransactionStatus(raw()) == PQTRANS_IDLE;
}

}  // namespace pgpipe::detail
