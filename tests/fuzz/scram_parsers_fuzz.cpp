// libFuzzer target for everything in the SCRAM toolkit that parses bytes an
// attacker controls: stored verifiers, a server's server-first and
// server-final messages, base64, and SASLprep input. Besides "no crash, no
// sanitizer report" it checks properties a user relies on:
//  - a verifier that parses re-parses to the same value from its text form;
//  - a failure always carries a non-empty message and a scram error code;
//  - the password never appears in a message.
//
// Input: first byte selects the parser, the rest is the message.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "pgpipe/scram.hpp"

namespace scram = pgpipe::scram;

namespace {

constexpr std::string_view password = "fuzz-password-7f3a";
constexpr std::string_view nonce = "fuzzclientnonce";

void check_failure(const scram::failure& f) {
  if (f.message.empty() || f.code.category() != scram::scram_category()) std::abort();
  if (f.message.find(password) != std::string::npos) std::abort();
}

scram::client make_client() {
  scram::client_params p;
  p.client_nonce = std::string(nonce);
  p.iteration_cap = 64;  // keep PBKDF2 cheap: the fuzzer may ask for any count
  scram::client c(password, p);
  if (!c.client_first()) std::abort();
  return c;
}

void fuzz_verifier(std::string_view in) {
  auto v = scram::parse_verifier(in);
  if (!v) return check_failure(v.error());
  auto again = scram::parse_verifier(v->to_string());
  if (!again || !(*again == *v)) std::abort();
}

void fuzz_server_first(std::string_view in) {
  auto c = make_client();
  auto r = c.client_final(in);
  if (!r) return check_failure(r.error());
  if (c.iterations() < 1 || c.iterations() > 64 || c.salt_length() == 0) std::abort();
}

void fuzz_server_final(std::string_view in) {
  auto c = make_client();
  if (!c.client_final(std::string("r=") + std::string(nonce) + "srv,s=c2FsdA==,i=2")) std::abort();
  auto r = c.verify_server_final(in);
  if (!r) return check_failure(r.error());
  // Only the one true signature may be accepted; the fuzzer finding it by
  // chance would mean the comparison is broken.
  if (in.substr(0, 2) != "v=") std::abort();
}

void fuzz_base64(std::string_view in) {
  auto r = scram::base64_decode(in);
  if (!r) return check_failure(r.error());
  if (scram::base64_encode(*r) != in) {
    // Non-canonical trailing bits decode too; the re-encoding must decode
    // to the same bytes.
    auto again = scram::base64_decode(scram::base64_encode(*r));
    if (!again || *again != *r) std::abort();
  }
}

void fuzz_saslprep(std::string_view in) {
  auto r = scram::saslprep(in);
  if (!r) return check_failure(r.error());
  if (r->status != scram::saslprep_status::prepared && r->bytes != in) std::abort();
  if (r->bytes.find('\0') != std::string::npos) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 6) {
    case 0: fuzz_verifier(in); break;
    case 1: fuzz_server_first(in); break;
    // The same with a valid nonce prefix, so the fuzzer spends its time
    // past the nonce check.
    case 2: fuzz_server_first(std::string("r=") + std::string(nonce) + std::string(in)); break;
    case 3: fuzz_server_final(in); break;
    case 4: fuzz_base64(in); break;
    case 5: fuzz_saslprep(in); break;
  }
  return 0;
}
