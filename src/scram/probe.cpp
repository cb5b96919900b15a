#include <pgpipe/scram/probe.hpp>

#include <arpa/inet.h>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <openssl/evp.h>
#include <sys/stat.h>

#include <pgpipe/error.hpp>
#include "pq/libpq_failure.hpp"
#include "scram/crypto.hpp"
#include "scram/probe_target.hpp"
#include "scram/probe_transport.hpp"
#include "scram/probe_wire.hpp"
#include "scram/expected_request.hpp"

namespace pgpipe::scram {
namespace {

constexpr std::int32_t protocol_3 = 3 << 16;  // major 3, minor in the low 16 bits
constexpr std::int32_t ssl_request_code = 80877103;

// ---- wire format -----------------------------------------------------------

using detail::get_i32;
using detail::put_i32;

std::string message(char type, const std::string& body) { return detail::frontend_message(type, body); }

struct backend_message {
  char type = 0;
  std::string body;
};

std::string read_message(detail::transport& io, backend_message& m) {
  std::string header;
  if (auto e = io.read_exact(5, header); !e.empty()) return e;
  std::size_t body_length = 0;
  if (auto e = detail::parse_message_header(header, m.type, body_length); !e.empty()) return e;
  return io.read_exact(body_length, m.body);
}

void parse_error_fields(const std::string& body, std::string& sqlstate, std::string& text) {
  const auto f = detail::parse_error_fields(body);
  sqlstate = f.sqlstate;
  text = detail::error_text(f);
}

std::string hex(const unsigned char* p, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}

std::string md5_hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_md5(), nullptr);
  return hex(digest, len);
}

// ---- the exchange ----------------------------------------------------------

class prober {
 public:
  prober(const probe_params& p, probe_report& r) : p_(p), r_(r) {}
  ~prober() { detail::cleanse(password_.data(), password_.size()); }
  void run();
  // Server-sent text can carry the password back (a hostile server that was
  // sent it in clear text, or one that echoes the startup packet): every
  // message in the report is scrubbed of it before the report leaves.
  void scrub() {
    for (std::string* text : {&r_.server_message, &r_.session_error, &r_.client_message})
      *text = redact_secret(std::move(*text), password_);
  }

 private:
  void fail(std::string message) {
    r_.outcome = probe_outcome::client_error;
    r_.client_message = std::move(message);
  }
  bool send(const std::string& bytes) {
    if (auto e = io_->write_all(bytes); !e.empty()) {
      fail("sending to the server: " + e);
      return false;
    }
    return true;
  }
  bool negotiate_tls();
  bool start_tls();
  bool negotiate_protocol(const std::string& body);
  bool check_request(std::int32_t code);
  bool start_sasl(const std::string& body);
  bool continue_sasl(const std::string& body);
  bool finish_sasl(const std::string& body);
  void after_auth_ok();

  const probe_params& p_;
  probe_report& r_;
  detail::probe_target t_;
  std::string password_;
  std::unique_ptr<detail::transport> io_;
  std::unique_ptr<client> scram_;
  bool client_finished_auth_ = false;  // a password or a checked SCRAM signature went both ways
};

bool prober::negotiate_tls() {
  const std::string& mode = t_.sslmode;
  if (mode == "disable" || mode == "allow") return true;  // allow: plaintext first, as libpq
  // Direct: the TLS handshake is the first byte on the wire (PostgreSQL 17+);
  // an older server reads it as a broken startup packet and hangs up.
  if (t_.sslnegotiation == "direct") return start_tls();
  std::string req;
  put_i32(req, 8);
  put_i32(req, ssl_request_code);
  if (!send(req)) return false;
  std::string answer;
  if (auto e = io_->read_exact(1, answer); !e.empty()) {
    fail("waiting for the answer to SSLRequest: " + e);
    return false;
  }
  if (answer[0] == 'N') {
    if (mode == "prefer") return true;
    fail("server does not support TLS, but sslmode=" + mode + " requires it");
    return false;
  }
  if (answer[0] != 'S') {
    fail("unexpected answer to SSLRequest (byte 0x" + hex(reinterpret_cast<const unsigned char*>(answer.data()), 1) +
         "): not a PostgreSQL server?");
    return false;
  }
  // CVE-2021-23222: bytes after 'S' would be read as if they came over TLS.
  if (io_->plain_data_pending()) {
    fail("server sent unencrypted data after accepting SSLRequest");
    return false;
  }
  return start_tls();
}

