#include <pgpipe/scram/verifier.hpp>

#include <charconv>
#include <limits>

#include <pgpipe/scram/base64.hpp>
#include <pgpipe/scram/saslprep.hpp>
#include "scram/crypto.hpp"

namespace pgpipe::scram {
namespace {

constexpr std::string_view prefix = "SCRAM-SHA-256$";

// A positive decimal int without sign, spaces or leading '+'.
bool parse_positive_int(std::string_view s, int& out) {
  if (s.empty() || s.front() < '0' || s.front() > '9') return false;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size() && out > 0;
}

expected<verifier> build(std::string_view password, int iterations, std::span<const unsigned char> salt) {
  if (iterations < 1) return make_failure(scram_errc::bad_argument, "iteration count must be at least 1");
  if (salt.empty()) return make_failure(scram_errc::bad_argument, "salt must not be empty");
  auto prepared = saslprep(password);
  if (!prepared) return prepared.error();
  auto salted = detail::salted_password(prepared->bytes, salt, iterations);
  detail::cleanse(prepared->bytes.data(), prepared->bytes.size());
  if (!salted) return salted.error();
  auto keys = detail::derive_keys(*salted);
  detail::cleanse(salted->data(), salted->size());
  if (!keys) return keys.error();
  verifier v;
  v.iterations = iterations;
  v.salt.assign(salt.begin(), salt.end());
  v.stored_key = keys->stored_key;
  v.server_key = keys->server_key;
  detail::cleanse(keys->client_key.data(), keys->client_key.size());
  return v;
}

expected<detail::key> decode_key(std::string_view text, scram_errc code, const char* name) {
  auto bytes = base64_decode(text);
  if (!bytes) return make_failure(code, std::string("verifier ") + name + ": " + bytes.error().message);
  if (bytes->size() != key_length) {
    return make_failure(code, std::string("verifier ") + name + " decodes to " + std::to_string(bytes->size()) +
                                  " bytes, expected " + std::to_string(key_length));
  }
  detail::key k{};
  std::copy(bytes->begin(), bytes->end(), k.begin());
  return k;
}

}  // namespace

std::string verifier::to_string() const {
  return std::string(prefix) + std::to_string(iterations) + ":" + base64_encode(salt) + "$" +
         base64_encode(stored_key) + ":" + base64_encode(server_key);
}

expected<verifier> make_verifier(std::string_view password, int iterations) {
  auto salt = detail::random_bytes(default_salt_length);
  if (!salt) return salt.error();
  return build(password, iterations, *salt);
}

expected<verifier> make_verifier(std::string_view password, int iterations, std::span<const unsigned char> salt) {
  return build(password, iterations, salt);
}

expected<verifier> parse_verifier(std::string_view text) {
  if (text.substr(0, prefix.size()) != prefix) {
    // md5 hashes are the usual confusion; name them, quote nothing.
    if (text.substr(0, 3) == "md5") {
      return make_failure(scram_errc::verifier_bad_prefix,
                          "verifier is an MD5 hash (md5...), not SCRAM-SHA-256$...; set the password again "
                          "with password_encryption = 'scram-sha-256'");
    }
    return make_failure(scram_errc::verifier_bad_prefix, "verifier does not start with \"SCRAM-SHA-256$\"");
  }
  const std::string_view rest = text.substr(prefix.size());
  const auto dollar = rest.find('$');
  if (dollar == std::string_view::npos) {
    return make_failure(scram_errc::verifier_bad_format,
                        "verifier has no '$' between <iterations>:<salt> and <StoredKey>:<ServerKey>");
  }
  const std::string_view params = rest.substr(0, dollar);
  const std::string_view keys = rest.substr(dollar + 1);
  if (keys.find('$') != std::string_view::npos) {
    return make_failure(scram_errc::verifier_bad_format, "verifier has more than two '$' separators");
  }
  const auto colon1 = params.find(':');
  if (colon1 == std::string_view::npos || params.find(':', colon1 + 1) != std::string_view::npos) {
    return make_failure(scram_errc::verifier_bad_format,
                        "verifier iteration part is not exactly <iterations>:<salt>");
  }
  const auto colon2 = keys.find(':');
  if (colon2 == std::string_view::npos || keys.find(':', colon2 + 1) != std::string_view::npos) {
    return make_failure(scram_errc::verifier_bad_format, "verifier key part is not exactly <StoredKey>:<ServerKey>");
  }
  verifier v;
  const std::string_view iter_text = params.substr(0, colon1);
  if (!parse_positive_int(iter_text, v.iterations)) {
    // The field is described, never quoted: a verifier is secret-equivalent
    // and users paste passwords into it.
    return make_failure(scram_errc::verifier_bad_iterations,
                        "verifier iteration count (" + std::to_string(iter_text.size()) +
                            " bytes, not shown) is not a decimal integer from 1 to " +
                            std::to_string(std::numeric_limits<int>::max()));
  }
  const std::string_view salt_text = params.substr(colon1 + 1);
  if (salt_text.empty()) return make_failure(scram_errc::verifier_bad_salt, "verifier salt is empty");
  auto salt = base64_decode(salt_text);
  if (!salt) return make_failure(scram_errc::verifier_bad_salt, "verifier salt: " + salt.error().message);
  if (salt->empty()) return make_failure(scram_errc::verifier_bad_salt, "verifier salt is empty");
  v.salt = std::move(*salt);
  auto stored = decode_key(keys.substr(0, colon2), scram_errc::verifier_bad_stored_key, "StoredKey");
  if (!stored) return stored.error();
  auto server = decode_key(keys.substr(colon2 + 1), scram_errc::verifier_bad_server_key, "ServerKey");
  if (!server) return server.error();
  v.stored_key = *stored;
  v.server_key = *server;
  return v;
}

expected<bool> verify_password(std::string_view password, const verifier& v) {
  auto candidate = build(password, v.iterations, v.salt);
  if (!candidate) return candidate.error();
  // Compare both keys without an early exit, so the time does not depend on
  // which one differs.
  const bool stored_ok = detail::equal_ct(candidate->stored_key, v.stored_key);
  const bool server_ok = detail::equal_ct(candidate->server_key, v.server_key);
  return stored_ok & server_ok;
}

}  // namespace pgpipe::scram
