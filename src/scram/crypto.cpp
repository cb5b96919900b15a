#include "scram/crypto.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

namespace pgpipe::scram::detail {

expected<key> salted_password(std::string_view prepared, std::span<const unsigned char> salt, int iterations) {
  key out{};
  if (PKCS5_PBKDF2_HMAC(prepared.data(), static_cast<int>(prepared.size()), salt.data(),
                        static_cast<int>(salt.size()), iterations, EVP_sha256(), static_cast<int>(out.size()),
                        out.data()) != 1) {
    return make_failure(scram_errc::crypto_failure, "PBKDF2-HMAC-SHA-256 failed");
  }
  return out;
}

expected<key> hmac_sha256(std::span<const unsigned char> k, std::string_view data) {
  key out{};
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), k.data(), static_cast<int>(k.size()), reinterpret_cast<const unsigned char*>(data.data()),
           data.size(), out.data(), &len) == nullptr ||
      len != out.size()) {
    return make_failure(scram_errc::crypto_failure, "HMAC-SHA-256 failed");
  }
  return out;
}

expected<key> sha256(std::span<const unsigned char> data) {
  key out{};
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), out.data(), &len, EVP_sha256(), nullptr) != 1 || len != out.size()) {
    return make_failure(scram_errc::crypto_failure, "SHA-256 failed");
  }
  return out;
}

expected<std::vector<unsigned char>> random_bytes(std::size_t n) {
  std::vector<unsigned char> out(n);
  if (RAND_bytes(out.data(), static_cast<int>(n)) != 1) {
    return make_failure(scram_errc::crypto_failure, "RAND_bytes failed");
  }
  return out;
}

bool equal_ct(std::span<const unsigned char> a, std::span<const unsigned char> b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

void cleanse(void* p, std::size_t n) noexcept {
  if (p != nullptr && n != 0) OPENSSL_cleanse(p, n);
}

expected<derived_keys> derive_keys(const key& salted) {
  auto client_key = hmac_sha256(salted, "Client Key");
  if (!client_key) return client_key.error();
  auto stored_key = sha256(*client_key);
  if (!stored_key) return stored_key.error();
  auto server_key = hmac_sha256(salted, "Server Key");
  if (!server_key) return server_key.error();
  return derived_keys{*client_key, *stored_key, *server_key};
}

}  // namespace pgpipe::scram::detail
