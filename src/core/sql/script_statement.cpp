#include "core/sql/script_statement.hpp"

#include "core/sql/shared_statement.hpp"
#include "core/sql/sql_statements.hpp"
#include "core/sql/sql_text.hpp"

namespace pgpipe::detail {

bool leaves_session_changed(std::string_view statement) {
  const auto r = classify_shared_statement(statement);
  return r && r->code == errc::session_state_needs_lease && r->outlives_transaction;
}

script_check check_script(std::string_view sql, std::string_view call) {
  script_check c;
  if (std::string why = nul_byte_refusal(sql); !why.empty()) {
    c.refusal = std::string(call) + ": " + why;
    return c;
  }
  const auto statements = sql_statements(sql);
  if (statements.empty()) {
    c.refusal = std::string(call) + ": the script holds no statement; nothing was sent";
    return c;
  }
  for (auto s : statements) c.changes_session = c.changes_session || leaves_session_changed(s);
  return c;
}

}  // namespace pgpipe::detail
