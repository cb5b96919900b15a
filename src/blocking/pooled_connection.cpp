#include "blocking/pooled_connection.hpp"

#include <pqxx/nontransaction>

#include <poll.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string_view>
#include <vector>

namespace pgpipe::detail {
namespace {

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// libpq prints a server error received while connecting as
// "connection to server at ... failed: FATAL:  <message>" (severity and
// message, no SQLSTATE: libpq 15 keeps no PGresult for it). Pull the server
// part out so diagnostics keep the server's words apart from ours.
void parse_server_part(const std::string& msg, diagnostics& diag) {
  for (std::string_view severity : {"FATAL:  ", "ERROR:  ", "PANIC:  "}) {
    auto pos = msg.find(severity);
    if (pos == std::string::npos) continue;
    diag.severity = std::string(severity.substr(0, severity.size() - 3));
    auto rest = msg.substr(pos + severity.size());
    auto nl = rest.find('\n');
    diag.message = trim(rest.substr(0, nl));
    return;
  }
}

struct sqlstate_hint {
  std::string_view text;
  std::string_view also;  ///< must appear too (empty: no second condition)
  std::string_view sqlstate;
};

// Server messages whose SQLSTATE a pool needs (pool_core treats 3D000 and
// 28xxx as permanent, 53300 and 57P03 as transient) but which libpq 15 reports
// only as text. First match wins. English messages: lc_messages of a
// non-English server defeats this, and the error falls back to connect_failed.
constexpr std::array<sqlstate_hint, 8> server_hints{{
    {"too many clients", "", "53300"},
    {"too many connections", "", "53300"},  // ... for role "x" / for database "x" (connection limits)
    {"remaining connection slots are reserved", "", "53300"},
    {"role \"", "does not exist", "28000"},  // what the async driver reports too
    {"database \"", "does not exist", "3D000"},
    {"the database system is starting up", "", "57P03"},
    {"the database system is shutting down", "", "57P03"},
    {"the database system is in recovery mode", "", "57P03"},
}};

}  // namespace

namespace {

void replace_all(std::string& text, std::string_view what, std::string_view with) {
  if (what.empty()) return;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + with.size())) {
    text.replace(pos, what.size(), with);
  }
}

// What might be a password in a connection string that libpq could not
// parse (so libpq cannot tell us): the userinfo password of a URI and the
// value of password=, quoted or not, terminated or not.
std::vector<std::string> password_candidates(std::string_view conninfo) {
  std::vector<std::string> out;
  if (auto scheme = conninfo.find("://"); scheme != std::string_view::npos) {
    auto rest = conninfo.substr(scheme + 3);
    auto at = rest.rfind('@');
    auto colon = rest.find(':');
    if (at != std::string_view::npos && colon != std::string_view::npos && colon < at) {
      out.emplace_back(rest.substr(colon + 1, at - colon - 1));
    }
    for (auto p = conninfo.find("password="); p != std::string_view::npos; p = conninfo.find("password=", p + 1)) {
      auto v = conninfo.substr(p + 9);
      out.emplace_back(v.substr(0, v.find('&')));
    }
    return out;
  }
  for (auto p = conninfo.find("password"); p != std::string_view::npos; p = conninfo.find("password", p + 1)) {
    auto v = conninfo.substr(p + 8);
    while (!v.empty() && (v.front() == ' ' || v.front() == '=')) v.remove_prefix(1);
    if (!v.empty() && v.front() == '\'') {
      v.remove_prefix(1);
      out.emplace_back(v.substr(0, v.find('\'')));  // unterminated: up to the end
    }
    out.emplace_back(v.substr(0, v.find_first_of(" \t\n")));
  }
  return out;
}

}  // namespace

connect_settings make_connect_settings(const std::string& conninfo, std::chrono::milliseconds connect_timeout) {
  char* errmsg = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &errmsg);
  if (opts == nullptr) {
    std::string why = errmsg != nullptr ? trim(errmsg) : std::string("out of memory");
    if (errmsg != nullptr) PQfreemem(errmsg);
    // libpq quotes what it could not parse, a whole URI included, password
    // and all: mask the string itself, then anything that looks like its
    // password.
    const std::string redacted = redact_conninfo(conninfo);
    replace_all(why, conninfo, redacted);
    for (const auto& secret : password_candidates(conninfo)) {
      if (!secret.empty()) why = redact_secret(std::move(why), secret);
    }
    throw error(errc::bad_conninfo, "invalid connection string (" + redacted + "): " + why);
  }
  connect_settings out;
  out.conninfo = conninfo;
  out.connect_timeout = connect_timeout;
  for (PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
    if (std::string_view(o->keyword) == "password" && o->val != nullptr) out.password = o->val;
  }
  PQconninfoFree(opts);
  return out;
}

