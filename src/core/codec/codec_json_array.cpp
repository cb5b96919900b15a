// json/jsonb and one-dimensional array codecs. Arrays are split into element
// views here, once, so that the per-type element decoders in
// pgpipe/type_traits.hpp are the same ones used for plain fields.
#include <pgpipe/detail/codec.hpp>
#include "core/codec/codec_errors.hpp"
#include <pgpipe/error.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace pgpipe::detail::codec {
namespace {


bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

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

std::error_code split_array_text(std::string_view in, type_oid element_type, array_items& out) {
  out.element_type = element_type;
  out.items.clear();
  out.owned.clear();
  std::size_t i = 0;
  const std::size_t n = in.size();
  // Optional dimension decoration: "[1:3]={...}". More than one bracket
  // pair is a multi-dimensional array.
  if (i < n && in[i] == '[') {
    auto close = in.find(']', i);
    if (close == std::string_view::npos) return bad();
    i = close + 1;
    if (i < n && in[i] == '[') return bad();  // multi-dimensional
    if (i >= n || in[i] != '=') return bad();
    ++i;
  }
  if (i >= n || in[i] != '{') return bad();
  ++i;
  while (i < n && is_space(in[i])) ++i;
  if (i < n && in[i] == '}') {
    ++i;
  } else {
    for (;;) {
      while (i < n && is_space(in[i])) ++i;
      if (i >= n) return bad();
      if (in[i] == '{') return bad();  // multi-dimensional arrays are not supported
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
      } else {
        // Unquoted: up to the next delimiter or '}', backslash escapes
        // allowed, surrounding whitespace dropped; NULL (any case) is NULL.
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
      }
      while (i < n && is_space(in[i])) ++i;
      if (i >= n) return bad();
      if (in[i] == ',') {
        ++i;
        continue;
      }
      if (in[i] == '}') {
        ++i;
        break;
      }
      return bad();
    }
  }
  while (i < n && is_space(in[i])) ++i;
  if (i != n) return bad();
  return {};
}

std::error_code split_array_binary(std::string_view in, array_items& out) {
  out.items.clear();
  out.owned.clear();
  out.element_type = 0;
  if (in.size() < 12) return bad();
  const auto ndim = static_cast<std::int32_t>(static_cast<std::uint32_t>(load_be(in.data(), 4)));
  const auto flags = static_cast<std::int32_t>(static_cast<std::uint32_t>(load_be(in.data() + 4, 4)));
  out.element_type = static_cast<type_oid>(load_be(in.data() + 8, 4));
  if (flags != 0 && flags != 1) return bad();
  if (ndim == 0) return in.size() == 12 ? std::error_code{} : bad();
  if (ndim != 1) return bad();  // negative, or multi-dimensional (not supported)
  if (in.size() < 20) return bad();
  const auto count = static_cast<std::int32_t>(static_cast<std::uint32_t>(load_be(in.data() + 12, 4)));
  if (count < 0) return bad();
  std::size_t pos = 20;  // past the lower bound, which does not matter to a vector
  // Every element takes at least its 4-byte length: a count that cannot fit
  // in what is left is rejected before any allocation.
  if (static_cast<std::size_t>(count) > (in.size() - pos) / 4) return bad();
  out.items.reserve(static_cast<std::size_t>(count));
  for (std::int32_t k = 0; k < count; ++k) {
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
