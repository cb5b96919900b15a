// libpq's check on every authentication request, before anything is
// answered (fe-auth.c's check_expected_areq): sslcertmode=require,
// require_auth, then channel_binding=require, in that order and with
// libpq's words. Sans-IO: the probe passes what it knows of the session.
// Internal to the scram layer; tested by tests/unit/scram/expected_request_test.cpp.
#pragma once

#include <string>

#include "scram/probe_target.hpp"

namespace pgpipe::scram::detail {

/// What the session has done so far, as far as the check cares.
struct session_facts {
  bool client_finished_auth = false;          ///< a password sent, or a SCRAM server signature checked
  bool channel_bound = false;                 ///< SCRAM-SHA-256-PLUS with tls-server-end-point in use
  bool client_certificate_requested = false;  ///< the TLS server sent a CertificateRequest
};

/// "" when libpq would go on with request `code` (auth_request::*), else
/// libpq's message. The probe never sends a client certificate, so with
/// sslcertmode=require every AuthenticationOk fails.
std::string check_expected_request(const probe_target& t, int code, const session_facts& s);

}  // namespace pgpipe::scram::detail
