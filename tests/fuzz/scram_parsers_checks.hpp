// Properties of the SCRAM parsers that hold for every input, shared by the
// libFuzzer target (which aborts on a violation) and the unit test that
// replays the checked-in corpus (which reports it): a finding is turned into
// a regression test just by adding its input to the corpus folder.
//
// Input layout: the first byte selects the parser, the rest is the message.
// Each check returns the violated property, or nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <pgpipe/scram.hpp>

namespace pgpipe::scram::fuzz {

inline constexpr std::string_view password = "fuzz-password-7f3a";
inline constexpr std::string_view nonce = "fuzzclientnonce";

using violation = std::optional<std::string>;

inline violation check_failure(const failure& f) {
  if (f.message.empty()) return "failure with an empty message";
  if (f.code.category() != scram_category()) return "failure code outside the scram category";
  if (f.message.find(password) != std::string::npos) return "message contains the password: " + f.message;
  return std::nullopt;
}

// The input again with the password spliced in at a position the input
// chooses: whatever field an input reaches, some variant carries the
// password in it, so a message that quotes any field is caught at once.
inline std::string with_password(std::string_view in) {
  const std::size_t at = in.empty() ? 0 : static_cast<unsigned char>(in.back()) % (in.size() + 1);
  std::string out(in.substr(0, at));
  out += password;
  out += in.substr(at);
  return out;
}

inline client make_client() {
  client_params p;
  p.client_nonce = std::string(nonce);
  p.iteration_cap = 64;  // keep PBKDF2 cheap: the input may ask for any count
  client c(password, p);
  (void)c.client_first();
  return c;
}

inline violation check_verifier(std::string_view in) {
  auto v = parse_verifier(in);
  if (!v) return check_failure(v.error());
  auto again = parse_verifier(v->to_string());
  if (!again || !(*again == *v)) return "a parsed verifier does not re-parse to the same value";
  return std::nullopt;
}

inline violation check_server_first(std::string_view in) {
  auto c = make_client();
  auto r = c.client_final(in);
  if (!r) return check_failure(r.error());
  if (c.iterations() < 1 || c.iterations() > 64 || c.salt_length() == 0)
    return "accepted a server-first-message outside the cap or with no salt";
  return std::nullopt;
}

inline violation check_server_final(std::string_view in) {
  auto c = make_client();
  if (!c.client_final(std::string("r=") + std::string(nonce) + "srv,s=c2FsdA==,i=2"))
    return "the fixed server-first-message was refused";
  auto r = c.verify_server_final(in);
  if (!r) return check_failure(r.error());
  // Only the one true signature may be accepted; finding it by chance would
  // mean the comparison is broken.
  if (in.substr(0, 2) != "v=") return "accepted a server-final-message that is not v=";
  return std::nullopt;
}

inline violation check_base64(std::string_view in) {
  auto r = base64_decode(in);
  if (!r) return check_failure(r.error());
  if (base64_encode(*r) != in) {
    // Non-canonical trailing bits decode too; the re-encoding must decode
    // to the same bytes.
    auto again = base64_decode(base64_encode(*r));
    if (!again || *again != *r) return "base64 re-encoding decodes to other bytes";
  }
  return std::nullopt;
}

inline violation check_saslprep(std::string_view in) {
  auto r = saslprep(in);
  if (!r) return check_failure(r.error());
  if (r->status != saslprep_status::prepared && r->bytes != in) return "raw SASLprep fallback changed the bytes";
  if (r->bytes.find('\0') != std::string::npos) return "SASLprep output holds a NUL";
  return std::nullopt;
}

inline violation check_message(int selector, std::string_view in) {
  switch (selector % 6) {
    case 0: return check_verifier(in);
    case 1: return check_server_first(in);
    // With a valid nonce prefix, so inputs get past the nonce check.
    case 2: return check_server_first(std::string("r=") + std::string(nonce) + std::string(in));
    case 3: return check_server_final(in);
    case 4: return check_base64(in);
    default: return check_saslprep(in);
  }
}

/// Every property for one fuzz input (selector byte + message), on the
/// message as given and with the password spliced into it.
inline violation check_input(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return std::nullopt;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (auto v = check_message(data[0], in)) return v;
  // SASLprep and base64 never see secrets in the wild; their messages are
  // checked above. The splice targets what comes from a server or a user.
  if (data[0] % 6 <= 3) return check_message(data[0], with_password(in));
  return std::nullopt;
}

}  // namespace pgpipe::scram::fuzz