std::error_code classify_connect_error(const std::string& libpq_message, bool needs_password,
                                       const std::string& password, diagnostics& diag) {
  std::string msg = trim(password.empty() ? libpq_message : redact_secret(libpq_message, password));
  parse_server_part(msg, diag);
  diag.client_message = "could not connect: " + msg;

  std::error_code ec;
  if (contains(msg, "password authentication failed") || contains(msg, "no password supplied") ||
      contains(msg, "SCRAM authentication") || contains(msg, "no pg_hba.conf entry") ||
      contains(msg, "authentication failed") || needs_password) {
    ec = errc::auth_failed;
    diag.sqlstate = contains(msg, "password authentication failed") ? "28P01" : diag.message.empty() ? "" : "28000";
  } else if (contains(msg, "invalid connection option") || contains(msg, "missing \"=\"") ||
             contains(msg, "invalid URI") || contains(msg, "unterminated quoted string") ||
             contains(msg, "invalid integer value") || contains(msg, "invalid port number") ||
             contains(msg, "invalid sslmode") || contains(msg, "invalid value for parameter")) {
    ec = errc::bad_conninfo;
  } else if (!diag.message.empty()) {
    // The server answered: look for the conditions the pool treats specially.
    ec = errc::connect_failed;
    for (const auto& h : server_hints) {
      if (contains(diag.message, h.text) && (h.also.empty() || contains(diag.message, h.also))) {
        diag.sqlstate = std::string(h.sqlstate);
        ec = make_sqlstate(h.sqlstate);
        break;
      }
    }
  } else if (contains(msg, "Connection refused") || contains(msg, "could not connect") ||
             contains(msg, "could not translate host name") || contains(msg, "No such file or directory") ||
             contains(msg, "timeout expired") || contains(msg, "Network is unreachable") ||
             contains(msg, "No route to host") || contains(msg, "Connection timed out") ||
             contains(msg, "server closed the connection unexpectedly") ||
             contains(msg, "Name or service not known") || contains(msg, "Temporary failure in name resolution")) {
    ec = errc::server_unreachable;
  } else {
    ec = errc::connect_failed;
  }
  // A message without a server part carries no SQLSTATE: keep diag's
  // "server error" fields empty so has_server_error() tells the truth.
  if (diag.message.empty()) diag.sqlstate.clear();
  return ec;
}

recording_policy::handle recording_policy::do_startconnect(handle orig) {
  if (orig != nullptr) return orig;
  // Our settings come first so that a value in the user's conninfo (expanded
  // from "dbname" by expand_dbname=1) overrides them.
  const auto seconds = std::max<long long>(
      1, (settings_->connect_timeout.count() + 999) / 1000);  // libpq counts whole seconds
  const std::string timeout = std::to_string(seconds);
  const char* keys[] = {"connect_timeout", "dbname", nullptr};
  const char* values[] = {timeout.c_str(), settings_->conninfo.c_str(), nullptr};
  PGconn* conn = PQconnectdbParams(keys, values, 1);
  if (conn == nullptr) throw std::bad_alloc();
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(conn);
    const bool needs_password = PQconnectionNeedsPassword(conn) != 0;
    PQfinish(conn);
    diagnostics diag;
    const std::error_code ec = classify_connect_error(msg, needs_password, settings_->password, diag);
    throw error(ec, std::move(diag));
  }
  handle_ = conn;
  return conn;
}

recording_policy::handle recording_policy::do_dropconnect(handle orig) noexcept {
  handle_ = nullptr;
  return pqxx::connectionpolicy::do_dropconnect(orig);
}

recording_policy::handle recording_policy::do_disconnect(handle orig) noexcept {
  handle_ = nullptr;
  return pqxx::connectionpolicy::do_disconnect(orig);
}

pooled_connection::pooled_connection(const connect_settings& settings)
    : pqxx::connection_base(policy_), policy_(settings.conninfo) {
  policy_.configure(&settings);
  init();
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
  // The settings object may not outlive us; the policy needs it only to connect.
  policy_.configure(nullptr);
}

pooled_connection::~pooled_connection() noexcept { close(); }

bool pooled_connection::looks_alive() noexcept {
  PGconn* c = raw();
  if (c == nullptr || PQstatus(c) != CONNECTION_OK || !is_open()) return false;
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
  if (c == nullptr || !is_open()) return false;
  switch (PQtransactionStatus(c)) {
    case PQTRANS_IDLE: return true;
    case PQTRANS_INTRANS:
    case PQTRANS_INERROR: break;
    default: return false;  // a query still running (ACTIVE) or a dead link (UNKNOWN)
  }
  try {
    // Throws usage_error when a pqxx transaction object is still open on this
    // connection: then it is not ours to clean, and the connection goes.
    pqxx::nontransaction tx{*this, "pgpipe_rollback"};
    tx.exec0("ROLLBACK");
  } catch (...) {
    return false;
  }
  return is_open() && PQtransactionStatus(c) == PQTRANS_IDLE;
}

const std::string* pooled_connection::statement_for(std::string_view sql, std::size_t max_statements) {
  std::string key(sql);
  auto it = statements_.find(key);
  if (it != statements_.end()) return &it->second;
  if (statements_.size() >= max_statements) return nullptr;
  std::string name = "pgpipe_s" + std::to_string(++next_statement_);
  prepare(name, key);  // declared only: libpqxx prepares on first use
  return &statements_.emplace(std::move(key), std::move(name)).first->second;
}

const std::string* pooled_connection::renew_statement(std::string_view sql) {
  auto it = statements_.find(std::string(sql));
  if (it == statements_.end()) return nullptr;
  try {
    // DEALLOCATE when libpqxx had prepared it; after 26000 the server has no
    // such statement and this throws: nothing left to free then.
    unprepare(it->second);
  } catch (const std::exception&) {
  }
  it->second = "pgpipe_s" + std::to_string(++next_statement_);
  prepare(it->second, it->first);
  return &it->second;
}

bool pooled_connection::health_check() noexcept {
  if (!looks_alive()) return false;
  try {
    pqxx::nontransaction tx{*this, "pgpipe_check"};
    tx.exec0("SELECT 1");
  } catch (...) {
    return false;
  }
  return is_open() && PQtransactionStatus(raw()) == PQTRANS_IDLE;
}

}  // namespace pgpipe::detail
