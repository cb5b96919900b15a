// libpq's require_auth (16+) as a sans-IO decision: parse the list once,
// then ask for a verdict on each authentication request the server sends.
// The probe answers as libpq would, so the parsing rules, the order of the
// checks and the failure wording are libpq 18's (fe-connect.c's
// connectOptions2 and fe-auth.c's check_expected_areq / pg_SASL_init).
// Internal to the scram layer; tested by tests/unit/scram/require_auth_test.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pgpipe::scram::detail {

/// Authentication request codes of the protocol's AuthenticationXXX
/// messages (the int32 after 'R').
namespace auth_request {
inline constexpr int ok = 0;
inline constexpr int cleartext = 3;
inline constexpr int md5 = 5;
inline constexpr int gss = 7;
inline constexpr int gss_continue = 8;
inline constexpr int sspi = 9;
inline constexpr int sasl = 10;
inline constexpr int sasl_continue = 11;
inline constexpr int sasl_final = 12;
}  // namespace auth_request

/// What a require_auth value allows. Default-constructed: the option is not
/// set, every request is allowed and none is required.
class require_auth_policy {
 public:
  /// Parses `value` ("scram-sha-256", "password,md5", "!password",
  /// "none,scram-sha-256"...) as the libpq of `libpq_version` (PQlibVersion:
  /// 160000 and up) does. Returns "" and fills `out`, or libpq's message for
  /// a malformed list (an unknown method, a method listed twice, negated and
  /// plain methods mixed). An empty value means the option is not set
  /// (libpq ignores it). Before libpq 18 SCRAM is the only SASL mechanism:
  /// "oauth" is unknown, and "!scram-sha-256" refuses SASL requests as such.
  static std::string parse(std::string_view value, int libpq_version, require_auth_policy& out);

  bool set() const noexcept { return !text_.empty(); }
  const std::string& text() const noexcept { return text_; }

  /// The verdict on an authentication request `code` (auth_request::*),
  /// "" when libpq would go on, else libpq's message. For ok,
  /// `client_finished_auth` says whether the client completed an exchange
  /// (sent a password, or checked the server's SCRAM signature): libpq
  /// refuses an AuthenticationOk that skipped the exchange unless "none"
  /// is allowed.
  std::string check_request(int code, bool client_finished_auth) const;

  /// The verdict on the SASL mechanism the client chose from the server's
  /// list ("SCRAM-SHA-256", "SCRAM-SHA-256-PLUS", "OAUTHBEARER").
  std::string check_mechanism(std::string_view mechanism) const;

 private:
  std::string failure(std::string_view reason) const;

  std::string text_;
  bool auth_required_ = false;
  std::uint32_t allowed_requests_ = ~std::uint32_t{0};  // bit n: request code n
  bool scram_allowed_ = true;
  bool oauth_allowed_ = true;
};

}  // namespace pgpipe::scram::detail
