// The probe's parsing of what a server (or anything listening on its port)
// sends during authentication, and the SASL start it answers with: pure
// functions over bytes, split out of probe.cpp so that the fuzz target
// tests/fuzz/probe_wire_fuzz.cpp can reach them without a socket. Internal to
// the scram layer. No message built here quotes server-sent bytes beyond a
// message type byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <pgpipe/scram/client.hpp>

namespace pgpipe::scram::detail {

/// Authentication exchanges are tiny; a longer message means we are not
/// talking to PostgreSQL (or it is misbehaving).
inline constexpr std::size_t max_message = 64 * 1024;

void put_i32(std::string& out, std::int32_t v);
/// The big-endian int32 at `at` (the caller checks that 4 bytes are there).
std::int32_t get_i32(std::string_view s, std::size_t at);

/// Frontend message: type byte, then length (self-inclusive), then body.
std::string frontend_message(char type, std::string_view body);

/// A backend message header (5 bytes: type, self-inclusive length): "" and
/// the body length, or the reason it cannot be a PostgreSQL message.
std::string parse_message_header(std::string_view header, char& type, std::size_t& body_length);

/// The fields of an ErrorResponse the probe reports (the last of each wins).
struct error_fields {
  std::string severity, nonlocalized_severity, sqlstate, message, detail;
};
error_fields parse_error_fields(std::string_view body);
/// "SEVERITY: message (detail)", as the probe reports it.
std::string error_text(const error_fields& f);

/// True when an ErrorResponse during authentication says the password (or
/// SCRAM proof) was wrong: PostgreSQL's 28P01, and PgBouncer's 08P01 "SASL
/// authentication failed" / "password authentication failed" (PgBouncer
/// reports a failed client login as a protocol violation).
bool rejects_password(const error_fields& f);

/// NegotiateProtocolVersion's body (newest minor version the server speaks,
/// then the protocol options it ignored) against the range the client asked
/// for: "" and `minor`, or libpq 18's message.
std::string negotiated_protocol(std::string_view body, int min_minor, int max_minor, int& minor);

/// AuthenticationSASL's list of mechanisms (NUL-terminated names, then NUL).
std::vector<std::string> parse_sasl_mechanisms(std::string_view body);

/// What the client answers to AuthenticationSASL: the mechanism and channel
/// binding, chosen from what the server offers, TLS, and the channel_binding
/// setting ("disable", "prefer", "require"). `peer_certificate_der` is the
/// server certificate (empty without TLS); it is hashed for
/// tls-server-end-point. error: non-empty when the exchange cannot start,
/// including when the server offers SCRAM-SHA-256-PLUS over TLS, binding is
/// not disabled, and the certificate cannot be hashed (as libpq fails:
/// answering "y" would be refused by the server as a downgrade).
struct sasl_choice {
  std::string error;
  channel_binding_mode binding = channel_binding_mode::none;
  std::vector<unsigned char> binding_data;
};
sasl_choice choose_sasl(const std::vector<std::string>& offered, bool tls, std::string_view channel_binding,
                        std::span<const unsigned char> peer_certificate_der);

/// SASLInitialResponse: 'p', mechanism, NUL, int32 length, client-first-message.
std::string sasl_initial_response(std::string_view mechanism, std::string_view client_first);

}  // namespace pgpipe::scram::detail
