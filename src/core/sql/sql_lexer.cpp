#include "core/sql/sql_lexer.hpp"

namespace pgpipe::detail {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
// ASCII only (see sql_lower): the <cctype> versions consult the process
// locale on every character, the lexer's top cost in a profile.
bool ascii_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool ascii_digit(char c) { return c >= '0' && c <= '9'; }
bool ident_start(char c) { return ascii_alpha(c) || c == '_' || static_cast<unsigned char>(c) >= 0x80; }
bool ident_char(char c) { return ident_start(c) || ascii_digit(c) || c == '$'; }

}  // namespace

sql_token sql_lexer::scan() {
  sql_token t;
  if (i_ >= s_.size()) return t;
  const char c = s_[i_];
  if ((c == 'e' || c == 'E') && i_ + 1 < s_.size() && s_[i_ + 1] == '\'') {
    ++i_;
    return string_literal(true);
  }
  if (ident_start(c)) {
    t.kind = sql_tok::word;
    while (i_ < s_.size() && ident_char(s_[i_])) t.text.push_back(sql_lower(s_[i_++]));
    return t;
  }
  if (c == '\'') return string_literal(false);
  if (c == '"') {
    t.kind = sql_tok::quoted_ident;
    for (++i_; i_ < s_.size(); ++i_) {
      if (s_[i_] == '"') {
        if (i_ + 1 < s_.size() && s_[i_ + 1] == '"') {
          t.text.push_back('"');
          ++i_;
          continue;
        }
        ++i_;
        break;
      }
      t.text.push_back(s_[i_]);
    }
    return t;
  }
  if (c == '$') return dollar();
  if (ascii_digit(c)) {
    t.kind = sql_tok::number;
    while (i_ < s_.size() && (ascii_alpha(s_[i_]) || ascii_digit(s_[i_]) || s_[i_] == '.'))
      t.text.push_back(s_[i_++]);
    return t;
  }
  t.kind = sql_tok::punct;
  t.text.push_back(c);
  ++i_;
  return t;
}

void sql_lexer::skip_blanks_and_comments() {
  while (i_ < s_.size()) {
    if (is_space(s_[i_])) {
      ++i_;
    } else if (s_.compare(i_, 2, "--") == 0) {
      while (i_ < s_.size() && s_[i_] != '\n') ++i_;
    } else if (s_.compare(i_, 2, "/*") == 0) {
      // PostgreSQL block comments nest.
      int depth = 0;
      while (i_ < s_.size()) {
        if (s_.compare(i_, 2, "/*") == 0) {
          ++depth;
          i_ += 2;
        } else if (s_.compare(i_, 2, "*/") == 0) {
          i_ += 2;
          if (--depth == 0) break;
        } else {
          ++i_;
        }
      }
    } else {
      return;
    }
  }
}

// At the opening quote. '' is a quote in any string; \' also in E'...'.
sql_token sql_lexer::string_literal(bool escapes) {
  sql_token t;
  t.kind = sql_tok::string;
  for (++i_; i_ < s_.size(); ++i_) {
    const char c = s_[i_];
    if (escapes && c == '\\' && i_ + 1 < s_.size()) {
      t.text.push_back(s_[++i_]);
      continue;
    }
    if (c == '\'') {
      if (i_ + 1 < s_.size() && s_[i_ + 1] == '\'') {
        t.text.push_back('\'');
        ++i_;
        continue;
      }
      ++i_;
      break;
    }
    t.text.push_back(c);
  }
  return t;
}

// $1 (a parameter) or $tag$ ... $tag$ (a dollar-quoted string).
sql_token sql_lexer::dollar() {
  sql_token t;
  std::size_t j = i_ + 1;
  if (j < s_.size() && ascii_digit(s_[j])) {
    t.kind = sql_tok::param;
    while (j < s_.size() && ascii_digit(s_[j])) ++j;
    t.text = std::string(s_.substr(i_, j - i_));
    i_ = j;
    return t;
  }
  while (j < s_.size() && s_[j] != '$' && ident_char(s_[j])) ++j;
  if (j >= s_.size() || s_[j] != '$') {
    t.kind = sql_tok::punct;
    t.text = "$";
    ++i_;
    return t;
  }
  const std::string_view tag = s_.substr(i_, j - i_ + 1);
  const std::size_t body = j + 1;
  const std::size_t close = s_.find(tag, body);
  t.kind = sql_tok::string;
  t.text = std::string(s_.substr(body, (close == std::string_view::npos ? s_.size() : close) - body));
  i_ = close == std::string_view::npos ? s_.size() : close + tag.size();
  return t;
}

}  // namespace pgpipe::detail
