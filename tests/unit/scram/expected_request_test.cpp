// libpq's check before answering each authentication request, in its
// order (sslcertmode, require_auth, channel_binding), and the protocol
// version a NegotiateProtocolVersion leaves.
#include <gtest/gtest.h>

#include <string>

#include "scram/expected_request.hpp"
#include "scram/probe_wire.hpp"

namespace {

using namespace pgpipe::scram::detail;
namespace req = pgpipe::scram::detail::auth_request;

probe_target target(const char* sslcertmode = "allow", const char* channel_binding = "prefer",
                    const char* require_auth = "") {
  probe_target t;
  t.sslcertmode = sslcertmode;
  t.channel_binding = channel_binding;
  EXPECT_EQ(require_auth_policy::parse(require_auth, 180004, t.require_auth), "");
  return t;
}

TEST(expected_request, defaults_let_every_request_through) {
  for (int code : {req::ok, req::cleartext, req::md5, req::sasl, req::gss}) {
    EXPECT_EQ(check_expected_request(target(), code, {}), "") << code;
  }
}

TEST(expected_request, sslcertmode_require_fails_every_ok_without_a_certificate_sent) {
  const auto t = target("require");
  EXPECT_EQ(check_expected_request(t, req::ok, {}), "server did not request an SSL certificate");
  session_facts asked;
  asked.client_certificate_requested = true;
  asked.client_finished_auth = true;
  EXPECT_EQ(check_expected_request(t, req::ok, asked), "server accepted connection without a valid SSL certificate");
  EXPECT_EQ(check_expected_request(t, req::sasl, {}), "");  // only at the end
}

TEST(expected_request, channel_binding_require_refuses_requests_that_cannot_bind) {
  const auto t = target("allow", "require");
  EXPECT_EQ(check_expected_request(t, req::cleartext, {}),
            "channel binding required but not supported by server's authentication request");
  EXPECT_EQ(check_expected_request(t, req::md5, {}),
            "channel binding required but not supported by server's authentication request");
  EXPECT_EQ(check_expected_request(t, req::ok, {}),
            "channel binding required, but server authenticated client without channel binding");
  session_facts bound;
  bound.channel_bound = true;
  EXPECT_EQ(check_expected_request(t, req::ok, bound), "");
  EXPECT_EQ(check_expected_request(t, req::sasl, {}), "");
}

TEST(expected_request, sslcertmode_comes_before_require_auth_which_comes_before_channel_binding) {
  EXPECT_EQ(check_expected_request(target("require", "require", "scram-sha-256"), req::ok, {}),
            "server did not request an SSL certificate");
  EXPECT_EQ(check_expected_request(target("allow", "require", "scram-sha-256"), req::md5, {}),
            "authentication method requirement \"scram-sha-256\" failed: server requested a hashed password");
}

std::string negotiate_body(int minor) {
  std::string b;
  put_i32(b, (3 << 16) | minor);
  put_i32(b, 0);
  return b;
}

TEST(negotiated_protocol, the_server_can_lower_the_version_to_the_minimum_and_no_further) {
  int minor = -1;
  EXPECT_EQ(negotiated_protocol(negotiate_body(0), 0, 2, minor), "");
  EXPECT_EQ(minor, 0);
  EXPECT_EQ(negotiated_protocol(negotiate_body(0), 2, 2, minor),
            "server only supports protocol version 3.0, but \"min_protocol_version\" was set to 3.2");
  EXPECT_EQ(negotiated_protocol(negotiate_body(2), 0, 0, minor),
            "received invalid protocol negotiation message: server requested downgrade to a higher-numbered version");
  EXPECT_EQ(negotiated_protocol("\0\3", 0, 2, minor), "received invalid protocol negotiation message: message too short");
}

}  // namespace
