#include "blocking_common.hpp"

namespace pgpipe::bench {

pqxx::result run_statement(pqxx::connection_base& conn, const std::string& sql, bool prepared,
                           const std::vector<std::string>& args) {
  pqxx::nontransaction tx{conn};
  if (!prepared) return tx.exec_params(sql, pqxx::prepare::make_dynamic_params(args));
  // Declares the statement (a map lookup after the first time).
  conn.prepare(blocking_statement, sql);
  return tx.exec_prepared(blocking_statement, pqxx::prepare::make_dynamic_params(args));
}

std::string consume(const pqxx::result& r, bool builtin) {
  if (builtin) {
    if (r.size() != 1) return "wrong_row_count";
    const auto ten = r[0][0].c_str();
    const auto so_luong = r[0][1].as<int>();
    // Uses both values so the reads cannot be optimised away.
    return (ten[0] == '\0' && so_luong < 0) ? "unexpected_value" : "";
  }
  std::size_t bytes = 0;
  for (const auto& row : r) {
    for (const auto& f : row) bytes += f.size();
  }
  return bytes == static_cast<std::size_t>(-1) ? "unexpected_value" : "";
}

}  // namespace pgpipe::bench
