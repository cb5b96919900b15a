// Composite (row type) codec: see include/pgpipe/detail/codec_composite.hpp
// for the contracts. The text parser follows record_in (rowtypes.c) step by
// step, so that what the server prints and what a user may type read the
// same; the binary one checks every length before it is used because the
// bytes come from the network.
#include <pgpipe/detail/codec.hpp>
#include <pgpipe/detail/codec_composite.hpp>
#include "core/codec/codec_errors.hpp"
#include "core/codec/quoted_text.hpp"

#include <cstdint>

namespace pgpipe::detail::codec {
namespace {

std::int32_t load_i32_at(std::string_view in, std::size_t pos) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(load_be(in.data() + pos, 4)));
}

// One field from `i` (just after '(' or ','), up to its ',' or ')' outside
// quotes, which is left at `i`. Views the input when no character needed
// rewriting, so the common unquoted field costs no allocation.
std::error_code parse_field(std::string_view in, std::size_t& i, record_fields& out) {
  const std::size_t n = in.size();
  if (i < n && (in[i] == ',' || in[i] == ')')) {
    out.fields.push_back({std::nullopt, 0});
    return {};
  }
  const std::size_t start = i;
  bool rewritten = false;
  std::string v;
  if (!scan_quoted(in, i, [](char c) { return c == ',' || c == ')'; }, v, rewritten)) return bad();
  if (i >= n) return bad();  // no closing ')'
  if (!rewritten) {
    out.fields.push_back({in.substr(start, i - start), 0});
  } else {
    out.owned.push_back(std::move(v));
    out.fields.push_back({std::string_view(out.owned.back()), 0});
  }
  return {};
}

}  // namespace

std::error_code split_record_text(std::string_view in, record_fields& out) {
  out.fields.clear();
  out.owned.clear();
  std::size_t i = 0;
  const std::size_t n = in.size();
  while (i < n && is_space(in[i])) ++i;
  if (i >= n || in[i++] != '(') return bad();
  for (;;) {
    if (auto ec = parse_field(in, i, out)) return ec;
    if (in[i++] == ')') break;  // parse_field stops only at ',' or ')'
  }
  while (i < n && is_space(in[i])) ++i;
  if (i != n) return bad();
  return {};
}

std::error_code split_record_binary(std::string_view in, record_fields& out) {
  out.fields.clear();
  out.owned.clear();
  if (in.size() < 4) return bad();
  const std::int32_t count = load_i32_at(in, 0);
  std::size_t pos = 4;
  // Each field takes at least its OID and length (8 bytes): refuse a count
  // that cannot fit before allocating for it.
  if (count < 0 || static_cast<std::size_t>(count) > (in.size() - pos) / 8) return bad();
  out.fields.reserve(static_cast<std::size_t>(count));
  for (std::int32_t k = 0; k < count; ++k) {
    if (in.size() - pos < 8) return bad();
    const auto type = static_cast<type_oid>(load_be(in.data() + pos, 4));
    const std::int32_t len = load_i32_at(in, pos + 4);
    pos += 8;
    if (len == -1) {
      out.fields.push_back({std::nullopt, type});
      continue;
    }
    if (len < 0 || static_cast<std::size_t>(len) > in.size() - pos) return bad();
    out.fields.push_back({in.substr(pos, static_cast<std::size_t>(len)), type});
    pos += static_cast<std::size_t>(len);
  }
  if (pos != in.size()) return bad();
  return {};
}

void append_record_text_field(std::string& out, const std::optional<std::string>& field) {
  if (!field) return;
  out.push_back('"');
  for (char c : *field) {
    if (c == '"' || c == '\\') out.push_back(c);
    out.push_back(c);
  }
  out.push_back('"');
}

}  // namespace pgpipe::detail::codec
