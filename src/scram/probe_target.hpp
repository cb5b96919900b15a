// The one server a probe talks to, read from a connection string the way
// libpq reads it (its parser, its defaults and PG* environment variables),
// but only the first host of a list: the probe reports on one server.
#pragma once

#include <string>

namespace pgpipe::scram::detail {

struct probe_target {
  std::string host, hostaddr, port, user, dbname, sslmode, sslrootcert, channel_binding, connect_timeout, password;
};

/// Fills `t` from `conninfo`; returns "" or what is wrong with the string
/// (never quoting its password). libpq's copy of the password is wiped.
std::string resolve_probe_target(const std::string& conninfo, probe_target& t);

}  // namespace pgpipe::scram::detail
