// Properties of the probe's wire parsing (src/scram/probe_wire.hpp) and of
// the channel-binding code, for every input: shared by the libFuzzer target
// probe_wire_fuzz.cpp (which aborts on a violation) and the unit test that
// replays the checked-in corpus (tests/unit/scram/probe_wire_fuzz_corpus_test.cpp).
//
// Input: byte 0 selects what the rest is (% 4):
//   0  a stream of backend messages as a server would send them (framing;
//      ErrorResponse and AuthenticationSASL bodies are parsed as the probe does)
//   1  an ErrorResponse body
//   2  the SASL start: byte 1 holds the settings (bit 0: TLS; bits 1-2:
//      channel_binding disable/prefer/require), then an AuthenticationSASL
//      mechanism list; the bytes after its terminating NUL are the server
//      certificate (DER)
//   3  a server certificate (DER) for tls-server-end-point; byte 1 as in 2
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <pgpipe/scram.hpp>
#include "scram/probe_wire.hpp"

namespace pgpipe::scram::fuzz_wire {

namespace d = pgpipe::scram::detail;
using violation = std::optional<std::string>;

inline constexpr std::string_view password = "fuzz-password-7f3a";

// The input again with the password spliced in where the input says (the
// last byte), so that any message quoting server-sent bytes is caught.
inline std::string with_password(std::string_view in) {
  const std::size_t at = in.empty() ? 0 : static_cast<unsigned char>(in.back()) % (in.size() + 1);
  return std::string(in.substr(0, at)) + std::string(password) + std::string(in.substr(at));
}

inline violation no_password(std::string_view message, const char* what) {
  if (message.find(password) != std::string_view::npos) return std::string(what) + " quotes the password: " + std::string(message);
  return std::nullopt;
}

inline std::string encode_error(const d::error_fields& f) {
  std::string b;
  for (auto [code, value] : {std::pair{'S', &f.severity}, {'V', &f.nonlocalized_severity}, {'C', &f.sqlstate},
                             {'M', &f.message}, {'D', &f.detail}}) {
    b += code;
    b += *value;
    b += '\0';
  }
  return b + '\0';
}

inline violation check_error_body(std::string_view body) {
  const auto f = d::parse_error_fields(body);
  for (const std::string* v : {&f.severity, &f.nonlocalized_severity, &f.sqlstate, &f.message, &f.detail})
    if (v->find('\0') != std::string::npos) return "an error field holds a NUL";
  const auto again = d::parse_error_fields(encode_error(f));
  if (again.severity != f.severity || again.nonlocalized_severity != f.nonlocalized_severity ||
      again.sqlstate != f.sqlstate || again.message != f.message || again.detail != f.detail)
    return "error fields do not survive re-encoding";
  const std::string text = d::error_text(f);
  if (!f.message.empty() && text.find(f.message) == std::string::npos) return "the error text lost the message";
  return std::nullopt;
}

inline std::string encode_mechanisms(const std::vector<std::string>& ms) {
  std::string b;
  for (const auto& m : ms) b += m + '\0';
  return b + '\0';
}

inline violation check_mechanisms(std::string_view body) {
  const auto ms = d::parse_sasl_mechanisms(body);
  for (const auto& m : ms)
    if (m.empty() || m.find('\0') != std::string::npos) return "an empty or NUL-holding mechanism name";
  if (d::parse_sasl_mechanisms(encode_mechanisms(ms)) != ms) return "the mechanism list does not survive re-encoding";
  return std::nullopt;
}

// Framing: every header either parses to a length the probe may read, or is
// refused; what parses re-encodes to the same header.
inline violation check_stream(std::string_view in) {
  while (in.size() >= 5) {
    char type = 0;
    std::size_t len = 0;
    const std::string e = d::parse_message_header(in.substr(0, 5), type, len);
    if (!e.empty()) {
      if (e.size() > 200) return "a framing error longer than a sentence: " + e;
      return no_password(e, "framing error");
    }
    if (len > d::max_message) return "accepted a body above max_message";
    std::string again(1, type);
    d::put_i32(again, static_cast<std::int32_t>(len + 4));
    if (again != in.substr(0, 5)) return "a message header does not survive re-encoding";
    in.remove_prefix(5);
    if (in.size() < len) return std::nullopt;  // the probe would wait for the rest
    const std::string_view body = in.substr(0, len);
    in.remove_prefix(len);
    if (type == 'E') {
      if (auto v = check_error_body(body)) return v;
    } else if (type == 'R' && body.size() >= 4 && d::get_i32(body, 0) == 10) {
      if (auto v = check_mechanisms(body.substr(4))) return v;
    }
  }
  return std::nullopt;
}

inline std::string_view binding_setting(unsigned char flags) {
  static constexpr std::string_view settings[] = {"disable", "prefer", "require", "prefer"};
  return settings[(flags >> 1) & 3];
}

inline bool offered(const std::vector<std::string>& ms, std::string_view m) {
  for (const auto& x : ms)
    if (x == m) return true;
  return false;
}

// The SASL start: the choice follows the contract, never quotes what the
// server sent, and the SASLInitialResponse it leads to parses back.
inline violation check_sasl_start(unsigned char flags, const std::vector<std::string>& ms,
                                  std::string_view cert) {
  const bool tls = flags & 1;
  const std::string_view setting = binding_setting(flags);
  const auto der = std::span(reinterpret_cast<const unsigned char*>(cert.data()), cert.size());
  const auto c = d::choose_sasl(ms, tls, setting, tls ? der : std::span<const unsigned char>{});
  const bool plus = c.binding == channel_binding_mode::tls_server_end_point;
  if (!c.error.empty()) {
    // Under TLS with binding allowed, a PLUS offer must be taken (answering
    // "y" would be read as a downgrade), so such a start is usable only when
    // the certificate has a tls-server-end-point hash; otherwise plain SCRAM is.
    const bool must_bind = tls && setting != "disable" && offered(ms, "SCRAM-SHA-256-PLUS");
    const bool usable = must_bind ? tls_server_end_point_hash(der).has_value() : offered(ms, "SCRAM-SHA-256");
    if (setting != "require" && usable)
      return "refused a SASL start that offers a usable mechanism: " + c.error;
    return no_password(c.error, "SASL start error");
  }
  if (setting == "require" && !plus) return "channel_binding=require went ahead without channel binding";
  if (plus && (!tls || !offered(ms, "SCRAM-SHA-256-PLUS") || c.binding_data.empty() || c.binding_data.size() > 64))
    return "tls-server-end-point chosen without TLS, without the PLUS offer, or with no hash";
  if (!tls && c.binding != channel_binding_mode::none) return "announced channel binding support without TLS";
  if (setting == "disable" && c.binding != channel_binding_mode::none) return "channel_binding=disable announced binding";

  client_params cp;
  cp.binding = c.binding;
  cp.channel_binding_data = c.binding_data;
  cp.client_nonce = "fuzzclientnonce";
  client cl(password, cp);
  auto first = cl.client_first();
  if (!first) return "client_first failed after a valid choice: " + first.error().message;
  const std::string msg = d::sasl_initial_response(cl.mechanism(), *first);
  char type = 0;
  std::size_t len = 0;
  if (!d::parse_message_header(std::string_view(msg).substr(0, 5), type, len).empty() || type != 'p' ||
      len != msg.size() - 5)
    return "SASLInitialResponse framing is wrong";
  const std::string_view body = std::string_view(msg).substr(5);
  const auto nul = body.find('\0');
  if (nul == std::string_view::npos || body.substr(0, nul) != cl.mechanism() || body.size() < nul + 5 ||
      d::get_i32(body, nul + 1) != static_cast<std::int32_t>(first->size()) || body.substr(nul + 5) != *first)
    return "SASLInitialResponse does not parse back to the mechanism and client-first-message";
  if ((cl.mechanism() == "SCRAM-SHA-256-PLUS") != plus) return "the mechanism does not match the binding";
  return std::nullopt;
}

inline violation check_certificate(unsigned char flags, std::string_view cert) {
  const auto der = std::span(reinterpret_cast<const unsigned char*>(cert.data()), cert.size());
  auto h = tls_server_end_point_hash(der);
  if (!h) {
    if (h.error().message.empty() || h.error().code.category() != scram_category())
      return "a channel-binding failure without a message or outside the scram category";
    return no_password(h.error().message, "channel-binding error");
  }
  if (h->size() < 20 || h->size() > 64) return "a certificate hash of " + std::to_string(h->size()) + " bytes";
  if (auto again = tls_server_end_point_hash(der); !again || *again != *h) return "hashing the same certificate twice differs";
  return check_sasl_start(flags | 1, {"SCRAM-SHA-256-PLUS", "SCRAM-SHA-256"}, cert);
}

inline violation check_message(unsigned char selector, std::string_view in) {
  switch (selector % 4) {
    case 0: return check_stream(in);
    case 1: return check_error_body(in);
    case 2: {
      if (in.empty()) return std::nullopt;
      const unsigned char flags = static_cast<unsigned char>(in[0]);
      const std::string_view body = in.substr(1);
      const auto ms = d::parse_sasl_mechanisms(body);
      if (auto v = check_mechanisms(body)) return v;
      return check_sasl_start(flags, ms, body.substr(std::min(body.size(), encode_mechanisms(ms).size())));
    }
    default:
      if (in.empty()) return std::nullopt;
      return check_certificate(static_cast<unsigned char>(in[0]), in.substr(1));
  }
}

/// Every property for one fuzz input, as given and with the password spliced in.
inline violation check_input(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return std::nullopt;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (auto v = check_message(data[0], in)) return v;
  return check_message(data[0], with_password(in));
}

}  // namespace pgpipe::scram::fuzz_wire
