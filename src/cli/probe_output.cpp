#include "cli/probe_output.hpp"

#include "json_output/json_output.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

namespace pgpipe::cli {
namespace {

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
  if (r.outcome == scram::probe_outcome::invalid_options) {
    // Nothing was read from the string that could be trusted, nothing sent.
    line("password", r.password_given ? "given" : "not given");
    line("result", "connection string refused: " + r.client_message);
    return out;
  }
  line("server", r.host + (r.host.empty() || r.host.front() == '/' ? " port " : ":") + r.port);
  line("user", r.user);
  line("database", r.dbname);
  line("sslmode", r.sslmode);
  std::string options;
  for (const auto& o : r.options_in_force) options += (options.empty() ? "" : ", ") + o;
  line("options set", options.empty() ? "none (libpq's defaults)" : options);
  line("TLS", r.tls ? "yes (" + r.tls_version + ", " + r.tls_cipher + ")" : "no");
  if (!r.protocol_version.empty()) line("protocol", r.protocol_version);
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
    case scram::probe_outcome::rejected:
      result = (r.password_rejected ? "password rejected by the server: " : "rejected by the server: ") + r.sqlstate + " " +
               r.server_message;
      break;
    case scram::probe_outcome::invalid_options: break;  // rendered above
    case scram::probe_outcome::client_error: result = "failed: " + r.client_message; break;
  }
  line("result", result);
  if (!r.session_error.empty()) line("after auth", r.session_error);
  return out;
}

std::string render_json(const scram::probe_report& r) {
  // Compact, one line: scripts read it. The server's and libpq's messages may
  // hold any bytes; the writer makes them valid UTF-8 (U+FFFD for bad ones).
  const boost::json::object doc{
      {"host", r.host},
      {"port", r.port},
      {"user", r.user},
      {"dbname", r.dbname},
      {"sslmode", r.sslmode},
      {"tls", r.tls},
      {"tls_version", r.tls_version},
      {"tls_cipher", r.tls_cipher},
      {"method", scram::to_string(r.method)},
      {"mechanisms", boost::json::array(r.mechanisms.begin(), r.mechanisms.end())},
      {"mechanism_used", r.mechanism_used},
      {"channel_binding", r.channel_binding},
      {"iterations", r.iterations},
      {"salt_length", r.salt_length},
      {"options_in_force", boost::json::array(r.options_in_force.begin(), r.options_in_force.end())},
      {"protocol_version", r.protocol_version},
      {"password_given", r.password_given},
      {"password_rejected", r.password_rejected},
      {"server_signature_verified", r.server_signature_verified},
      {"outcome", scram::to_string(r.outcome)},
      {"sqlstate", r.sqlstate},
      {"server_message", r.server_message},
      {"session_error", r.session_error},
      {"client_message", r.client_message},
      {"exit_code", r.exit_code()},
  };
  return json_output::write(doc);
}

}  // namespace pgpipe::cli
