// What the two blocking drivers (executor and thread-per-client) share.
#pragma once

#include <pqxx/pqxx>

#include <string>
#include <vector>

namespace pgpipe::bench {

/// The statement name libpqxx prepares on each connection on first use
/// (pgbench -M prepared and the async driver prepare too).
inline constexpr const char* blocking_statement = "pgpipe_bench";

/// Runs the workload's statement with `args`: prepared once per connection
/// as blocking_statement (libpqxx declares it, prepares on first use), or
/// unnamed with exec_params when `prepared` is false (--no-prepared).
pqxx::result run_statement(pqxx::connection_base& conn, const std::string& sql, bool prepared,
                           const std::vector<std::string>& args);

/// Reads a result as the async drivers' consume() does: the built-in lookup
/// reads ten and so_luong and checks the key existed; a --sql workload
/// touches every field. Returns an error kind, or "" when fine.
std::string consume(const pqxx::result& r, bool builtin);

}  // namespace pgpipe::bench