bool prober::start_tls() {
  const std::string& mode = t_.sslmode;
  detail::tls_options o;
  o.sni = t_.sslsni;
  o.alpn = t_.sslnegotiation == "direct";
  o.min_version = t_.ssl_min_protocol;
  o.max_version = t_.ssl_max_protocol;
  o.sslmode = mode;
  o.host = t_.host;
  o.root_cert = t_.sslrootcert;
  if (o.root_cert.empty()) {
    if (const char* home = std::getenv("HOME")) o.root_cert = std::string(home) + "/.postgresql/root.crt";
  }
  struct stat st {};
  const bool root_exists = !o.root_cert.empty() && ::stat(o.root_cert.c_str(), &st) == 0;
  o.verify_host = mode == "verify-full";
  // libpq: require (and prefer) verify the chain when a root file exists.
  o.verify_chain = mode == "verify-ca" || mode == "verify-full" || root_exists;
  if (!root_exists && o.verify_chain) {
    fail("sslmode=" + mode + " needs a root certificate, and \"" + o.root_cert + "\" does not exist");
    return false;
  }
  if (!root_exists) o.root_cert.clear();
  if (auto e = io_->start_tls(o); !e.empty()) {
    fail(e);
    return false;
  }
  r_.tls = true;
  r_.tls_version = io_->tls_version();
  r_.tls_cipher = io_->tls_cipher();
  return true;
}

bool prober::start_sasl(const std::string& body) {
  r_.method = auth_method::sasl;
  r_.mechanisms = detail::parse_sasl_mechanisms(body);
  auto choice = detail::choose_sasl(r_.mechanisms, r_.tls, t_.channel_binding,
                                    r_.tls ? io_->peer_certificate_der() : std::vector<unsigned char>{});
  if (!choice.error.empty()) {
    fail(choice.error);
    return false;
  }
  const std::string mechanism = choice.binding == channel_binding_mode::tls_server_end_point ? "SCRAM-SHA-256-PLUS"
                                                                                              : "SCRAM-SHA-256";
  if (auto e = t_.require_auth.check_mechanism(mechanism); !e.empty()) {
    fail(std::move(e));
    return false;
  }
  client_params cp;
  cp.iteration_cap = p_.iteration_cap;
  cp.binding = choice.binding;
  cp.channel_binding_data = std::move(choice.binding_data);
  r_.channel_binding = cp.binding == channel_binding_mode::tls_server_end_point ? "tls-server-end-point"
                       : cp.binding == channel_binding_mode::supported_not_used ? "supported-not-used"
                                                                                : "none";
  // Without a password the exchange still runs to server-first, which
  // carries the iteration count and salt; the proof is never sent.
  scram_ = std::make_unique<client>(password_, cp);
  r_.mechanism_used = scram_->mechanism();
  auto first = scram_->client_first();
  if (!first) {
    fail("SCRAM: " + first.error().message);
    return false;
  }
  return send(detail::sasl_initial_response(r_.mechanism_used, *first));
}

bool prober::continue_sasl(const std::string& body) {
  if (!scram_) {
    fail("server sent AuthenticationSASLContinue before AuthenticationSASL");
    return false;
  }
  auto final_msg = scram_->client_final(body);
  if (!final_msg) {
    fail("SCRAM: " + final_msg.error().message);
    return false;
  }
  r_.iterations = scram_->iterations();
  r_.salt_length = scram_->salt_length();
  if (!r_.password_given) {
    r_.outcome = probe_outcome::method_reported;
    return false;  // stop here: no proof without a password
  }
  return send(message('p', *final_msg));
}

bool prober::finish_sasl(const std::string& body) {
  if (!scram_) {
    fail("server sent AuthenticationSASLFinal before AuthenticationSASL");
    return false;
  }
  auto ok = scram_->verify_server_final(body);
  if (!ok) {
    fail("SCRAM: " + ok.error().message);
    return false;
  }
  r_.server_signature_verified = true;
  client_finished_auth_ = true;
  return true;
}

bool prober::check_request(std::int32_t code) {
  detail::session_facts facts;
  facts.client_finished_auth = client_finished_auth_;
  facts.channel_bound = r_.channel_binding == "tls-server-end-point";
  facts.client_certificate_requested = io_->client_certificate_requested();
  if (auto e = detail::check_expected_request(t_, code, facts); !e.empty()) {
    fail(std::move(e));
    return false;
  }
  return true;
}

