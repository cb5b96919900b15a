// The one server a probe talks to, read from a connection string the way
// libpq reads it (its parser, its defaults and PG* environment variables),
// but only the first host of a list: the probe reports on one server.
//
// Every libpq option that changes authentication or TLS negotiation is
// either carried here for the probe to honour, or refused by name when set:
// the probe never connects with an option silently dropped, since its
// answer would then be about a client that does not exist.
#pragma once

#include <string>
#include <vector>

#include "scram/require_auth.hpp"

namespace pgpipe::scram::detail {

struct probe_target {
  std::string host, hostaddr, port, user, dbname, sslmode, sslrootcert, channel_binding, connect_timeout, password;
  std::string sslnegotiation = "postgres";  ///< "postgres" (SSLRequest) or "direct" (TLS first, ALPN)
  std::string sslcertmode = "allow";        ///< "disable", "allow", "require"
  bool sslsni = true;
  /// OpenSSL protocol versions (TLS1_2_VERSION...); 0: no bound.
  int ssl_min_protocol = 0, ssl_max_protocol = 0;
  /// Protocol minor versions: the StartupMessage asks for max; a server
  /// that offers less than min is refused.
  int min_protocol_minor = 0, max_protocol_minor = 0;
  require_auth_policy require_auth;
  /// "key=value" for each authentication or TLS option set away from
  /// libpq's default (from the string or a PG* variable), in libpq's order.
  std::vector<std::string> in_force;
};

/// Fills `t` from `conninfo`; returns "" or what is wrong with the string
/// or its options, in libpq's words where libpq has them (never quoting a
/// password). libpq's copy of the password is wiped. `password_chosen`: the
/// caller has its own answer to "which password" (given, or explicitly
/// none), so a password file (passfile, PGPASSFILE) would not be read and
/// is not refused.
std::string resolve_probe_target(const std::string& conninfo, bool password_chosen, probe_target& t);

}  // namespace pgpipe::scram::detail
