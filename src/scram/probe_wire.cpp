#include "scram/probe_wire.hpp"

#include <arpa/inet.h>
#include <cstring>

namespace pgpipe::scram::detail {

void put_i32(std::string& out, std::int32_t v) {
  const std::uint32_t n = htonl(static_cast<std::uint32_t>(v));
  out.append(reinterpret_cast<const char*>(&n), 4);
}

std::int32_t get_i32(std::string_view s, std::size_t at) {
  std::uint32_t n = 0;
  std::memcpy(&n, s.data() + at, 4);
  return static_cast<std::int32_t>(ntohl(n));
}

std::string frontend_message(char type, std::string_view body) {
  std::string out(1, type);
  put_i32(out, static_cast<std::int32_t>(body.size() + 4));
  out += body;
  return out;
}

std::string parse_message_header(std::string_view header, char& type, std::size_t& body_length) {
  if (header.size() != 5) return "message header of " + std::to_string(header.size()) + " bytes, expected 5";
  type = header[0];
  const std::int32_t len = get_i32(header, 1);
  if (len < 4 || static_cast<std::size_t>(len) > max_message) {
    return "invalid message length " + std::to_string(len) + " for message type '" + std::string(1, type) +
           "': not a PostgreSQL server?";
  }
  body_length = static_cast<std::size_t>(len) - 4;
  return {};
}

error_fields parse_error_fields(std::string_view body) {
  error_fields f;
  std::size_t i = 0;
  while (i < body.size() && body[i] != '\0') {
    const char field = body[i++];
    const auto end = body.find('\0', i);
    const std::string value(body.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i));
    i = end == std::string_view::npos ? body.size() : end + 1;
    switch (field) {
      case 'S': f.severity = value; break;
      case 'V': f.nonlocalized_severity = value; break;
      case 'C': f.sqlstate = value; break;
      case 'M': f.message = value; break;
      case 'D': f.detail = value; break;
      default: break;
    }
  }
  return f;
}

std::string error_text(const error_fields& f) {
  std::string text = f.nonlocalized_severity.empty() ? f.severity : f.nonlocalized_severity;
  text += text.empty() ? f.message : ": " + f.message;
  if (!f.detail.empty()) text += " (" + f.detail + ")";
  return text;
}

bool rejects_password(const error_fields& f) {
  if (f.sqlstate == "28P01") return true;
  // PgBouncer words are English and fixed (it has no lc_messages).
  return f.sqlstate == "08P01" &&
         (f.message == "SASL authentication failed" || f.message == "password authentication failed");
}

std::string negotiated_protocol(std::string_view body, int min_minor, int max_minor, int& minor) {
  if (body.size() < 8) return "received invalid protocol negotiation message: message too short";
  const std::int32_t offered = get_i32(body, 0);
  minor = offered & 0xffff;
  if ((offered >> 16) != 3 || minor > max_minor) {
    return "received invalid protocol negotiation message: server requested downgrade to a higher-numbered version";
  }
  if (minor < min_minor) {
    return "server only supports protocol version 3." + std::to_string(minor) + ", but \"min_protocol_version\" was set to 3." +
           std::to_string(min_minor);
  }
  return {};
}

std::vector<std::string> parse_sasl_mechanisms(std::string_view body) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < body.size() && body[i] != '\0') {
    const auto end = body.find('\0', i);
    if (end == std::string_view::npos) break;
    out.emplace_back(body.substr(i, end - i));
    i = end + 1;
  }
  return out;
}

sasl_choice choose_sasl(const std::vector<std::string>& offered, bool tls, std::string_view channel_binding,
                        std::span<const unsigned char> peer_certificate_der) {
  auto is_offered = [&](std::string_view m) {
    for (const auto& x : offered) {
      if (x == m) return true;
    }
    return false;
  };
  sasl_choice c;
  if (tls && is_offered("SCRAM-SHA-256-PLUS") && channel_binding != "disable") {
    auto hash = tls_server_end_point_hash(peer_certificate_der);
    if (!hash) {
      // Not "y" with plain SCRAM: the server offered -PLUS, so it would take
      // "y" for a downgrade and refuse with a negotiation error that hides
      // the cause. libpq fails here too, with prefer as with require.
      c.error = hash.error().message;
      return c;
    }
    c.binding = channel_binding_mode::tls_server_end_point;
    c.binding_data = std::move(*hash);
  } else if (is_offered("SCRAM-SHA-256")) {
    c.binding = tls && channel_binding != "disable" ? channel_binding_mode::supported_not_used
                                                    : channel_binding_mode::none;
  } else {
    c.error = "none of the server's SASL mechanisms is SCRAM-SHA-256 or SCRAM-SHA-256-PLUS";
    return c;
  }
  if (channel_binding == "require" && c.binding != channel_binding_mode::tls_server_end_point) {
    c.error = tls ? "channel_binding=require, but the server does not offer SCRAM-SHA-256-PLUS"
                  : "channel_binding=require needs TLS (sslmode=require or stronger)";
  }
  return c;
}

std::string sasl_initial_response(std::string_view mechanism, std::string_view client_first) {
  std::string msg(mechanism);
  msg += '\0';
  put_i32(msg, static_cast<std::int32_t>(client_first.size()));
  msg += client_first;
  return frontend_message('p', msg);
}

}  // namespace pgpipe::scram::detail