bool prober::negotiate_protocol(const std::string& body) {
  int minor = 0;
  if (auto e = detail::negotiated_protocol(body, t_.min_protocol_minor, t_.max_protocol_minor, minor); !e.empty()) {
    fail(std::move(e));
    return false;
  }
  r_.protocol_version = "3." + std::to_string(minor);
  return true;
}

void prober::after_auth_ok() {
  if (r_.method == auth_method::unknown) r_.method = auth_method::trust;
  r_.outcome = probe_outcome::authenticated;
  // Read to ReadyForQuery so an error that follows authentication (unknown
  // database, too many connections) is reported too, then say goodbye.
  for (;;) {
    backend_message m;
    if (auto e = read_message(*io_, m); !e.empty()) {
      r_.session_error = "after authentication: " + e;
      return;
    }
    if (m.type == 'Z') break;
    if (m.type == 'E') {
      std::string code, text;
      parse_error_fields(m.body, code, text);
      r_.session_error = code + " " + text;
      return;
    }
  }
  std::string terminate = message('X', "");
  (void)io_->write_all(terminate);
}

void prober::run() {
  // The password is known before the string is read, so a refused string
  // still reports whether one was given.
  if (p_.password) password_ = *p_.password;
  r_.password_given = !password_.empty();
  if (auto e = detail::resolve_probe_target(p_.conninfo, p_.password.has_value(), t_); !e.empty()) {
    r_.password_given = r_.password_given || !t_.password.empty();
    detail::cleanse(t_.password.data(), t_.password.size());
    r_.outcome = probe_outcome::invalid_options;
    r_.client_message = std::move(e);
    return;
  }
  r_.options_in_force = t_.in_force;
  r_.host = t_.hostaddr.empty() ? t_.host : t_.host.empty() ? t_.hostaddr : t_.host + " (" + t_.hostaddr + ")";
  r_.port = t_.port;
  r_.user = t_.user;
  r_.dbname = t_.dbname;
  r_.sslmode = t_.sslmode;
  if (!p_.password) password_ = t_.password;
  detail::cleanse(t_.password.data(), t_.password.size());
  r_.password_given = !password_.empty();

  std::chrono::milliseconds timeout{10000};
  if (p_.timeout) {
    timeout = *p_.timeout;
  } else if (!t_.connect_timeout.empty()) {
    const int secs = std::atoi(t_.connect_timeout.c_str());
    if (secs > 0) timeout = std::chrono::seconds(std::max(secs, 2));  // libpq's minimum is 2 s
  }
  io_ = std::make_unique<detail::transport>(timeout);
  const bool unix_socket = t_.hostaddr.empty() && !t_.host.empty() && t_.host.front() == '/';
  if (unix_socket) {
    // libpq ignores sslmode on Unix sockets (TLS is never negotiated there);
    // the report keeps the requested mode and says why it did not apply.
    r_.sslmode = t_.sslmode + " (ignored on a Unix socket)";
    t_.sslmode = "disable";
  }
  const std::string err = unix_socket ? io_->connect_unix(t_.host, t_.port) : io_->connect_tcp(t_.host, t_.hostaddr, t_.port);
  if (!err.empty()) {
    fail(err);
    return;
  }
  if (!negotiate_tls()) return;

  std::string startup;
  put_i32(startup, protocol_3 | t_.max_protocol_minor);
  for (const auto& [k, v] : {std::pair<std::string, std::string>{"user", t_.user},
                             {"database", t_.dbname},
                             {"application_name", "pgpipe-scram"}}) {
    startup += k;
    startup += '\0';
    startup += v;
    startup += '\0';
  }
  startup += '\0';
  std::string packet;
  put_i32(packet, static_cast<std::int32_t>(startup.size() + 4));
  packet += startup;
  if (!send(packet)) return;

  for (;;) {
    backend_message m;
    if (auto e = read_message(*io_, m); !e.empty()) {
      if (e.rfind("timed out", 0) == 0) {
        // PgBouncer answers a client only once its own login to the server
        // is done, and 1.25 reports a failed server login after ~15 s.
        e += " (a connection pooler such as PgBouncer may still be waiting on its own login "
             "to the server: try a longer --timeout)";
      }
      fail(e);
      return;
    }
    switch (m.type) {
      case 'E': {
        const auto f = detail::parse_error_fields(m.body);
        r_.sqlstate = f.sqlstate;
        r_.server_message = detail::error_text(f);
        r_.password_rejected = detail::rejects_password(f);
        r_.outcome = probe_outcome::rejected;
        return;
      }
      case 'N':  // NoticeResponse
        continue;
      case 'v':
        if (!negotiate_protocol(m.body)) return;
        continue;
      case 'R':
        break;
      default:
        fail(std::string("unexpected message type '") + m.type + "' during authentication");
        return;
    }
    if (m.body.size() < 4) {
      fail("authentication request too short");
      return;
    }
    const std::int32_t code = get_i32(m.body, 0);
    const std::string rest = m.body.substr(4);
    if (r_.protocol_version.empty()) r_.protocol_version = "3." + std::to_string(t_.max_protocol_minor);
    // What the server asked for is reported even when the string forbids it.
    if (code == 3 || code == 5) r_.method = code == 3 ? auth_method::cleartext : auth_method::md5;
    if (code == 2 || (code >= 7 && code <= 9)) r_.method = auth_method::gss;
    if (code == 10) {
      r_.method = auth_method::sasl;
      r_.mechanisms = detail::parse_sasl_mechanisms(rest);
    }
    if (!check_request(code)) return;
    switch (code) {
      case 0:
        after_auth_ok();
        io_->close();
        return;
      case 3:
      case 5: {
        r_.method = code == 3 ? auth_method::cleartext : auth_method::md5;
        if (!r_.password_given) {
          r_.outcome = probe_outcome::method_reported;
          return;
        }
        if (!p_.allow_cleartext) {
          r_.outcome = probe_outcome::cleartext_not_sent;
          r_.client_message = std::string("the server asks for the password ") +
                              (code == 3 ? "in clear text" : "as an MD5 hash") +
                              "; not sent (pass --allow-cleartext to send it)";
          return;
        }
        std::string answer;
        if (code == 3) {
          answer = password_;
        } else {
          if (rest.size() < 4) {
            fail("AuthenticationMD5Password without a salt");
            return;
          }
          std::string inner = password_ + t_.user;
          answer = "md5" + md5_hex(md5_hex(inner) + rest.substr(0, 4));
          detail::cleanse(inner.data(), inner.size());
        }
        answer += '\0';
        std::string msg = message('p', answer);
        const bool ok = send(msg);
        detail::cleanse(answer.data(), answer.size());
        detail::cleanse(msg.data(), msg.size());
        if (!ok) return;
        client_finished_auth_ = true;
        continue;
      }
      case 10:
        if (!start_sasl(rest)) return;
        continue;
      case 11:
        if (!continue_sasl(rest)) return;
        continue;
      case 12:
        if (!finish_sasl(rest)) return;
        continue;
      case 2:
      case 7:
      case 8:
      case 9:
        r_.method = auth_method::gss;
        if (!r_.password_given) {
          r_.outcome = probe_outcome::method_reported;
        } else {
          fail("the server asks for GSSAPI/SSPI/Kerberos, which the probe does not speak");
        }
        return;
      default:
        fail("unknown authentication request code " + std::to_string(code));
        return;
    }
  }
}

}  // namespace

