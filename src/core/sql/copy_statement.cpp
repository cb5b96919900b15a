#include "core/sql/copy_statement.hpp"

#include "core/sql/sql_lexer.hpp"
#include "core/sql/sql_statements.hpp"
#include "core/sql/sql_text.hpp"

namespace pgpipe::detail {

std::string copy_statement_refusal(std::string_view sql) {
  if (std::string why = nul_byte_refusal(sql); !why.empty()) return "copy_in/copy_out: " + why;
  const auto statements = sql_statements(sql);
  if (statements.size() > 1) {
    return "copy_in/copy_out take one statement, a COPY; the text holds " + std::to_string(statements.size()) +
           " (separated by semicolons); nothing was sent";
  }
  if (statements.empty() || !is_sql_word(sql_lexer(statements.front()).next(), "copy")) {
    return "copy_in/copy_out take a COPY statement; nothing was sent";
  }
  return {};
}

}  // namespace pgpipe::detail
