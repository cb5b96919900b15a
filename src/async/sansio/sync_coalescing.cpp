// The statement rule of Sync coalescing: see sync_coalescing.hpp.
#include "async/sansio/sync_coalescing.hpp"

#include <array>
#include <cstddef>

namespace pgpipe::detail {

namespace {

char lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool is_word_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}

// `word` is lower case.
bool starts_with_word(std::string_view s, std::string_view word) noexcept {
  if (s.size() < word.size()) return false;
  for (std::size_t i = 0; i < word.size(); ++i)
    if (lower(s[i]) != word[i]) return false;
  return s.size() == word.size() || !is_word_char(s[word.size()]);
}

// `needle` is lower case.
bool contains_nocase(std::string_view s, std::string_view needle) noexcept {
  if (s.size() < needle.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= s.size(); ++i) {
    if (lower(s[i]) != needle[0]) continue;
    std::size_t k = 1;
    while (k < needle.size() && lower(s[i + k]) == needle[k]) ++k;
    if (k == needle.size()) return true;
  }
  return false;
}

}  // namespace

bool may_share_sync(std::string_view sql) noexcept {
  std::size_t i = 0;
  while (i < sql.size() && (sql[i] == ' ' || sql[i] == '\t' || sql[i] == '\r' || sql[i] == '\n' || sql[i] == '('))
    ++i;
  const std::string_view rest = sql.substr(i);
  constexpr std::array<std::string_view, 4> reads{"select", "with", "values", "table"};
  bool read = false;
  for (auto w : reads) read = read || starts_with_word(rest, w);
  if (!read) return false;
  // Names are checked in the text, not in tokens: a string or a comment that
  // mentions one costs a false alarm only. What the text cannot show is
  // refused whole: a Unicode-escaped identifier (U&"\0073et_config", any
  // UESCAPE character) may spell any name, and SQL run from a string
  // (query_to_xml) or on another connection (dblink) may do anything.
  constexpr std::array<std::string_view, 5> refused{"set_config", "pg_notify", "u&\"", "query_to_xml", "dblink"};
  for (auto w : refused)
    if (contains_nocase(sql, w)) return false;
  return true;
}

}  // namespace pgpipe::detail