int probe_report::exit_code() const noexcept {
  switch (outcome) {
    case probe_outcome::authenticated:
    case probe_outcome::method_reported:
      return 0;
    case probe_outcome::rejected:
      return 1;
    case probe_outcome::invalid_options:
      return 2;
    case probe_outcome::client_error:
      return 3;
    case probe_outcome::cleartext_not_sent:
      return 4;
  }
  return 3;
}

const char* to_string(auth_method m) noexcept {
  switch (m) {
    case auth_method::unknown: return "unknown";
    case auth_method::trust: return "trust";
    case auth_method::cleartext: return "cleartext";
    case auth_method::md5: return "md5";
    case auth_method::sasl: return "sasl";
    case auth_method::gss: return "gss";
  }
  return "unknown";
}

const char* to_string(probe_outcome o) noexcept {
  switch (o) {
    case probe_outcome::authenticated: return "authenticated";
    case probe_outcome::method_reported: return "method_reported";
    case probe_outcome::cleartext_not_sent: return "cleartext_not_sent";
    case probe_outcome::rejected: return "rejected";
    case probe_outcome::client_error: return "client_error";
    case probe_outcome::invalid_options: return "invalid_options";
  }
  return "client_error";
}

probe_report probe(const probe_params& params) {
  probe_report report;
  prober p(params, report);
  p.run();
  p.scrub();
  return report;
}

}  // namespace pgpipe::scram
