// Strings are escaped by Boost.JSON's own serializer after the UTF-8 check;
// the walk over containers is ours only for the layout (Boost 1.81 has no
// pretty printer) and for the number format (Boost.JSON writes 1.0 as 1E0).
#include "json_output/json_output.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>

namespace pgpipe::json_output {
namespace {

// Length of the well-formed UTF-8 sequence at the start of `s`, or 0 and in
// `bad` the length of its maximal ill-formed subpart (at least 1).
// Ranges from Unicode's table 3-7 (no surrogates, no overlongs, <= U+10FFFF).
std::size_t well_formed_prefix(std::string_view s, std::size_t& bad) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = b(0);
  if (lead < 0x80) return 1;
  std::size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    need = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    need = 3;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    need = 4;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    bad = 1;
    return 0;
  }
  std::size_t i = 1;
  for (; i < need && i < s.size(); ++i) {
    const unsigned char c = b(i);
    const bool ok = i == 1 ? (c >= lo && c <= hi) : (c >= 0x80 && c <= 0xBF);
    if (!ok) break;
  }
  if (i == need) return need;
  bad = i;  // the lead byte and the continuation bytes that were still valid
  return 0;
}

void put_string(std::string& out, std::string_view s) {
  out += boost::json::serialize(boost::json::string(valid_utf8(s)));
}

void put_double(std::string& out, double d) {
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, d);
  out.append(buf, r.ptr);
}

void newline(std::string& out, int depth) {
  out += '\n';
  out.append(static_cast<std::size_t>(depth) * 2, ' ');
}

void put(std::string& out, const boost::json::value& v, int depth, const layout& how) {
  const bool expand = depth < how.expand_depth;
  const bool spaced = how.expand_depth > 0;  // ", " and ": " outside the compact form
  switch (v.kind()) {
    case boost::json::kind::null: out += "null"; return;
    case boost::json::kind::bool_: out += v.get_bool() ? "true" : "false"; return;
    case boost::json::kind::int64: out += std::to_string(v.get_int64()); return;
    case boost::json::kind::uint64: out += std::to_string(v.get_uint64()); return;
    case boost::json::kind::double_: put_double(out, v.get_double()); return;
    case boost::json::kind::string: put_string(out, v.get_string()); return;
    case boost::json::kind::array: {
      const auto& a = v.get_array();
      out += '[';
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (i != 0) out += spaced && !expand ? ", " : ",";
        if (expand) newline(out, depth + 1);
        put(out, a[i], depth + 1, how);
      }
      if (expand && !a.empty()) newline(out, depth);
      out += ']';
      return;
    }
    case boost::json::kind::object: {
      const auto& o = v.get_object();
      out += '{';
      bool first = true;
      for (const auto& kv : o) {
        if (!first) out += spaced && !expand ? ", " : ",";
        first = false;
        if (expand) newline(out, depth + 1);
        put_string(out, kv.key());
        out += spaced ? ": " : ":";
        put(out, kv.value(), depth + 1, how);
      }
      if (expand && !o.empty()) newline(out, depth);
      out += '}';
      return;
    }
  }
}

}  // namespace

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t bad = 0;
    const std::size_t n = well_formed_prefix(text.substr(i), bad);
    if (n != 0) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += bad;
    }
  }
  return out;
}

std::string write(const boost::json::value& doc, layout how) {
  std::string out;
  put(out, doc, 0, how);
  out += '\n';
  return out;
}

}  // namespace pgpipe::json_output
