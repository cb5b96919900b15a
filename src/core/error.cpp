// Error categories, diagnostics and password redaction.
#include <pgpipe/error.hpp>

#include "core/sqlstate_names.hpp"

#include <array>
#include <cctype>
#include <cstdint>

namespace pgpipe {
namespace {

class client_category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "pgpipe"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::pool_timeout: return "no connection became available before the acquire timeout";
      case errc::queue_full: return "too many requests are already waiting for a connection (max_queued)";
      case errc::closed: return "the pool is closed";
      case errc::cancelled: return "the operation was cancelled";
      case errc::query_timeout: return "the query timed out (it may have executed)";
      case errc::not_sent: return "the connection was lost before the request was sent (safe to retry)";
      case errc::connection_lost: return "the connection was lost after the request was sent (it may have executed)";
      case errc::bad_conninfo: return "the connection string is invalid";
      case errc::server_unreachable: return "the server is unreachable";
      case errc::auth_failed: return "authentication failed";
      case errc::connect_failed: return "could not connect to the server";
      case errc::bad_params: return "invalid parameters";
      case errc::invalid_argument: return "invalid query argument";
      case errc::conversion_error: return "the field cannot be converted to the requested type";
      case errc::null_value: return "the field is NULL";
      case errc::out_of_range: return "out of range (a row or column index, or a value the C++ type cannot hold)";
      case errc::protocol_error: return "protocol error";
      case errc::transaction_needs_lease:
        return "transactions cannot run on a shared connection: use a lease (async_acquire)";
      case errc::session_state_needs_lease:
        return "the statement changes session state on a shared connection: use a lease or pool_params::on_connect";
      case errc::type_mismatch: return "the column's type does not match the requested C++ type";
      case errc::unsupported_libpq: return "unsupported libpq version";
      case errc::columns_mismatch: return "the result's columns do not match the row type";
      case errc::dimensions_mismatch:
        return "the array's number of dimensions does not fit the C++ type (std::vector: 1, "
               "std::vector<std::vector>: 2, pgpipe::array: any)";
    }
    return "unknown pgpipe error " + std::to_string(ev);
  }
  bool equivalent(int ev, const std::error_condition& cond) const noexcept override {
    if (cond == errc_condition::auth_error) return static_cast<errc>(ev) == errc::auth_failed;
    return default_error_condition(ev) == cond;
  }
  std::error_condition default_error_condition(int ev) const noexcept override {
    switch (static_cast<errc>(ev)) {
      case errc::not_sent:
      case errc::connection_lost: return errc_condition::connection_lost;
      case errc::pool_timeout:
      case errc::query_timeout: return errc_condition::timeout;
      case errc::bad_conninfo:
      case errc::server_unreachable:
      case errc::auth_failed:
      case errc::connect_failed: return errc_condition::connect_error;
      default: return {ev, *this};
    }
  }
};

// SQLSTATE codes are five characters of [0-9A-Z]: base-36 packs them into an int.
constexpr int base36(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return -1;
}

std::string decode_sqlstate(int ev) {
  std::string s(5, '0');
  for (int i = 4; i >= 0; --i) {
    int d = ev % 36;
    ev /= 36;
    s[static_cast<std::size_t>(i)] = static_cast<char>(d < 10 ? '0' + d : 'A' + d - 10);
  }
  return s;
}

class sqlstate_category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "sqlstate"; }
  std::string message(int ev) const override {
    std::string code = decode_sqlstate(ev);
    if (auto name = detail::sqlstate_name(code); !name.empty()) return "SQLSTATE " + code + " (" + std::string(name) + ")";
    if (auto cls = detail::sqlstate_class_name(code); !cls.empty())
      return "SQLSTATE " + code + " (class " + code.substr(0, 2) + ": " + std::string(cls) + ")";
    return "SQLSTATE " + code;
  }
  std::error_condition default_error_condition(int ev) const noexcept override {
    (void)ev;
    return errc_condition::server_error;
  }
  // Every SQLSTATE is a server error; those a server refuses a connection
  // with are connect errors too, and class 28 is refused credentials.
  bool equivalent(int ev, const std::error_condition& cond) const noexcept override {
    if (cond.category() != condition_category()) return false;
    const bool auth = ev / (36 * 36 * 36) == (2 * 36 + 8);  // class "28"
    switch (static_cast<errc_condition>(cond.value())) {
      case errc_condition::server_error: return true;
      case errc_condition::auth_error: return auth;
      case errc_condition::connect_error: return auth || ev == make_sqlstate("3D000").value();
      default: return false;
    }
  }
};

class condition_category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "pgpipe.condition"; }
  std::string message(int ev) const override {
    switch (static_cast<errc_condition>(ev)) {
      case errc_condition::connection_lost: return "connection lost";
      case errc_condition::timeout: return "timeout";
      case errc_condition::server_error: return "server error";
      case errc_condition::connect_error: return "could not connect";
      case errc_condition::auth_error: return "the credentials were refused";
    }
    return "unknown condition";
  }
};

}  // namespace

const std::error_category& client_category() noexcept {
  static const client_category_impl c;
  return c;
}
const std::error_category& sqlstate_category() noexcept {
  static const sqlstate_category_impl c;
  return c;
}
const std::error_category& condition_category() noexcept {
  static const condition_category_impl c;
  return c;
}

std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), client_category()}; }
std::error_condition make_error_condition(errc_condition e) noexcept {
  return {static_cast<int>(e), condition_category()};
}

