#include "pq/pq_errors.hpp"

#include <algorithm>
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

std::string clean_message(std::string_view message, const std::vector<std::string>& secrets) {
  std::string m(message);
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  // Multi-line libpq messages read better on one log line.
  for (auto& c : m)
    if (c == '\n') c = ' ';
  for (const auto& s : secrets) m = redact_secret(std::move(m), s);
  return m;
}

namespace {

void add_secret(std::vector<std::string>& out, std::string s) {
  if (s.empty()) return;
  for (const auto& x : out)
    if (x == s) return;
  out.push_back(std::move(s));
}

std::string percent_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
      };
      int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

// Value after "password=" in key=value text: quoted (up to the closing
// quote, or the next blank when unterminated) or up to the next blank.
void scan_keyword_passwords(std::string_view c, std::vector<std::string>& out) {
  for (std::size_t pos = c.find("password"); pos != std::string_view::npos; pos = c.find("password", pos + 1)) {
    std::size_t i = pos + 8;
    while (i < c.size() && c[i] == ' ') ++i;
    if (i >= c.size() || c[i] != '=') continue;
    ++i;
    while (i < c.size() && c[i] == ' ') ++i;
    if (i >= c.size()) continue;
    std::string v;
    if (c[i] == '\'') {
      std::size_t j = i + 1;
      std::string whole;
      for (; j < c.size() && c[j] != '\''; ++j) {
        if (c[j] == '\\' && j + 1 < c.size()) ++j;
        whole.push_back(c[j]);
      }
      add_secret(out, whole);
      std::size_t b = c.find(' ', i + 1);
      add_secret(out, std::string(c.substr(i + 1, (b == std::string_view::npos ? c.size() : b) - i - 1)));
    } else {
      std::size_t j = i;
      while (j < c.size() && c[j] != ' ' && c[j] != '&') ++j;
      v = std::string(c.substr(i, j - i));
      add_secret(out, v);
      add_secret(out, percent_decode(v));
    }
  }
}

// postgresql://user:password@host...
void scan_uri_userinfo(std::string_view c, std::vector<std::string>& out) {
  auto scheme = c.find("://");
  if (scheme == std::string_view::npos) return;
  auto rest = c.substr(scheme + 3);
  auto at = rest.rfind('@', rest.find_first_of("/?") == std::string_view::npos ? rest.size() : rest.find_first_of("/?"));
  if (at == std::string_view::npos) at = rest.find('@');
  if (at == std::string_view::npos) return;
  auto userinfo = rest.substr(0, at);
  auto colon = userinfo.find(':');
  if (colon == std::string_view::npos) return;
  std::string pw(userinfo.substr(colon + 1));
  add_secret(out, pw);
  add_secret(out, percent_decode(pw));
}

}  // namespace

std::vector<std::string> passwords_of(const std::string& conninfo) {
  std::vector<std::string> out;
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
  if (err) PQfreemem(err);
  if (opts) {
    for (PQconninfoOption* o = opts; o->keyword; ++o)
      if (std::string_view(o->keyword) == "password" && o->val) add_secret(out, o->val);
    PQconninfoFree(opts);
  }
  scan_keyword_passwords(conninfo, out);
  scan_uri_userinfo(conninfo, out);
  // Longest first, so a secret containing another is scrubbed whole.
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  return out;
}

std::string conninfo_parse_error(const std::string& conninfo, const std::vector<std::string>& secrets) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
  std::string m;
  if (!opts) m = clean_message(err ? err : "invalid connection string", secrets);
  if (err) PQfreemem(err);
  if (opts) PQconninfoFree(opts);
  return m;
}

}  // namespace pgpipe::detail
