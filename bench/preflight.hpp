// Checks made before any run, so a mistake in the user's input is one clear
// error at once instead of a table of failed runs: the --sql file (missing,
// a directory, unreadable, empty), the server (unreachable, refused login)
// and the statement (the server's parse and analysis: syntax, a table or a
// column that does not exist, named by SQLSTATE).
#pragma once

#include "workload.hpp"

#include <string>

namespace pgpipe::bench {

/// Throws std::invalid_argument naming the file and what is wrong with it.
void check_sql_file(const std::string& path);

/// Connects once (connect_timeout 10 s unless the conninfo sets one). An empty
/// conninfo means libpq's environment (PGHOST...). Throws std::runtime_error
/// "cannot reach the server (<where>): <libpq's message>"; never the password.
void check_server(const std::string& conninfo);

/// Parses and analyses the statement on the server (an unnamed Parse +
/// Describe: nothing is executed, so a write workload writes nothing here).
/// Throws std::runtime_error "the server rejected the statement of <name>:
/// SQLSTATE 42P01 (undefined_table): relation "x" does not exist".
void check_statement(const std::string& conninfo, const workload& w);

}  // namespace pgpipe::bench
