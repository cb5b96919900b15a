#include "core/sql/commit_check.hpp"

#include "core/sql/sql_lexer.hpp"
#include "core/sql/sql_statements.hpp"

#include <string>

namespace pgpipe::detail {
namespace {

enum class ending { none, commit, prepare };

// What the last statement of `sql` asks for. A simple query reports the tag
// of its last statement; the extended protocol carries one statement.
ending last_statement_ending(std::string_view sql) {
  const auto statements = sql_statements(sql);
  if (statements.empty()) return ending::none;
  sql_lexer lx(statements.back());
  const sql_token first = lx.next();
  if (is_sql_word(first, "commit") || is_sql_word(first, "end")) {
    // COMMIT PREPARED 'id' finishes another, prepared, transaction.
    return is_sql_word(lx.next(), "prepared") ? ending::none : ending::commit;
  }
  if (is_sql_word(first, "prepare") && is_sql_word(lx.next(), "transaction")) return ending::prepare;
  return ending::none;
}

}  // namespace

bool commit_rolled_back(std::string_view sql, std::string_view command_tag) {
  return command_tag == "ROLLBACK" && last_statement_ending(sql) != ending::none;
}

std::string_view commit_statement_name(std::string_view sql) {
  return last_statement_ending(sql) == ending::prepare ? "PREPARE TRANSACTION" : "COMMIT";
}

diagnostics rolled_back_commit_diagnostics(std::string_view statement) {
  diagnostics d;
  d.sqlstate = "25P02";
  d.client_message = "the transaction had failed (an earlier statement in it raised an error) and was rolled "
                     "back: the server answered " +
                     std::string(statement) + " with ROLLBACK, nothing in it was committed";
  return d;
}

bool note_commit_in_doubt(const std::error_code& ec, diagnostics& d) {
  if (ec != errc::query_timeout && ec != errc::connection_lost) return false;
  std::string why = ec == errc::query_timeout ? "COMMIT was sent and not answered within query_timeout"
                                              : "the connection was lost with COMMIT sent";
  why += ": the transaction may have committed; check before running it again";
  d.client_message = d.client_message.empty() ? why : why + " (" + d.client_message + ")";
  return true;
}

}  // namespace pgpipe::detail
