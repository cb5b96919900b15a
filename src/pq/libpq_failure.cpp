#include "pq/libpq_failure.hpp"

#include "core/pool/connect_error.hpp"

#include <algorithm>
#include <charconv>
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
  d.schema = field_of(res, PG_DIAG_SCHEMA_NAME);
  d.table = field_of(res, PG_DIAG_TABLE_NAME);
  d.column = field_of(res, PG_DIAG_COLUMN_NAME);
  d.datatype = field_of(res, PG_DIAG_DATATYPE_NAME);
  d.constraint = field_of(res, PG_DIAG_CONSTRAINT_NAME);
  const std::string pos = field_of(res, PG_DIAG_STATEMENT_POSITION);
  int p = 0;
  // A position that does not parse (or does not fit) is left out, never guessed.
  if (auto [end, ec] = std::from_chars(pos.data(), pos.data() + pos.size(), p); ec == std::errc{} && p > 0)
    d.position = p;
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

namespace {

// Server messages whose SQLSTATE a pool needs (pool_core treats 3D000 and
// 28xxx as permanent, 53300 and 57P03 as transient) but which libpq 15
// reports only as text. First match wins.
struct sqlstate_hint {
  std::string_view text;
  std::string_view also;  ///< must appear too (empty: no second condition)
  std::string_view sqlstate;
};
constexpr sqlstate_hint server_hints[] = {
    {"too many clients", "", "53300"},
    {"too many connections", "", "53300"},  // ... for role "x" / for database "x" (connection limits)
    {"remaining connection slots are reserved", "", "53300"},
    {"role \"", "does not exist", "28000"},
    {"database \"", "does not exist", "3D000"},
    {"the database system is starting up", "", "57P03"},
    {"the database system is shutting down", "", "57P03"},
    {"the database system is in recovery mode", "", "57P03"},
    {"the database system is not yet accepting connections", "", "57P03"},
    {"the database system is not accepting connections", "", "57P03"},
};

// Rejected credentials, whether the server said so (FATAL 28P01/28000) or
// libpq gave up before asking (no password to send, a method it refuses).
constexpr std::string_view auth_texts[] = {
    "password authentication failed", "authentication failed", "no password supplied", "fe_sendauth",
    "no pg_hba.conf entry", "SCRAM authentication", "server requested a cleartext password",
    "password retrieved from file", "channel binding required", "server did not complete authentication",
};

// libpq's own words for a connection string it cannot use.
constexpr std::string_view conninfo_texts[] = {
    "invalid connection option", "missing \"=\"", "invalid URI", "unterminated quoted string",
    "invalid integer value", "invalid port number", "invalid sslmode", "invalid target_session_attrs",
    "invalid percent-encoded token", "invalid value for parameter", "invalid channel_binding value",
    "invalid gssencmode value", "invalid require_auth",
};

// The network or the host, before any server answered.
constexpr std::string_view unreachable_texts[] = {
    "Connection refused", "could not connect", "could not translate host name", "No such file or directory",
    "timeout expired", "Network is unreachable", "No route to host", "Host is unreachable",
    "Connection timed out", "Connection reset by peer", "server closed the connection unexpectedly",
    "Name or service not known", "Temporary failure in name resolution",
};

template <std::size_t N>
bool contains_any(std::string_view m, const std::string_view (&texts)[N]) {
  for (auto t : texts)
    if (contains(m, t)) return true;
  return false;
}

// libpq prints a server error received while connecting as
// "connection to server at ... failed: FATAL:  <message>" (severity and
// message, no SQLSTATE). Keep the server's words apart from ours.
void parse_server_part(std::string_view msg, diagnostics& d) {
  for (std::string_view severity : {"FATAL:  ", "ERROR:  ", "PANIC:  "}) {
    auto pos = msg.find(severity);
    if (pos == std::string_view::npos) continue;
    d.severity = std::string(severity.substr(0, severity.size() - 3));
    auto rest = msg.substr(pos + severity.size());
    rest = rest.substr(0, rest.find('\n'));
    while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\r')) rest.remove_suffix(1);
    d.message = std::string(rest);
    return;
  }
}

}  // namespace

connect_failure classify_connect_failure(std::string_view libpq_message, bool needs_password,
                                         const std::vector<std::string>& secrets) {
  connect_failure f;
  // Server part first, from the multi-line text (its first line ends it).
  std::string scrubbed(libpq_message);
  for (const auto& s : secrets) scrubbed = redact_secret(std::move(scrubbed), s);
  parse_server_part(scrubbed, f.diag);
  f.message = clean_message(scrubbed, {});
  f.diag.client_message = connect_error_text(f.message);
  // Classified on libpq's own words: a password that happens to occur in
  // them (a short one, or "TCP") must not change the error kind.
  const std::string raw = clean_message(std::string(libpq_message), {});
  const std::string_view m = raw;

  if (contains_any(m, auth_texts) || needs_password) {
    // When the server refused the credentials, its SQLSTATE is the code
    // (sqlstate_of() gives it; errc_condition::auth_error matches both);
    // errc::auth_failed is for libpq giving up before the server said.
    f.ec = errc::auth_failed;
    if (!f.diag.message.empty()) {
      f.diag.sqlstate = contains(m, "password authentication failed") ? "28P01" : "28000";
      f.ec = make_sqlstate(f.diag.sqlstate);
    }
  } else if (contains_any(m, conninfo_texts)) {
    f.ec = errc::bad_conninfo;
  } else {
    for (const auto& h : server_hints) {
      if (contains(m, h.text) && (h.also.empty() || contains(m, h.also))) {
        f.ec = make_sqlstate(h.sqlstate);
        if (!f.diag.message.empty()) f.diag.sqlstate = std::string(h.sqlstate);
        break;
      }
    }
    if (!f.ec) f.ec = !f.diag.message.empty()     ? make_error_code(errc::connect_failed)
                      : contains_any(m, unreachable_texts) ? make_error_code(errc::server_unreachable)
                                                           : make_error_code(errc::connect_failed);
  }
  // A message without a server part carries no SQLSTATE: keep the "server
  // error" fields empty so diagnostics::has_server_error() tells the truth.
  if (f.diag.message.empty()) f.diag.sqlstate.clear();
  f.kind = kind_of_connect_failure(f.ec, m);
  return f;
}

