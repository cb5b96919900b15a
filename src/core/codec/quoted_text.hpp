// The quoting shared by the server's record and range text forms (record_in
// in rowtypes.c, range_parse_bound in rangetypes.c): quotes group, a doubled
// quote inside quotes is one quote, a backslash takes the next byte as it is.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace pgpipe::detail::codec {

// Scans one field from `i` up to the first byte outside quotes that `ends`
// accepts (left at `i`), or to the end of `in`: the caller decides whether
// that end is an error. The unquoted text goes to `v`; `rewritten` is set
// when it differs from in[start, i), so a plain field can stay a view.
// False when a backslash is the last byte.
template <class Ends>
bool scan_quoted(std::string_view in, std::size_t& i, Ends ends, std::string& v, bool& rewritten) {
  const std::size_t n = in.size();
  bool in_quote = false;
  while (i < n && (in_quote || !ends(in[i]))) {
    const char c = in[i++];
    if (c == '\\') {
      if (i >= n) return false;
      v.push_back(in[i++]);
      rewritten = true;
    } else if (c == '"') {
      rewritten = true;
      if (!in_quote) {
        in_quote = true;
      } else if (i < n && in[i] == '"') {
        v.push_back(in[i++]);
      } else {
        in_quote = false;
      }
    } else {
      v.push_back(c);
    }
  }
  return true;
}

}  // namespace pgpipe::detail::codec
