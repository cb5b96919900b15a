// PostgreSQL SCRAM-SHA-256 verifiers ("secrets" in PostgreSQL's words):
//   SCRAM-SHA-256$<iterations>:<base64 salt>$<base64 StoredKey>:<base64 ServerKey>
// the form pg_authid.rolpassword holds and ALTER ROLE ... PASSWORD accepts.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <pgpipe/scram/errors.hpp>

namespace pgpipe::scram {

/// PostgreSQL's default (scram_iterations in 16+, fixed in 15).
inline constexpr int default_iterations = 4096;
/// PostgreSQL's salt length (SCRAM_DEFAULT_SALT_LEN).
inline constexpr std::size_t default_salt_length = 16;
/// SHA-256 output length: StoredKey, ServerKey, proofs and signatures.
inline constexpr std::size_t key_length = 32;

/// A SCRAM-SHA-256 verifier as PostgreSQL stores it in pg_authid:
/// `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`.
struct verifier {
  int iterations = 0;                                   ///< PBKDF2 iterations
  std::vector<unsigned char> salt;                      ///< the salt, decoded
  std::array<unsigned char, key_length> stored_key{};  ///< H(ClientKey)
  std::array<unsigned char, key_length> server_key{};  ///< HMAC(SaltedPassword, "Server Key")

  /// The text form PostgreSQL stores and accepts.
  std::string to_string() const;
  /// Field by field (not constant-time: for tests and tools, not for checking passwords).
  friend bool operator==(const verifier&, const verifier&) = default;
};

/// Builds a verifier as PostgreSQL does (SASLprep, then PBKDF2-HMAC-SHA-256)
/// with a fresh random salt of default_salt_length bytes from RAND_bytes.
/// Errors: bad_argument (iterations < 1, NUL in password), password_too_long,
/// crypto_failure. Thread-safe; cost grows linearly with `iterations`.
expected<verifier> make_verifier(std::string_view password, int iterations = default_iterations);

/// The same with a given, non-empty salt (deterministic: used for tests and
/// for reproducing a stored verifier).
expected<verifier> make_verifier(std::string_view password, int iterations,
                               std::span<const unsigned char> salt);

/// Parses the text form. Each malformation has its own code and a message
/// naming the part at fault: verifier_bad_prefix, verifier_bad_format,
/// verifier_bad_iterations, verifier_bad_salt, verifier_bad_stored_key,
/// verifier_bad_server_key. The message names the part and the rule it breaks
/// (with sizes and positions) and never quotes any byte of `text`: a verifier
/// is secret-equivalent, and a password pasted in its place must not be
/// printed back. Thread-safe.
expected<verifier> parse_verifier(std::string_view text);

/// True when `password` matches `v`; the key comparison is constant-time
/// (CRYPTO_memcmp). Errors as make_verifier. Thread-safe.
expected<bool> verify_password(std::string_view password, const verifier& v);

}  // namespace pgpipe::scram
