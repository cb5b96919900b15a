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
#include <span>
#include <vector>
#include <optional>
#include <string>
#include <string_view>

#include <pgpipe/scram.hpp>

#include "scram/crypto.hpp"

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

inline const std::string fixed_server_first = std::string("r=") + std::string(nonce) + "srv,s=c2FsdA==,i=2";

// The one ServerSignature a server knowing the password would send after the
// fixed server-first, computed from RFC 5802 section 3 directly (not through
// scram::client): ServerSignature = HMAC(HMAC(SaltedPassword, "Server Key"),
// client-first-bare "," server-first "," client-final-without-proof).
inline std::vector<unsigned char> true_server_signature() {
  const std::string bare = "n=,r=" + std::string(nonce);
  const std::string without_proof = "c=biws,r=" + std::string(nonce) + "srv";  // biws: base64("n,,")
  const std::string salt = "salt";                                             // c2FsdA==
  auto salted = detail::salted_password(password, std::span(reinterpret_cast<const unsigned char*>(salt.data()), salt.size()), 2);
  auto server_key = detail::hmac_sha256(*salted, "Server Key");
  auto sig = detail::hmac_sha256(*server_key, bare + "," + fixed_server_first + "," + without_proof);
  return {sig->begin(), sig->end()};
}

/// The server-final-message carrying the true signature (a seed; the unit
/// test checks it is accepted, so the signature above is the real one).
inline std::string true_server_final() { return "v=" + base64_encode(true_server_signature()); }

inline violation check_server_final(std::string_view in) {
  auto c = make_client();
  if (!c.client_final(fixed_server_first)) return "the fixed server-first-message was refused";
  auto r = c.verify_server_final(in);
  if (!r) return check_failure(r.error());
  // Accepted: the v= value must decode to the one true signature (base64
  // with other trailing bits may spell it too; anything else may not pass).
  static const std::vector<unsigned char> truth = true_server_signature();
  if (in.substr(0, 2) != "v=") return "accepted a server-final-message that is not v=";
  const auto value = in.substr(2, in.find(',') == std::string_view::npos ? std::string_view::npos : in.find(',') - 2);
  auto sig = base64_decode(value);
  if (!sig || *sig != truth) return "accepted a server-final-message whose signature is not the true one";
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
  // The input is a password: check_failure() finds it in an error message,
  // and check_input() splices the harness password into every input, so an
  // error quoting its input is caught.
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
  // base64 never sees secrets in the wild. The splice targets what comes
  // from a server or a user, and SASLprep's input, which is a password.
  if (data[0] % 6 != 4) return check_message(data[0], with_password(in));
  return std::nullopt;
}

}  // namespace pgpipe::scram::fuzz
