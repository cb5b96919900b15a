#include "core/sql/sql_statements.hpp"

#include "core/sql/sql_lexer.hpp"

namespace pgpipe::detail {

std::vector<std::string_view> sql_statements(std::string_view sql) {
  std::vector<std::string_view> out;
  sql_lexer lx(sql);
  bool open = false;  // a statement has begun and not ended
  std::size_t begin = 0;
  std::size_t end = 0;
  for (sql_token t = lx.next();; t = lx.next()) {
    const bool boundary = t.kind == sql_tok::end || is_sql_punct(t, ';');
    if (boundary) {
      if (open) out.push_back(sql.substr(begin, end - begin));
      open = false;
      if (t.kind == sql_tok::end) return out;
      continue;
    }
    if (!open) {
      open = true;
      begin = t.begin;
    }
    end = t.end;
  }
}

}  // namespace pgpipe::detail
