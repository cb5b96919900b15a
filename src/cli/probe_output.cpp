#include "probe_output.hpp"

#include <cstdio>


namespace pgpipe::cli {
namespace {


std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string method_text(scram::auth_method m) {
  switch (m) {
    case scram::auth_method::trust: return "trust (no password asked)";
    case scram::auth_method::cleartext: return "cleartext password";
    case scram::auth_method::md5: return "MD5 password";
    case scram::auth_method::sasl: return "SASL";
    case scram::auth_method::gss: return "GSSAPI/SSPI (not supported by the probe)";
    case scram::auth_method::unknown: return "unknown (the probe stopped before the server asked)";
  }
  return "unknown";
}

}  // namespace

std::string render_human(const scram::probe_report& r) {
  std::string out;
  auto line = [&](const char* key, const std::string& value) {
    std::string k = std::string(key) + ":";
    k.resize(17, ' ');
    out += k + value + "\n";
  };
  line("server", r.host + (r.host.empty() || r.host.front() == '/' ? " port " : ":") + r.port);
  line("user", r.user);
  line("database", r.dbname);
  line("sslmode", r.sslmode);
  line("TLS", r.tls ? "yes (" + r.tls_version + ", " + r.tls_cipher + ")" : "no");
  line("method", method_text(r.method));
  if (r.method == scram::auth_method::sasl) {
    std::string list;
    for (const auto& m : r.mechanisms) {
      if (!list.empty()) list += ", ";
      list += m;
    }
    line("mechanisms", list);
    if (!r.mechanism_used.empty()) line("mechanism used", r.mechanism_used + " (channel binding: " + r.channel_binding + ")");
    if (r.iterations > 0) {
      line("iterations", std::to_string(r.iterations));
      line("salt length", std::to_string(r.salt_length) + " bytes");
    }
  }
  line("password", r.password_given ? "given" : "not given");
  std::string result;
  switch (r.outcome) {
    case scram::probe_outcome::authenticated:
      result = "authenticated";
      if (r.method == scram::auth_method::sasl) {
        result += r.server_signature_verified ? "; server signature verified" : "; server signature NOT verified";
      }
      if (r.method == scram::auth_method::trust) result += " without a password";
      break;
    case scram::probe_outcome::method_reported:
      result = "method reported; no password given, so no password or proof was sent";
      break;
    case scram::probe_outcome::cleartext_not_sent: result = "not attempted: " + r.client_message; break;
    case scram::probe_outcome::rejected: result = "rejected by the server: " + r.sqlstate + " " + r.server_message; break;
    case scram::probe_outcome::client_error: result = "failed: " + r.client_message; break;
  }
  line("result", result);
  if (!r.session_error.empty()) line("after auth", r.session_error);
  return out;
}

std::string render_json(const scram::probe_report& r) {
  auto s = [&](const std::string& v) { return json_string(v); };
  std::string mechs = "[";
  for (std::size_t i = 0; i < r.mechanisms.size(); ++i) {
    // Appended piecewise: `"," + std::string&&` trips GCC 12's -Wrestrict
    // false positive (GCC PR 105329) in optimised builds.
    if (i != 0) mechs += ',';
    mechs += s(r.mechanisms[i]);
  }
  mechs += "]";
  std::string out = "{";
  out += "\"host\":" + s(r.host) + ",\"port\":" + s(r.port) + ",\"user\":" + s(r.user) + ",\"dbname\":" + s(r.dbname);
  out += ",\"sslmode\":" + s(r.sslmode) + ",\"tls\":" + (r.tls ? "true" : "false");
  out += ",\"tls_version\":" + s(r.tls_version) + ",\"tls_cipher\":" + s(r.tls_cipher);
  out += ",\"method\":" + s(scram::to_string(r.method)) + ",\"mechanisms\":" + mechs;
  out += ",\"mechanism_used\":" + s(r.mechanism_used) + ",\"channel_binding\":" + s(r.channel_binding);
  out += ",\"iterations\":" + std::to_string(r.iterations) + ",\"salt_length\":" + std::to_string(r.salt_length);
  out += ",\"password_given\":" + std::string(r.password_given ? "true" : "false");
  out += ",\"server_signature_verified\":" + std::string(r.server_signature_verified ? "true" : "false");
  out += ",\"outcome\":" + s(scram::to_string(r.outcome));
  out += ",\"sqlstate\":" + s(r.sqlstate) + ",\"server_message\":" + s(r.server_message);
  out += ",\"session_error\":" + s(r.session_error) + ",\"client_message\":" + s(r.client_message);
  out += ",\"exit_code\":" + std::to_string(r.exit_code()) + "}\n";
  return out;
}

}  // namespace pgpipe::cli
