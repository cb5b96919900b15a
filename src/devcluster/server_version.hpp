// What the PostgreSQL binaries in a directory are: their major version, which
// decides initdb's flags and what a test may expect, and the client tools of
// the same version (pg_basebackup), which a server package may not ship (the
// npm packages hold only initdb, pg_ctl and postgres).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace pgpipe::devcluster {

/// The major version in a `postgres --version` line: 13 for
/// "postgres (PostgreSQL) 13.23", 15 for "... 15.14 (Debian 15.14-0+deb12u1)",
/// 18 for "... 18beta1"; 9 for "... 9.6.24". nullopt when the text is not
/// such a line. Pure: no process is started.
std::optional<int> parse_version_major(std::string_view version_output);

/// The major version of `bindir`/postgres, from its --version. Cached per
/// directory; thread-safe. Throws std::runtime_error naming the binary when
/// it cannot be run or its output is not a version line.
int server_major(const std::string& bindir);

/// `tool` (e.g. "pg_basebackup") of the same major version as the server in
/// `bindir`: bindir's own, else the one in /usr/lib/postgresql/<major>/bin.
/// A tool of another major version does not count (pg_basebackup refuses a
/// newer server, and an older server's standby needs that server's layout).
/// nullopt when there is none. Thread-safe.
std::optional<std::string> matching_tool(const std::string& bindir, const std::string& tool);

/// What matching_tool() found missing, for an error or a skip: "no
/// pg_basebackup of PostgreSQL 13 (looked in <bindir> and
/// /usr/lib/postgresql/13/bin)".
std::string missing_tool(const std::string& bindir, const std::string& tool);

}  // namespace pgpipe::devcluster
