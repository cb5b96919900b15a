// host_walk: a multi-host connection string as one libpq connect per host.
//
// Why: libpq 15's nonblocking connect (PQconnectStart/PQconnectPoll) has no
// per-host timeout, so a first host that accepts TCP and never answers would
// eat the whole connect_timeout. The async driver therefore walks the hosts
// itself, one attempt per host with its own deadline, in libpq's order and
// with libpq's target_session_attrs semantics: each attempt keeps the
// attribute (libpq rejects a host that does not match), and prefer-standby
// is two passes, "standby" over every host first, then "any".
//
// The planning is pure (PQconninfoParse only, no connection) and unit-tested
// without a server; start_connect is the one call that opens a connection.
#pragma once

#include <string>
#include <string_view>
#include <vector>

struct pg_conn;

namespace pgpipe::detail {

struct connect_attempt {
  /// For PQconnectStartParams (start_connect builds the null-terminated arrays).
  std::vector<std::string> keys;
  std::vector<std::string> values;
  bool expand_dbname = false;
  /// "host 127.0.0.1 port 5432" (what an error about this attempt names),
  /// empty for a single attempt that carries the whole string.
  std::string where;
};

/// The attempts for `conninfo` (key=value or URI), in order. One attempt
/// with the string unchanged (expand_dbname, libpq does everything) when
/// there is at most one host, or when the string does not parse or its host
/// and port lists do not match: libpq's own error then says why.
/// `fallback_application_name` is added to every attempt.
std::vector<connect_attempt> plan_host_walk(const std::string& conninfo, const std::string& fallback_application_name);

/// Starts the nonblocking connect of one attempt (PQconnectStartParams).
/// Null only when libpq is out of memory; a CONNECTION_BAD handle carries
/// libpq's reason and is the caller's to finish.
pg_conn* start_connect(const connect_attempt& a);

/// Whether the walk goes on to the next attempt after one failed with
/// libpq's `message` (scrubbed or not: only its kind is read). libpq's rule.
bool walk_moves_on(std::string_view message);

}  // namespace pgpipe::detail