std::error_code classify_connect_error(std::string_view message) {
  return classify_connect_failure(message, false, {}).ec;
}

namespace {
std::size_t count_of(std::string_view hay, std::string_view needle) {
  std::size_t n = 0;
  for (auto p = hay.find(needle); p != std::string_view::npos; p = hay.find(needle, p + needle.size())) ++n;
  return n;
}
}  // namespace

bool every_host_unknown(std::string_view message) {
  // libpq 15: 'could not translate host name "h" to address: <gai_strerror>'
  // per host it could not resolve; a host it resolved shows as "connection
  // to server at/on ..."; the async walk's own timeout as "timeout expired".
  const std::size_t unresolved = count_of(message, "could not translate host name");
  if (unresolved == 0) return false;
  if (contains(message, "connection to server") || contains(message, "timeout expired")) return false;
  const std::size_t final_answers =
      count_of(message, "Name or service not known") + count_of(message, "No address associated with hostname");
  return final_answers == unresolved;
}

connect_failure_kind kind_of_connect_failure(const std::error_code& ec, std::string_view message) {
  return kind_of_connect_error(ec, every_host_unknown(message));
}

std::string on_connect_failure(std::size_t index, std::string_view sql, std::string_view what) {
  return "pool_params.on_connect[" + std::to_string(index) + "] (" + std::string(sql) + ") failed: " + std::string(what);
}

std::string pooler_suspected_message(std::string_view sqlstate) {
  return "named prepared statement failed with " + std::string(sqlstate) +
         " right after this connection prepared it: the server session changes under the connection, as behind "
         "a transaction pooler (PgBouncer pool_mode = transaction); set pool_params.prepared_statements = false. "
         "This connection sends unnamed statements from now on";
}

std::vector<std::string> secrets_of(PGconn* conn, std::vector<std::string> configured) {
  const char* pw = conn != nullptr ? PQpass(conn) : nullptr;
  if (pw == nullptr || *pw == '\0') return configured;
  std::string s(pw);
  for (const auto& c : configured)
    if (c == s) return configured;
  // Longest first, as passwords_of orders them: a secret containing another
  // is scrubbed whole.
  auto at = std::find_if(configured.begin(), configured.end(), [&](const std::string& c) { return c.size() < s.size(); });
  configured.insert(at, std::move(s));
  return configured;
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

void scrub(diagnostics& d, const std::vector<std::string>& secrets) {
  if (secrets.empty()) return;
  // Severity and SQLSTATE are codes, never quoted text.
  for (std::string* f : {&d.message, &d.detail, &d.hint, &d.context, &d.schema, &d.table,
                         &d.column, &d.datatype, &d.constraint, &d.client_message}) {
    for (const auto& s : secrets) *f = redact_secret(std::move(*f), s);
  }
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
  // '&' ends a value only in a URI's query string; in keyword/value form it
  // is part of the password, and cutting there would make a short prefix a
  // "secret" that scrubs letters out of every message (and out of the words
  // the classifier looks for).
  const bool uri = c.find("://") != std::string_view::npos;
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
      while (j < c.size() && c[j] != ' ' && !(uri && c[j] == '&')) ++j;
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

std::vector<std::string> passwords_of(std::string_view conninfo) {
  std::vector<std::string> out;
  char* err = nullptr;
  const std::string c(conninfo);
  PQconninfoOption* opts = PQconninfoParse(c.c_str(), &err);
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
  if (!opts) {
    m = err ? err : "invalid connection string";
    // libpq quotes what it could not parse, a whole URI included, password
    // and all: mask the string itself, then anything that looks like its password.
    if (!conninfo.empty()) {
      const std::string redacted = redact_conninfo(conninfo);
      for (auto pos = m.find(conninfo); pos != std::string::npos; pos = m.find(conninfo, pos + redacted.size()))
        m.replace(pos, conninfo.size(), redacted);
    }
    m = clean_message(m, secrets);
  }
  if (err) PQfreemem(err);
  if (opts) PQconninfoFree(opts);
  return m;
}

std::optional<std::size_t> first_value_with_nul(const std::vector<std::optional<std::string>>& values) {
  for (std::size_t i = 0; i < values.size(); ++i)
    if (values[i] && values[i]->find('\0') != std::string::npos) return i;
  return std::nullopt;
}

std::string nul_byte_message(std::size_t one_based_index) {
  return "query parameter $" + std::to_string(one_based_index) +
         " contains a NUL byte, which text parameters cannot carry (nothing was sent)";
}

}  // namespace pgpipe::detail
