#include <pgpipe/scram/errors.hpp>

namespace pgpipe::scram {
namespace {

class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "pgpipe.scram"; }
  std::string message(int value) const override {
    switch (static_cast<scram_errc>(value)) {
      case scram_errc::verifier_bad_prefix: return "verifier does not start with SCRAM-SHA-256$";
      case scram_errc::verifier_bad_format: return "verifier structure is not <iterations>:<salt>$<StoredKey>:<ServerKey>";
      case scram_errc::verifier_bad_iterations: return "verifier iteration count is invalid";
      case scram_errc::verifier_bad_salt: return "verifier salt is invalid";
      case scram_errc::verifier_bad_stored_key: return "verifier StoredKey is invalid";
      case scram_errc::verifier_bad_server_key: return "verifier ServerKey is invalid";
      case scram_errc::bad_argument: return "invalid argument";
      case scram_errc::password_too_long: return "password too long";
      case scram_errc::bad_state: return "SCRAM step called out of order";
      case scram_errc::malformed_server_first: return "malformed SCRAM server-first-message";
      case scram_errc::nonce_mismatch: return "SCRAM server nonce does not extend the client nonce";
      case scram_errc::bad_server_salt: return "invalid salt in SCRAM server-first-message";
      case scram_errc::bad_server_iterations: return "invalid iteration count in SCRAM server-first-message";
      case scram_errc::iterations_above_cap: return "SCRAM iteration count above the client's cap";
      case scram_errc::unsupported_extension: return "unsupported mandatory SCRAM extension";
      case scram_errc::malformed_server_final: return "malformed SCRAM server-final-message";
      case scram_errc::server_error: return "the server reported a SCRAM error";
      case scram_errc::server_signature_mismatch: return "SCRAM server signature does not verify";
      case scram_errc::channel_binding_unsupported: return "channel binding cannot be computed";
      case scram_errc::crypto_failure: return "cryptographic library failure";
    }
    return "unknown pgpipe.scram error";
  }
};

}  // namespace

const std::error_category& scram_category() noexcept {
  static const category instance;
  return instance;
}

std::error_code make_error_code(scram_errc e) noexcept { return {static_cast<int>(e), scram_category()}; }

}  // namespace pgpipe::scram
