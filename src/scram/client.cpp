#include <pgpipe/scram/client.hpp>

#include <charconv>
#include <vector>

#include <pgpipe/scram/base64.hpp>
#include <pgpipe/scram/saslprep.hpp>
#include "scram/crypto.hpp"

namespace pgpipe::scram {
namespace {

constexpr std::size_t nonce_random_bytes = 18;  // as libpq (SCRAM_RAW_NONCE_LEN)

// RFC 5802 "printable": %x21-2B / %x2D-7E (no comma).
bool printable(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x21 || c > 0x7E || c == ',') return false;
  }
  return !s.empty();
}

// saslname: ',' and '=' escaped as =2C and =3D.
std::string escape_saslname(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == ',') out += "=2C";
    else if (c == '=') out += "=3D";
    else out += c;
  }
  return out;
}

struct attribute {
  char name;
  std::string_view value;
};

// Splits "a=v,b=w" into attributes; fails on an element that is not
// <ALPHA>=<value>. `what` names the message in errors.
expected<std::vector<attribute>> split_attributes(std::string_view msg, scram_errc code, const char* what) {
  std::vector<attribute> out;
  if (msg.empty()) return make_failure(code, std::string(what) + " is empty");
  std::size_t pos = 0;
  while (true) {
    const auto comma = msg.find(',', pos);
    const std::string_view item = msg.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    const std::size_t index = out.size() + 1;
    if (item.size() < 2 || item[1] != '=' ||
        !((item[0] >= 'a' && item[0] <= 'z') || (item[0] >= 'A' && item[0] <= 'Z'))) {
      return make_failure(code, std::string(what) + ": attribute " + std::to_string(index) +
                                    " is not of the form <letter>=<value>");
    }
    out.push_back({item[0], item.substr(2)});
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

}  // namespace

client::client(std::string_view password, client_params params)
    : password_(password), params_(std::move(params)) {}

client::~client() { wipe(); }

client::client(client&& other) noexcept
    : password_(std::move(other.password_)),
      params_(std::move(other.params_)),
      state_(other.state_),
      gs2_header_(std::move(other.gs2_header_)),
      client_nonce_(std::move(other.client_nonce_)),
      client_first_bare_(std::move(other.client_first_bare_)),
      salt_(std::move(other.salt_)),
      iterations_(other.iterations_),
      server_signature_(std::move(other.server_signature_)) {
  other.wipe();
  other.state_ = state::failed;
}

client& client::operator=(client&& other) noexcept {
  if (this != &other) {
    wipe();
    password_ = std::move(other.password_);
    params_ = std::move(other.params_);
    state_ = other.state_;
    gs2_header_ = std::move(other.gs2_header_);
    client_nonce_ = std::move(other.client_nonce_);
    client_first_bare_ = std::move(other.client_first_bare_);
    salt_ = std::move(other.salt_);
    iterations_ = other.iterations_;
    server_signature_ = std::move(other.server_signature_);
    other.wipe();
    other.state_ = state::failed;
  }
  return *this;
}

void client::wipe() noexcept {
  detail::cleanse(password_.data(), password_.size());
  password_.clear();
  detail::cleanse(server_signature_.data(), server_signature_.size());
  server_signature_.clear();
}

failure client::fail(scram_errc e, std::string message) { return fail(make_failure(e, std::move(message))); }

failure client::fail(failure f) {
  state_ = state::failed;
  wipe();
  return f;
}

std::string client::mechanism() const {
  return params_.binding == channel_binding_mode::tls_server_end_point ? "SCRAM-SHA-256-PLUS" : "SCRAM-SHA-256";
}

expected<std::string> client::client_first() {
  if (state_ != state::initial) return fail(scram_errc::bad_state, "client_first called twice or after a failure");
  if (params_.iteration_cap < 1) return fail(scram_errc::bad_argument, "iteration cap must be at least 1");
  switch (params_.binding) {
    case channel_binding_mode::none: gs2_header_ = "n,,"; break;
    case channel_binding_mode::supported_not_used: gs2_header_ = "y,,"; break;
    case channel_binding_mode::tls_server_end_point:
      if (params_.channel_binding_data.empty()) {
        return fail(scram_errc::bad_argument, "SCRAM-SHA-256-PLUS needs the tls-server-end-point channel-binding data");
      }
      gs2_header_ = "p=tls-server-end-point,,";
      break;
  }
  // Validate and normalise the password now so that a bad one fails before
  // anything is sent.
  auto prepared = saslprep(password_);
  if (!prepared) return fail(prepared.error());
  detail::cleanse(password_.data(), password_.size());
  password_ = std::move(prepared->bytes);

  if (params_.client_nonce.empty()) {
    auto bytes = detail::random_bytes(nonce_random_bytes);
    if (!bytes) return fail(bytes.error());
    client_nonce_ = base64_encode(*bytes);
  } else {
    if (!printable(params_.client_nonce)) {
      return fail(scram_errc::bad_argument, "client nonce must be printable ASCII without ','");
    }
    client_nonce_ = params_.client_nonce;
  }
  client_first_bare_ = "n=" + escape_saslname(params_.username) + ",r=" + client_nonce_;
  state_ = state::first_sent;
  return gs2_header_ + client_first_bare_;
}

expected<std::string> client::client_final(std::string_view server_first) {
  if (state_ != state::first_sent) return fail(scram_errc::bad_state, "client_final called before client_first or twice");
  constexpr const char* what = "server-first-message";
  auto attrs = split_attributes(server_first, scram_errc::malformed_server_first, what);
  if (!attrs) return fail(scram_errc::malformed_server_first, attrs.error().message);
  const auto& a = *attrs;
  if (a[0].name == 'm') {
    return fail(scram_errc::unsupported_extension, "server-first-message has a mandatory extension (m=) this client does not support");
  }
  if (a.size() < 3) {
    return fail(scram_errc::malformed_server_first, "server-first-message has " + std::to_string(a.size()) +
                                                  " attribute(s); expected r=, s= and i=");
  }
  if (a[0].name != 'r') {
    return fail(scram_errc::malformed_server_first,
                std::string("server-first-message: expected r= (nonce) first, got ") + a[0].name + "=");
  }
  if (a[1].name != 's') {
    return fail(scram_errc::malformed_server_first,
                std::string("server-first-message: expected s= (salt) second, got ") + a[1].name + "=");
  }
  if (a[2].name != 'i') {
    return fail(scram_errc::malformed_server_first,
                std::string("server-first-message: expected i= (iteration count) third, got ") + a[2].name + "=");
  }
  const std::string_view nonce = a[0].value;
  if (!printable(nonce)) {
    return fail(scram_errc::malformed_server_first, "server-first-message: nonce has characters outside %x21-7E or is empty");
  }
  if (nonce.size() <= client_nonce_.size() || nonce.substr(0, client_nonce_.size()) != client_nonce_) {
    return fail(scram_errc::nonce_mismatch,
                "server nonce does not start with the client nonce followed by the server's part");
  }
  auto salt = base64_decode(a[1].value);
  if (!salt) return fail(scram_errc::bad_server_salt, "server-first-message salt: " + salt.error().message);
  if (salt->empty()) return fail(scram_errc::bad_server_salt, "server-first-message salt is empty");
  const std::string_view iter_text = a[2].value;
  const bool all_digits = !iter_text.empty() && iter_text.find_first_not_of("0123456789") == std::string_view::npos;
  const auto first_nonzero = iter_text.find_first_not_of('0');
  if (!all_digits || first_nonzero == std::string_view::npos) {
    // Described, not quoted: server-sent text is never echoed (a hostile
    // server may plant anything there, including what the user typed).
    return fail(scram_errc::bad_server_iterations, "server-first-message iteration count (" +
                                                 std::to_string(iter_text.size()) +
                                                 " bytes, not shown) is not a positive decimal integer");
  }
  // A long run of digits is a huge count, not a malformed one: the cap is
  // the answer for a server that asks for it.
  const std::string_view significant = iter_text.substr(first_nonzero);
  long long iter_value = 0;
  if (significant.size() <= 18) {
    std::from_chars(significant.data(), significant.data() + significant.size(), iter_value);
  }
  if (significant.size() > 18 || iter_value > params_.iteration_cap) {
    // The count is shown as the number it parsed to (digits only, checked
    // above), which is what a user needs to choose a cap.
    const std::string asked = significant.size() > 18 ? "more than 10^18" : std::to_string(iter_value);
    return fail(scram_errc::iterations_above_cap, "server asks for " + asked + " iterations, above the cap of " +
                                                std::to_string(params_.iteration_cap));
  }
  const int iterations = static_cast<int>(iter_value);
  for (std::size_t i = 3; i < a.size(); ++i) {
    if (a[i].value.empty()) {
      return fail(scram_errc::malformed_server_first,
                  std::string("server-first-message: extension ") + a[i].name + "= has an empty value");
    }
  }

  salt_ = std::move(*salt);
  iterations_ = iterations;

  std::string cbind_input = gs2_header_;
  if (params_.binding == channel_binding_mode::tls_server_end_point) {
    cbind_input.append(params_.channel_binding_data.begin(), params_.channel_binding_data.end());
  }
  const std::string without_proof =
      "c=" + base64_encode(std::span(reinterpret_cast<const unsigned char*>(cbind_input.data()), cbind_input.size())) +
      ",r=" + std::string(nonce);
  const std::string auth_message = client_first_bare_ + "," + std::string(server_first) + "," + without_proof;

  auto salted = detail::salted_password(password_, salt_, iterations_);
  detail::cleanse(password_.data(), password_.size());
  password_.clear();
  if (!salted) return fail(scram_errc::crypto_failure, salted.error().message);
  auto keys = detail::derive_keys(*salted);
  detail::cleanse(salted->data(), salted->size());
  if (!keys) return fail(scram_errc::crypto_failure, keys.error().message);
  auto client_signature = detail::hmac_sha256(keys->stored_key, auth_message);
  auto server_signature = detail::hmac_sha256(keys->server_key, auth_message);
  if (!client_signature || !server_signature) {
    detail::cleanse(&*keys, sizeof(*keys));
    return fail(scram_errc::crypto_failure, "HMAC-SHA-256 failed");
  }
  detail::key proof{};
  for (std::size_t i = 0; i < proof.size(); ++i) proof[i] = keys->client_key[i] ^ (*client_signature)[i];
  detail::cleanse(&*keys, sizeof(*keys));
  server_signature_.assign(server_signature->begin(), server_signature->end());
  state_ = state::final_sent;
  return without_proof + ",p=" + base64_encode(proof);
}

expected<void> client::verify_server_final(std::string_view server_final) {
  if (state_ != state::final_sent) return fail(scram_errc::bad_state, "verify_server_final called before client_final or twice");
  auto attrs = split_attributes(server_final, scram_errc::malformed_server_final, "server-final-message");
  if (!attrs) return fail(scram_errc::malformed_server_final, attrs.error().message);
  const auto& a = *attrs;
  if (a[0].name == 'e') {
    // Name the error only when it is one of RFC 5802's server-error-values:
    // arbitrary server text is never echoed, since a hostile server could
    // plant anything there (the fuzzer planted the password itself).
    static constexpr std::string_view known[] = {
        "invalid-encoding", "extensions-not-supported", "invalid-proof", "channel-bindings-dont-match",
        "server-does-support-channel-binding", "channel-binding-not-supported",
        "unsupported-channel-binding-type", "unknown-user", "invalid-username-encoding", "no-resources",
        "other-error"};
    for (std::string_view k : known)
      if (a[0].value == k) return fail(scram_errc::server_error, "server reported SCRAM error \"" + std::string(k) + "\"");
    return fail(scram_errc::server_error, "server reported a SCRAM error outside RFC 5802's list (" +
                                        std::to_string(a[0].value.size()) + " bytes, not shown)");
  }
  if (a[0].name != 'v') {
    return fail(scram_errc::malformed_server_final,
                std::string("server-final-message: expected v= (verifier) or e= (error), got ") + a[0].name + "=");
  }
  auto signature = base64_decode(a[0].value);
  if (!signature) return fail(scram_errc::malformed_server_final, "server-final-message v=: " + signature.error().message);
  if (signature->size() != key_length) {
    return fail(scram_errc::malformed_server_final, "server-final-message v= decodes to " +
                                                  std::to_string(signature->size()) + " bytes, expected " +
                                                  std::to_string(key_length));
  }
  for (std::size_t i = 1; i < a.size(); ++i) {
    if (a[i].value.empty()) {
      return fail(scram_errc::malformed_server_final,
                  std::string("server-final-message: extension ") + a[i].name + "= has an empty value");
    }
  }
  if (!detail::equal_ct(*signature, server_signature_)) {
    return fail(scram_errc::server_signature_mismatch,
                "server signature does not match: the server does not know this password's verifier");
  }
  state_ = state::done;
  wipe();
  return {};
}

}  // namespace pgpipe::scram
