// Range and multirange codecs: a value is split into its bounds (or ranges)
// here, once, so that the bounds decode with the same per-type decoders as
// plain fields. The text grammar is range_in's (rangetypes.c), the binary
// layout range_send's; see include/pgpipe/detail/codec.hpp for the contracts.
#include <pgpipe/detail/codec.hpp>
#include "core/codec/codec_errors.hpp"
#include "core/codec/quoted_text.hpp"
#include <pgpipe/error.hpp>

#include <cstdint>
#include <limits>
#include <span>

namespace pgpipe::detail::codec {
namespace {

// range_send's flag bits (rangetypes.h).
constexpr unsigned char flag_empty = 0x01;
constexpr unsigned char flag_lb_inc = 0x02;
constexpr unsigned char flag_ub_inc = 0x04;
constexpr unsigned char flag_lb_inf = 0x08;
constexpr unsigned char flag_ub_inf = 0x10;

bool ends_bound(char c) { return c == ',' || c == ')' || c == ']'; }

// One bound from `i`, as range_parse_bound: nothing before a delimiter is
// unbounded; quotes group (a doubled quote inside is one quote), a backslash
// takes the next character as is. Whitespace is kept: the server's output
// never has any outside quotes, and the element decoder judges it.
std::error_code parse_bound(std::string_view in, std::size_t& i, std::optional<std::string_view>& bound,
                            std::deque<std::string>& owned) {
  const std::size_t n = in.size();
  if (i < n && ends_bound(in[i])) {
    bound.reset();
    return {};
  }
  const std::size_t start = i;
  bool rewritten = false;
  std::string v;
  if (!scan_quoted(in, i, ends_bound, v, rewritten)) return bad();
  if (i >= n) return bad();  // no closing delimiter
  if (!rewritten) {
    bound = in.substr(start, i - start);
  } else {
    owned.push_back(std::move(v));
    bound = std::string_view(owned.back());
  }
  return {};
}

void append_quoted(std::string& out, std::string_view v) {
  out.push_back('"');
  for (char c : v) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
}

std::int32_t load_i32(const char* p) { return static_cast<std::int32_t>(static_cast<std::uint32_t>(load_be(p, 4))); }

// A 4-byte length and that many bytes from `pos`.
std::error_code take_sized(std::string_view in, std::size_t& pos, std::string_view& out) {
  if (in.size() - pos < 4) return bad();
  const std::int32_t len = load_i32(in.data() + pos);
  pos += 4;
  if (len < 0 || static_cast<std::size_t>(len) > in.size() - pos) return bad();
  out = in.substr(pos, static_cast<std::size_t>(len));
  pos += static_cast<std::size_t>(len);
  return {};
}

}  // namespace

std::error_code split_range_text(std::string_view in, range_parts& out) {
  out = range_parts{};
  std::size_t i = 0;
  const std::size_t n = in.size();
  while (i < n && is_space(in[i])) ++i;
  constexpr std::string_view empty_word = "empty";
  if (n - i >= empty_word.size()) {
    bool match = true;
    for (std::size_t k = 0; k < empty_word.size(); ++k) match = match && (in[i + k] | 0x20) == empty_word[k];
    if (match) {
      i += empty_word.size();
      while (i < n && is_space(in[i])) ++i;
      if (i != n) return bad();
      out.empty = true;
      return {};
    }
  }
  if (i >= n || (in[i] != '[' && in[i] != '(')) return bad();
  out.lower_inclusive = in[i++] == '[';
  if (auto ec = parse_bound(in, i, out.lower, out.owned)) return ec;
  if (in[i++] != ',') return bad();
  if (auto ec = parse_bound(in, i, out.upper, out.owned)) return ec;
  if (in[i] == ',') return bad();
  out.upper_inclusive = in[i++] == ']';
  while (i < n && is_space(in[i])) ++i;
  if (i != n) return bad();
  // The server never marks an unbounded side inclusive.
  if (!out.lower) out.lower_inclusive = false;
  if (!out.upper) out.upper_inclusive = false;
  return {};
}

std::error_code split_range_binary(std::string_view in, range_parts& out) {
  out = range_parts{};
  if (in.empty()) return bad();
  const auto flags = static_cast<unsigned char>(in[0]);
  if (flags & flag_empty) {
    if (in.size() != 1) return bad();
    out.empty = true;
    return {};
  }
  std::size_t pos = 1;
  std::string_view b;
  if (!(flags & flag_lb_inf)) {
    if (auto ec = take_sized(in, pos, b)) return ec;
    out.lower = b;
    out.lower_inclusive = (flags & flag_lb_inc) != 0;
  }
  if (!(flags & flag_ub_inf)) {
    if (auto ec = take_sized(in, pos, b)) return ec;
    out.upper = b;
    out.upper_inclusive = (flags & flag_ub_inc) != 0;
  }
  if (pos != in.size()) return bad();
  return {};
}

std::string encode_range_text(const range_parts& in) {
  if (in.empty) return "empty";
  std::string s(1, in.lower && in.lower_inclusive ? '[' : '(');
  if (in.lower) append_quoted(s, *in.lower);
  s.push_back(',');
  if (in.upper) append_quoted(s, *in.upper);
  s.push_back(in.upper && in.upper_inclusive ? ']' : ')');
  return s;
}

std::error_code encode_range_binary(const range_parts& in, std::string_view lower_binary,
                                    std::string_view upper_binary, std::string& out) {
  if (in.empty) {
    out.push_back(static_cast<char>(flag_empty));
    return {};
  }
  unsigned char flags = 0;
  if (!in.lower) flags |= flag_lb_inf;
  else if (in.lower_inclusive) flags |= flag_lb_inc;
  if (!in.upper) flags |= flag_ub_inf;
  else if (in.upper_inclusive) flags |= flag_ub_inc;
  out.push_back(static_cast<char>(flags));
  for (auto [present, bytes] : {std::pair{in.lower.has_value(), lower_binary}, std::pair{in.upper.has_value(), upper_binary}}) {
    if (!present) continue;
    if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
      return make_error_code(errc::invalid_argument);
    store_be(out, bytes.size(), 4);
    out.append(bytes);
  }
  return {};
}

std::error_code split_multirange_text(std::string_view in, type_oid range_type, array_items& out) {
  out = array_items{};
  out.element_type = range_type;
  std::size_t i = 0;
  const std::size_t n = in.size();
  auto skip_space = [&] {
    while (i < n && is_space(in[i])) ++i;
  };
  skip_space();
  if (i >= n || in[i++] != '{') return bad();
  skip_space();
  if (i < n && in[i] == '}') {
    ++i;
  } else {
    for (;;) {
      skip_space();
      // One range's extent: up to its closing bracket outside quotes (its
      // own text is checked by split_range_text when it is decoded).
      const std::size_t start = i;
      if (i >= n) return bad();
      if (in[i] == '[' || in[i] == '(') {
        bool in_quote = false;
        ++i;
        while (i < n && (in_quote || (in[i] != ']' && in[i] != ')'))) {
          if (in[i] == '\\') ++i;
          else if (in[i] == '"') in_quote = !in_quote;
          ++i;
        }
        if (i >= n) return bad();
        ++i;
      } else {
        while (i < n && !is_space(in[i]) && in[i] != ',' && in[i] != '}') ++i;  // "empty"
      }
      out.items.emplace_back(in.substr(start, i - start));
      skip_space();
      if (i >= n) return bad();
      if (in[i] == ',') {
        ++i;
        continue;
      }
      if (in[i++] == '}') break;
      return bad();
    }
  }
  skip_space();
  if (i != n) return bad();
  return {};
}

std::error_code split_multirange_binary(std::string_view in, type_oid range_type, array_items& out) {
  out = array_items{};
  out.element_type = range_type;
  if (in.size() < 4) return bad();
  const std::int32_t count = load_i32(in.data());
  std::size_t pos = 4;
  // Each range takes at least its 4-byte length: refuse a count that cannot
  // fit before allocating for it.
  if (count < 0 || static_cast<std::size_t>(count) > (in.size() - pos) / 4) return bad();
  out.items.reserve(static_cast<std::size_t>(count));
  for (std::int32_t k = 0; k < count; ++k) {
    std::string_view r;
    if (auto ec = take_sized(in, pos, r)) return ec;
    out.items.emplace_back(r);
  }
  if (pos != in.size()) return bad();
  return {};
}

std::string encode_multirange_text(std::span<const std::string> ranges) {
  std::string s(1, '{');
  for (std::size_t k = 0; k < ranges.size(); ++k) {
    if (k != 0) s.push_back(',');
    s.append(ranges[k]);
  }
  s.push_back('}');
  return s;
}

std::error_code encode_multirange_binary(std::span<const std::string> ranges, std::string& out) {
  constexpr auto most = static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max());
  if (ranges.size() > most) return make_error_code(errc::invalid_argument);
  store_be(out, ranges.size(), 4);
  for (const std::string& r : ranges) {
    if (r.size() > most) return make_error_code(errc::invalid_argument);
    store_be(out, r.size(), 4);
    out.append(r);
  }
  return {};
}

}  // namespace pgpipe::detail::codec
