// sql_lexer: PostgreSQL's lexical rules, as far as pgpipe needs them to read
// a statement's keywords before sending it: words (ASCII-folded, as the
// server folds keywords), quoted identifiers, string literals ('...' with '',
// E'...' with backslash escapes, $tag$...$tag$), parameters ($1), numbers,
// punctuation; blanks, -- comments and nested /* */ comments are skipped.
// Sans-IO, no allocation beyond the tokens' text.
//
// Used by shared_statement (what may run on a shared connection),
// statement_count (one statement only) and commit_check (a COMMIT the server
// answered with ROLLBACK). Its policy is theirs: it never refuses anything.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace pgpipe::detail {

enum class sql_tok { word, quoted_ident, string, param, number, punct, end };

struct sql_token {
  sql_tok kind = sql_tok::end;
  std::string text;  ///< words lower-cased; a string's content; a punct's char
  std::size_t begin = 0;  ///< where the token starts in the text (end: its length)
  std::size_t end = 0;    ///< one past its last character
};

/// ASCII only, as PostgreSQL's scanner folds keywords (the <cctype> versions
/// consult the process locale and could fold bytes of a UTF-8 name).
inline char sql_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

inline bool is_sql_word(const sql_token& t, std::string_view w) { return t.kind == sql_tok::word && t.text == w; }
inline bool is_sql_punct(const sql_token& t, char c) {
  return t.kind == sql_tok::punct && t.text.size() == 1 && t.text[0] == c;
}

class sql_lexer {
 public:
  explicit sql_lexer(std::string_view s) : s_(s) {}

  /// The next token; kind end once the text is over (and from then on).
  sql_token next() {
    skip_blanks_and_comments();
    const std::size_t at = i_;
    sql_token t = scan();
    t.begin = at;
    t.end = i_;
    return t;
  }

 private:
  sql_token scan();
  void skip_blanks_and_comments();
  sql_token string_literal(bool escapes);
  sql_token dollar();

  std::string_view s_;
  std::size_t i_ = 0;
};

}  // namespace pgpipe::detail
