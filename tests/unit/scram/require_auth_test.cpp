// require_auth as libpq 18 reads it: the list, then a verdict per request.
#include <gtest/gtest.h>

#include "scram/require_auth.hpp"

namespace {

using pgpipe::scram::detail::require_auth_policy;
namespace req = pgpipe::scram::detail::auth_request;

constexpr int libpq_18 = 180004;
constexpr int libpq_16 = 160014;

require_auth_policy parsed(const char* value, int libpq_version = libpq_18) {
  require_auth_policy p;
  const std::string error = require_auth_policy::parse(value, libpq_version, p);
  EXPECT_EQ(error, "") << "require_auth=" << value;
  return p;
}

std::string parse_error(const char* value, int libpq_version = libpq_18) {
  require_auth_policy p;
  return require_auth_policy::parse(value, libpq_version, p);
}

// What a SCRAM login sends: SASL, continue, final, then ok after the
// client checked the signature.
bool scram_login_allowed(const require_auth_policy& p, const char* mechanism = "SCRAM-SHA-256-PLUS") {
  return p.check_request(req::sasl, false).empty() && p.check_mechanism(mechanism).empty() &&
         p.check_request(req::sasl_continue, false).empty() && p.check_request(req::sasl_final, false).empty() &&
         p.check_request(req::ok, true).empty();
}

TEST(require_auth, unset_allows_everything_and_requires_nothing) {
  const auto p = parsed("");
  EXPECT_FALSE(p.set());
  for (int code : {req::ok, req::cleartext, req::md5, req::gss, req::sspi, req::sasl, 4, 6, 42}) {
    EXPECT_EQ(p.check_request(code, false), "") << code;
  }
  EXPECT_EQ(p.check_mechanism("SCRAM-SHA-256"), "");
}

TEST(require_auth, scram_refuses_a_downgrade_to_cleartext_or_md5_with_libpqs_words) {
  const auto p = parsed("scram-sha-256");
  EXPECT_TRUE(scram_login_allowed(p));
  EXPECT_EQ(p.check_request(req::cleartext, false),
            "authentication method requirement \"scram-sha-256\" failed: server requested a cleartext password");
  EXPECT_EQ(p.check_request(req::md5, false),
            "authentication method requirement \"scram-sha-256\" failed: server requested a hashed password");
  EXPECT_EQ(p.check_request(req::gss, false),
            "authentication method requirement \"scram-sha-256\" failed: server requested GSSAPI authentication");
  EXPECT_EQ(p.check_request(req::sspi, false),
            "authentication method requirement \"scram-sha-256\" failed: server requested SSPI authentication");
  EXPECT_EQ(p.check_request(2, false),
            "authentication method requirement \"scram-sha-256\" failed: server requested an unknown authentication type");
}

TEST(require_auth, an_ok_without_an_exchange_fails_unless_none_is_allowed) {
  EXPECT_EQ(parsed("scram-sha-256").check_request(req::ok, false),
            "authentication method requirement \"scram-sha-256\" failed: server did not complete authentication");
  EXPECT_EQ(parsed("none").check_request(req::ok, false), "");
  EXPECT_EQ(parsed("scram-sha-256,none").check_request(req::ok, false), "");
  EXPECT_EQ(parsed("!password").check_request(req::ok, false), "");
  EXPECT_EQ(parsed("!none").check_request(req::ok, false),
            "authentication method requirement \"!none\" failed: server did not complete authentication");
  EXPECT_EQ(parsed("!none").check_request(req::ok, true), "");
}

TEST(require_auth, none_alone_refuses_every_exchange) {
  const auto p = parsed("none");
  EXPECT_EQ(p.check_request(req::sasl, false),
            "authentication method requirement \"none\" failed: server requested SASL authentication");
  EXPECT_NE(p.check_request(req::cleartext, false), "");
  EXPECT_NE(p.check_request(req::md5, false), "");
}

TEST(require_auth, password_and_md5_refuse_scram) {
  EXPECT_EQ(parsed("password").check_request(req::sasl, false),
            "authentication method requirement \"password\" failed: server requested SASL authentication");
  const auto p = parsed("password,md5");
  EXPECT_EQ(p.check_request(req::cleartext, false), "");
  EXPECT_EQ(p.check_request(req::md5, false), "");
  EXPECT_NE(p.check_request(req::sasl, false), "");
  EXPECT_FALSE(scram_login_allowed(p));
}

TEST(require_auth, negations_subtract_from_everything) {
  const auto no_scram = parsed("!scram-sha-256");
  EXPECT_EQ(no_scram.check_request(req::sasl, false), "");  // oauth could still answer it
  EXPECT_EQ(no_scram.check_mechanism("SCRAM-SHA-256-PLUS"),
            "authentication method requirement \"!scram-sha-256\" failed: server requested SCRAM-SHA-256-PLUS authentication");
  EXPECT_EQ(no_scram.check_request(req::md5, false), "");

  const auto no_sasl = parsed("!scram-sha-256,!oauth");
  EXPECT_EQ(no_sasl.check_request(req::sasl, false),
            "authentication method requirement \"!scram-sha-256,!oauth\" failed: server requested SASL authentication");

  const auto no_cleartext = parsed("!password,!md5");
  EXPECT_TRUE(scram_login_allowed(no_cleartext, "SCRAM-SHA-256"));
  EXPECT_NE(no_cleartext.check_request(req::cleartext, false), "");
  EXPECT_NE(no_cleartext.check_request(req::md5, false), "");
  EXPECT_EQ(no_cleartext.check_request(req::gss, false), "");
}

TEST(require_auth, oauth_alone_lets_sasl_start_and_refuses_the_scram_mechanism) {
  const auto p = parsed("oauth");
  EXPECT_EQ(p.check_request(req::sasl, false), "");
  EXPECT_EQ(p.check_mechanism("SCRAM-SHA-256"),
            "authentication method requirement \"oauth\" failed: server requested SCRAM-SHA-256 authentication");
  EXPECT_EQ(p.check_mechanism("OAUTHBEARER"), "");
}

TEST(require_auth, before_libpq_18_scram_is_the_only_sasl_mechanism) {
  // libpq 16 and 17: no oauth, so refusing SCRAM refuses SASL itself, and
  // the failure names the request, not the mechanism.
  EXPECT_EQ(parse_error("oauth", libpq_16), "invalid require_auth value: \"oauth\"");
  EXPECT_EQ(parse_error("!oauth", libpq_16), "invalid require_auth value: \"oauth\"");
  EXPECT_EQ(parsed("!scram-sha-256", libpq_16).check_request(req::sasl, false),
            "authentication method requirement \"!scram-sha-256\" failed: server requested SASL authentication");
  EXPECT_TRUE(scram_login_allowed(parsed("scram-sha-256", libpq_16)));
  EXPECT_TRUE(scram_login_allowed(parsed("!password", libpq_16)));
}

TEST(require_auth, sspi_and_gss_share_the_continue_request) {
  const auto p = parsed("sspi");
  EXPECT_EQ(p.check_request(req::sspi, false), "");
  EXPECT_EQ(p.check_request(req::gss_continue, false), "");
  EXPECT_NE(p.check_request(req::gss, false), "");
  EXPECT_EQ(parse_error("gss,sspi"), "");  // the shared bit alone is no duplicate
}

TEST(require_auth, malformed_lists_are_refused_as_libpq_refuses_them) {
  EXPECT_EQ(parse_error("scram"), "invalid require_auth value: \"scram\"");
  EXPECT_EQ(parse_error("SCRAM-SHA-256"), "invalid require_auth value: \"SCRAM-SHA-256\"");  // case matters
  EXPECT_EQ(parse_error("password, md5"), "invalid require_auth value: \" md5\"");
  EXPECT_EQ(parse_error("password,"), "invalid require_auth value: \"\"");
  EXPECT_EQ(parse_error("!"), "invalid require_auth value: \"\"");
  EXPECT_EQ(parse_error("md5,md5"), "require_auth method \"md5\" is specified more than once");
  EXPECT_EQ(parse_error("none,none"), "require_auth method \"none\" is specified more than once");
  EXPECT_EQ(parse_error("!none,!none"), "require_auth method \"!none\" is specified more than once");
  EXPECT_EQ(parse_error("!scram-sha-256,!scram-sha-256"),
            "require_auth method \"!scram-sha-256\" is specified more than once");
  EXPECT_EQ(parse_error("!password,md5"), "require_auth method \"md5\" cannot be mixed with negative methods");
  EXPECT_EQ(parse_error("md5,!password"),
            "negative require_auth method \"!password\" cannot be mixed with non-negative methods");
}

TEST(require_auth, a_refused_parse_leaves_the_policy_unset) {
  require_auth_policy p = parsed("md5");
  EXPECT_NE(require_auth_policy::parse("md5,bogus", libpq_18, p), "");
  EXPECT_FALSE(p.set());
}

}  // namespace
