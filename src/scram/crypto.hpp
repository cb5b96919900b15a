// OpenSSL primitives the SCRAM code needs, with the sizes fixed to SHA-256.
// Internal to the scram layer.
#pragma once

#include <array>
#include <span>
#include <string_view>
#include <vector>

#include <pgpipe/scram/errors.hpp>
#include <pgpipe/scram/verifier.hpp>

namespace pgpipe::scram::detail {

using key = std::array<unsigned char, key_length>;

/// PBKDF2-HMAC-SHA-256 of the (already SASLprep'ed) password.
expected<key> salted_password(std::string_view prepared, std::span<const unsigned char> salt, int iterations);
expected<key> hmac_sha256(std::span<const unsigned char> k, std::string_view data);
expected<key> sha256(std::span<const unsigned char> data);
expected<std::vector<unsigned char>> random_bytes(std::size_t n);
/// Constant-time equality (sizes are public).
bool equal_ct(std::span<const unsigned char> a, std::span<const unsigned char> b);
/// Wipes a buffer that held a secret.
void cleanse(void* p, std::size_t n) noexcept;

/// ClientKey, StoredKey and ServerKey from SaltedPassword.
struct derived_keys {
  key client_key;
  key stored_key;
  key server_key;
};
expected<derived_keys> derive_keys(const key& salted);

}  // namespace pgpipe::scram::detail