std::error_code make_sqlstate(std::string_view sqlstate) noexcept {
  auto encode = [](std::string_view s) {
    int v = 0;
    for (char c : s) v = v * 36 + base36(c);
    return v;
  };
  bool valid = sqlstate.size() == 5;
  for (char c : sqlstate) valid = valid && base36(c) >= 0;
  return {encode(valid ? sqlstate : std::string_view("XX000")), sqlstate_category()};
}

std::string sqlstate_of(const std::error_code& ec) {
  if (ec.category() != sqlstate_category()) return {};
  return decode_sqlstate(ec.value());
}

bool may_have_executed(const std::error_code& ec) noexcept {
  return ec == errc::connection_lost || ec == errc::query_timeout;
}

bool is_connection_lost(const std::error_code& ec) noexcept {
  return ec == errc_condition::connection_lost;
}

std::string diagnostics::to_string() const {
  if (!has_server_error()) return client_message;
  const std::string sev = severity.empty() ? std::string("ERROR") : severity;
  // pgpipe's message may already quote the server's (a connect failure
  // quotes libpq, which quotes the server): then say it once, with the code.
  // A SQLSTATE pgpipe assigned itself (25P02 for a COMMIT answered with
  // ROLLBACK) comes with no server message.
  const bool quoted = !client_message.empty() && !message.empty() && client_message.find(message) != std::string::npos;
  std::string out = quoted ? client_message + " (" + sev + " " + sqlstate + ")" : sev + " " + sqlstate;
  if (!quoted && !message.empty()) out += ": " + message;
  if (!detail.empty() && out.find(detail) == std::string::npos) out += " (detail: " + detail + ")";
  if (!hint.empty() && out.find(hint) == std::string::npos) out += " (hint: " + hint + ")";
  if (!client_message.empty() && !quoted) out = client_message + ": " + out;
  return out;
}

namespace {
// A server error's text names its SQLSTATE already; a client-side one gets
// the code's explanation after pgpipe's message.
std::string what_for(const std::error_code& ec, const diagnostics& d) {
  std::string text = d.to_string();
  if (d.has_server_error()) return text;
  if (text.empty()) return ec.message();
  const std::string m = ec.message();
  return text.find(m) == std::string::npos ? text + ": " + m : text;
}
}  // namespace

error::error(std::error_code ec, diagnostics diag)
    : std::system_error(ec), diag_(std::move(diag)), what_(what_for(ec, diag_)) {}

error::error(std::error_code ec, const std::string& client_message)
    : error(ec, [&] {
        diagnostics d;
        d.client_message = client_message;
        return d;
      }()) {}

namespace {

constexpr std::string_view mask = "********";

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// key=value form, as libpq parses it: values are bare words or single-quoted
// with backslash escapes.
std::string redact_keyword_value(std::string_view in) {
  std::string out;
  std::size_t i = 0;
  while (i < in.size()) {
    // Copy whitespace.
    while (i < in.size() && is_space(in[i])) out += in[i++];
    std::size_t key_start = i;
    while (i < in.size() && in[i] != '=' && !is_space(in[i])) ++i;
    std::string_view key = in.substr(key_start, i - key_start);
    out.append(key);
    while (i < in.size() && is_space(in[i])) out += in[i++];
    if (i >= in.size() || in[i] != '=') continue;
    out += in[i++];
    while (i < in.size() && is_space(in[i])) out += in[i++];
    std::size_t value_start = i;
    if (i < in.size() && in[i] == '\'') {
      ++i;
      while (i < in.size() && in[i] != '\'') i += (in[i] == '\\' && i + 1 < in.size()) ? 2 : 1;
      if (i < in.size()) ++i;
    } else {
      while (i < in.size() && !is_space(in[i])) i += (in[i] == '\\' && i + 1 < in.size()) ? 2 : 1;
    }
    if (key == "password")
      out.append(mask);
    else
      out.append(in.substr(value_start, i - value_start));
  }
  return out;
}

// postgresql://user:secret@host/db?password=secret&...
std::string redact_uri(std::string_view in) {
  std::string out(in);
  std::size_t scheme_end = out.find("://");
  std::size_t authority = scheme_end + 3;
  std::size_t path = out.find_first_of("/?", authority);
  std::size_t at = out.rfind('@', path == std::string::npos ? std::string::npos : path);
  if (at != std::string::npos && at >= authority) {
    std::size_t colon = out.find(':', authority);
    if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, mask);
  }
  std::size_t query = out.find('?', authority);
  while (query != std::string::npos) {
    std::size_t key = query + 1;
    std::size_t eq = out.find('=', key);
    std::size_t amp = out.find('&', key);
    if (eq != std::string::npos && (amp == std::string::npos || eq < amp) &&
        out.compare(key, eq - key, "password") == 0) {
      std::size_t end = amp == std::string::npos ? out.size() : amp;
      out.replace(eq + 1, end - eq - 1, mask);
      amp = out.find('&', eq + 1);
    }
    query = amp;
  }
  return out;
}

}  // namespace

std::string redact_conninfo(std::string_view conninfo) {
  if (conninfo.starts_with("postgresql://") || conninfo.starts_with("postgres://")) return redact_uri(conninfo);
  return redact_keyword_value(conninfo);
}

std::string redact_secret(std::string text, std::string_view secret) {
  if (secret.empty()) return text;
  for (std::size_t pos = text.find(secret); pos != std::string::npos; pos = text.find(secret, pos + mask.size()))
    text.replace(pos, secret.size(), mask);
  return text;
}

}  // namespace pgpipe
