#include "scram/expected_request.hpp"

namespace pgpipe::scram::detail {

std::string check_expected_request(const probe_target& t, int code, const session_facts& s) {
  if (t.sslcertmode == "require" && code == auth_request::ok) {
    return s.client_certificate_requested ? "server accepted connection without a valid SSL certificate"
                                          : "server did not request an SSL certificate";
  }
  if (auto e = t.require_auth.check_request(code, s.client_finished_auth); !e.empty()) return e;
  if (t.channel_binding != "require") return {};
  // Required binding: no answer to a request that cannot bind (it could
  // leak the password), and no session that skipped it.
  switch (code) {
    case auth_request::sasl:
    case auth_request::sasl_continue:
    case auth_request::sasl_final:
      return {};
    case auth_request::ok:
      return s.channel_bound ? "" : "channel binding required, but server authenticated client without channel binding";
    default:
      return "channel binding required but not supported by server's authentication request";
  }
}

}  // namespace pgpipe::scram::detail
