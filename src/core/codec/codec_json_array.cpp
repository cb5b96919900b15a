// json/jsonb and array codecs (any dimension). Arrays are split into element
// views here, once, so that the per-type element decoders in
// pgpipe/type_traits.hpp are the same ones used for plain fields.
#include <pgpipe/detail/codec.hpp>
#include "core/codec/codec_errors.hpp"
#include <pgpipe/error.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <charconv>
#include <cstdint>
#include <limits>

namespace pgpipe::detail::codec {

std::error_code decode_json(std::string_view in, bool jsonb_binary, boost::json::value& out) {
  if (jsonb_binary) {
    // jsonb's binary send format: version 1, then the text.
    if (in.empty() || in[0] != 1) return bad();
    in.remove_prefix(1);
  }
  boost::system::error_code ec;
  out = boost::json::parse(in, ec);
  if (ec) {
    out = nullptr;
    return bad();
  }
  return {};
}

std::string encode_json_text(const boost::json::value& in) { return boost::json::serialize(in); }

namespace {

// One element at `i` (quoted or not); NULL (unquoted, any case) is NULL.
std::error_code parse_element(std::string_view in, std::size_t& i, array_items& out) {
  const std::size_t n = in.size();
  if (in[i] == '"') {
    ++i;
    std::string v;
    for (;;) {
      if (i >= n) return bad();
      char c = in[i++];
      if (c == '"') break;
      if (c == '\\') {
        if (i >= n) return bad();
        c = in[i++];
      }
      v.push_back(c);
    }
    out.owned.push_back(std::move(v));
    out.items.emplace_back(out.owned.back());
    return {};
  }
  // Unquoted: up to the next delimiter or '}', backslash escapes allowed,
  // surrounding whitespace dropped.
  const std::size_t start = i;
  bool escaped = false;
  std::string v;
  while (i < n && in[i] != ',' && in[i] != '}') {
    if (in[i] == '"' || in[i] == '{') return bad();
    if (in[i] == '\\') {
      if (i + 1 >= n) return bad();
      escaped = true;
      v.push_back(in[i + 1]);
      i += 2;
      continue;
    }
    v.push_back(in[i++]);
  }
  while (!v.empty() && is_space(v.back())) v.pop_back();
  if (v.empty()) return bad();
  if (!escaped && v.size() == 4 && (v[0] | 0x20) == 'n' && (v[1] | 0x20) == 'u' && (v[2] | 0x20) == 'l' &&
      (v[3] | 0x20) == 'l') {
    out.items.emplace_back(std::nullopt);
  } else if (!escaped && v.size() <= i - start) {
    out.items.emplace_back(in.substr(start, v.size()));
  } else {
    out.owned.push_back(std::move(v));
    out.items.emplace_back(out.owned.back());
  }
  return {};
}

// The braces of one sub-array at nesting `level` (in[i] == '{'). `dims`
// holds each level's length once a sub-array of that level closed (-1
// before); `ndim` the level of the elements once one was seen (0 before).
// Recursion is bounded by max_array_dims.
std::error_code parse_level(std::string_view in, std::size_t& i, std::size_t level, std::int64_t (&dims)[max_array_dims],
                            std::size_t& ndim, array_items& out) {
  const std::size_t n = in.size();
  ++i;  // '{'
  while (i < n && is_space(in[i])) ++i;
  if (i >= n) return bad();
  if (in[i] == '}') return bad();  // an empty sub-array: only "{}" as a whole is empty
  const bool nested = in[i] == '{';
  if (nested && level + 1 >= max_array_dims) return bad();
  if (!nested) {
    if (ndim == 0) ndim = level + 1;
    if (ndim != level + 1) return bad();  // elements where sub-arrays were
  } else if (ndim != 0 && level + 1 >= ndim) {
    return bad();  // sub-arrays where elements were
  }
  std::int64_t count = 0;
  for (;;) {
    while (i < n && is_space(in[i])) ++i;
    if (i >= n) return bad();
    if (nested) {
      if (in[i] != '{') return bad();
      if (auto ec = parse_level(in, i, level + 1, dims, ndim, out)) return ec;
    } else {
      if (in[i] == '{') return bad();
      if (auto ec = parse_element(in, i, out)) return ec;
    }
    ++count;
    while (i < n && is_space(in[i])) ++i;
    if (i >= n) return bad();
    if (in[i] == ',') {
      ++i;
      continue;
    }
    if (in[i] != '}') return bad();
    ++i;
    break;
  }
  if (count > std::numeric_limits<std::int32_t>::max()) return bad();
  if (dims[level] < 0) dims[level] = count;
  if (dims[level] != count) return bad();  // a ragged array
  return {};
}

// "[lb:ub]" or "[ub]" (lower bound 1), as array_in reads a decoration.
std::error_code parse_decoration(std::string_view in, std::size_t& i, std::int32_t& lb, std::int32_t& len) {
  const std::size_t n = in.size();
  auto number = [&](std::int64_t& v) {
    const char* b = in.data() + i;
    auto r = std::from_chars(b, in.data() + n, v);
    if (r.ec != std::errc{} || r.ptr == b) return false;
    i += static_cast<std::size_t>(r.ptr - b);
    return true;
  };
  ++i;  // '['
  std::int64_t a = 0, ub = 0, lo = 1;
  if (!number(a)) return bad();
  if (i < n && in[i] == ':') {
    ++i;
    lo = a;
    if (!number(ub)) return bad();
  } else {
    ub = a;
  }
  if (i >= n || in[i] != ']') return bad();
  ++i;
  if (lo < std::numeric_limits<std::int32_t>::min() || ub > std::numeric_limits<std::int32_t>::max() || ub < lo)
    return bad();
  lb = static_cast<std::int32_t>(lo);
  len = static_cast<std::int32_t>(ub - lo + 1);
  return {};
}

}  // namespace

std::error_code split_array_text(std::string_view in, type_oid element_type, array_items& out) {
  out = array_items{};
  out.element_type = element_type;
  std::size_t i = 0;
  const std::size_t n = in.size();
  std::vector<std::int32_t> deco_lb, deco_len;
  while (i < n && in[i] == '[') {
    if (deco_lb.size() == max_array_dims) return bad();
    std::int32_t lb = 0, len = 0;
    if (auto ec = parse_decoration(in, i, lb, len)) return ec;
    deco_lb.push_back(lb);
    deco_len.push_back(len);
  }
  if (!deco_lb.empty()) {
    if (i >= n || in[i] != '=') return bad();
    ++i;
  }
  while (i < n && is_space(in[i])) ++i;
  if (i >= n || in[i] != '{') return bad();
  std::size_t j = i + 1;
  while (j < n && is_space(in[j])) ++j;
  if (j < n && in[j] == '}') {
    if (!deco_lb.empty()) return bad();  // a decoration with no elements
    i = j + 1;
  } else {
    std::int64_t dims[max_array_dims];
    for (auto& d : dims) d = -1;
    std::size_t ndim = 0;
    if (auto ec = parse_level(in, i, 0, dims, ndim, out)) return ec;
    for (std::size_t d = 0; d < ndim; ++d) out.dims.push_back(static_cast<std::int32_t>(dims[d]));
    if (deco_lb.empty()) {
      out.lower_bounds.assign(ndim, 1);
    } else {
      if (deco_len != out.dims) return bad();  // the decoration disagrees with the braces
      out.lower_bounds = std::move(deco_lb);
    }
  }
  while (i < n && is_space(in[i])) ++i;
  if (i != n) return bad();
  return {};
}

std::error_code split_array_binary(std::string_view in, array_items& out) {
  out = array_items{};
  if (in.size() < 12) return bad();
  const auto ndim = static_cast<std::int32_t>(static_cast<std::uint32_t>(load_be(in.data(), 4)));
  const auto flags = static_cast<std::int32_t>(static_cast<std::uint32_t>(load_be(in.data() + 4, 4)));
  out.element_type = static_cast<type_oid>(load_be(in.data() + 8, 4));
  if (flags != 0 && flags != 1) return bad();
  if (ndim == 0) return in.size() == 12 ? std::error_code{} : bad();
  if (ndim < 0 || static_cast<std::size_t>(ndim) > max_array_dims) return bad();
  std::size_t pos = 12;
  if (in.size() - pos < 8 * static_cast<std::size_t>(ndim)) return bad();
  // Every element takes at least its 4-byte length: a product that cannot
  // fit in what is left is refused before any allocation (and so never
  // overflows).
  const std::size_t room = (in.size() - pos - 8 * static_cast<std::size_t>(ndim)) / 4;
  std::size_t total = 1;
  for (std::int32_t d = 0; d < ndim; ++d) {
    const auto len = static_cast<std::int32_t>(static_cast<std::uint32_t>(load_be(in.data() + pos, 4)));
    const auto lb = static_cast<std::int32_t>(static_cast<std::uint32_t>(load_be(in.data() + pos + 4, 4)));
    pos += 8;
    if (len < 0 || static_cast<std::int64_t>(lb) + len - 1 > std::numeric_limits<std::int32_t>::max()) return bad();
    out.dims.push_back(len);
    out.lower_bounds.push_back(lb);
    if (len == 0) {
      total = 0;
    } else if (total != 0) {
      if (static_cast<std::size_t>(len) > room / total) return bad();
      total *= static_cast<std::size_t>(len);
    }
  }
  if (total == 0) {  // a zero-length dimension: the server's empty array
    out.dims.clear();
    out.lower_bounds.clear();
  }
  out.items.reserve(total);
  for (std::size_t k = 0; k < total; ++k) {
    if (in.size() - pos < 4) return bad();
    const auto len = static_cast<std::int32_t>(static_cast<std::uint32_t>(load_be(in.data() + pos, 4)));
    pos += 4;
    if (len == -1) {
      if (flags == 0) return bad();  // a NULL the header said was not there
      out.items.emplace_back(std::nullopt);
      continue;
    }
    if (len < 0 || static_cast<std::size_t>(len) > in.size() - pos) return bad();
    out.items.emplace_back(in.substr(pos, static_cast<std::size_t>(len)));
    pos += static_cast<std::size_t>(len);
  }
  if (pos != in.size()) return bad();
  return {};
}

void append_array_text_element(std::string& out, const std::optional<std::string>& element) {
  if (!element) {
    out += "NULL";
    return;
  }
  out.push_back('"');
  for (char c : *element) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
}

}  // namespace pgpipe::detail::codec
