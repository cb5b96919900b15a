#include "async/pq_errors.hpp"

#include <memory>

namespace pgpipe::detail {

namespace {
std::string field_of(const PGresult* res, int code) {
  const char* v = PQresultErrorField(res, code);
  return v ? std::string(v) : std::string();
}
bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }
}  // namespace

diagnostics diagnostics_of(const PGresult* res) {
  diagnostics d;
  if (!res) return d;
  d.severity = field_of(res, PG_DIAG_SEVERITY_NONLOCALIZED);
  if (d.severity.empty()) d.severity = field_of(res, PG_DIAG_SEVERITY);
  d.sqlstate = field_of(res, PG_DIAG_SQLSTATE);
  d.message = field_of(res, PG_DIAG_MESSAGE_PRIMARY);
  d.detail = field_of(res, PG_DIAG_MESSAGE_DETAIL);
  d.hint = field_of(res, PG_DIAG_MESSAGE_HINT);
  d.context = field_of(res, PG_DIAG_CONTEXT);
  if (d.message.empty()) {
    // Errors libpq made up itself carry only the whole message.
    std::string m = PQresultErrorMessage(res);
    while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
    d.client_message = std::move(m);
  }
  return d;
}

bool is_session_fatal(const PGresult* res) {
  const char* s = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
  if (!s) return false;
  std::string_view sv(s);
  return sv == "FATAL" || sv == "PANIC";
}

std::error_code classify_connect_error(std::string_view m) {
  // Server-sent FATALs first: they name the reason precisely.
  if (contains(m, "password authentication failed") || contains(m, "authentication failed") ||
      contains(m, "no password supplied") || contains(m, "fe_sendauth") ||
      contains(m, "no pg_hba.conf entry") || contains(m, "SCRAM authentication") ||
      contains(m, "server requested a cleartext password") || contains(m, "password retrieved from file"))
    return make_error_code(errc::auth_failed);
  if (contains(m, "too many clients") || contains(m, "too many connections") ||
      contains(m, "remaining connection slots are reserved"))
    return make_sqlstate("53300");
  if (contains(m, "database \"") && contains(m, "does not exist")) return make_sqlstate("3D000");
  if (contains(m, "role \"") && contains(m, "does not exist")) return make_sqlstate("28000");
  if (contains(m, "the database system is starting up") || contains(m, "the database system is shutting down") ||
      contains(m, "the database system is in recovery mode") || contains(m, "not yet accepting connections"))
    return make_sqlstate("57P03");
  if (contains(m, "invalid connection option") || contains(m, "missing \"=\"") ||
      contains(m, "invalid URI") || contains(m, "unterminated quoted string") ||
      contains(m, "invalid integer value") || contains(m, "invalid port number") ||
      contains(m, "invalid sslmode") || contains(m, "invalid target_session_attrs") ||
      contains(m, "invalid percent-encoded token") || contains(m, "invalid value for parameter"))
    return make_error_code(errc::bad_conninfo);
  if (contains(m, "Connection refused") || contains(m, "could not translate host name") ||
      contains(m, "timeout expired") || contains(m, "Network is unreachable") || contains(m, "No route to host") ||
      contains(m, "No such file or directory") || contains(m, "Host is unreachable") ||
      contains(m, "Connection timed out") || contains(m, "could not connect to server") ||
      contains(m, "Connection reset by peer") || contains(m, "server closed the connection unexpectedly"))
    return make_error_code(errc::server_unreachable);
  return make_error_code(errc::connect_failed);
}

std::string clean_message(std::string_view message, std::string_view secret) {
  std::string m(message);
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  // Multi-line libpq messages read better on one log line.
  for (auto& c : m)
    if (c == '\n') c = ' ';
  if (!secret.empty()) m = redact_secret(std::move(m), secret);
  return m;
}

std::string password_of(const std::string& conninfo) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
  if (err) PQfreemem(err);
  if (!opts) return {};
  std::string pw;
  for (PQconninfoOption* o = opts; o->keyword; ++o)
    if (std::string_view(o->keyword) == "password" && o->val) pw = o->val;
  PQconninfoFree(opts);
  return pw;
}

}  // namespace pgpipe::detail
