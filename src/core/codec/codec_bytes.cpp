// bytea and uuid codecs, and the table of built-in type names and array
// types. See include/pgpipe/detail/codec.hpp for the contracts.
#include <pgpipe/detail/codec.hpp>
#include "core/codec/codec_errors.hpp"
#include <pgpipe/error.hpp>

#include <algorithm>
#include <array>
#include <iterator>

namespace pgpipe {
namespace {

struct type_row {
  type_oid oid;
  type_oid array;
  const char* name;
};
// Built-in types pgpipe maps, with their array types (pg_type.dat).
constexpr type_row type_table[] = {
    {oids::bool_, oids::bool_array, "bool"},          {oids::bytea, oids::bytea_array, "bytea"},
    {oids::char_, oids::char_array, "char"},          {oids::name, oids::name_array, "name"},
    {oids::int8, oids::int8_array, "int8"},           {oids::int2, oids::int2_array, "int2"},
    {oids::int4, oids::int4_array, "int4"},           {oids::text, oids::text_array, "text"},
    {oids::oid, oids::oid_array, "oid"},              {oids::json, oids::json_array, "json"},
    {oids::float4, oids::float4_array, "float4"},     {oids::float8, oids::float8_array, "float8"},
    {oids::unknown, 0, "unknown"},                    {oids::bpchar, oids::bpchar_array, "bpchar"},
    {oids::varchar, oids::varchar_array, "varchar"},  {oids::date, oids::date_array, "date"},
    {oids::time, oids::time_array, "time"},           {oids::timestamp, oids::timestamp_array, "timestamp"},
    {oids::timestamptz, oids::timestamptz_array, "timestamptz"},
    {oids::interval, oids::interval_array, "interval"},
    {oids::numeric, oids::numeric_array, "numeric"},  {oids::uuid, oids::uuid_array, "uuid"},
    {oids::jsonb, oids::jsonb_array, "jsonb"},        {oids::record, oids::record_array, "record"},
    {oids::int4range, oids::int4range_array, "int4range"},  {oids::int8range, oids::int8range_array, "int8range"},
    {oids::numrange, oids::numrange_array, "numrange"},     {oids::tsrange, oids::tsrange_array, "tsrange"},
    {oids::tstzrange, oids::tstzrange_array, "tstzrange"},  {oids::daterange, oids::daterange_array, "daterange"},
    // Multiranges' arrays are left out: pgpipe reads none of them.
    {oids::int4multirange, 0, "int4multirange"},            {oids::int8multirange, 0, "int8multirange"},
    {oids::nummultirange, 0, "nummultirange"},              {oids::tsmultirange, 0, "tsmultirange"},
    {oids::tstzmultirange, 0, "tstzmultirange"},            {oids::datemultirange, 0, "datemultirange"},
};

}  // namespace

type_oid array_element_oid(type_oid array) noexcept {
  for (const auto& r : type_table)
    if (r.array == array && array != 0) return r.oid;
  return 0;
}

type_oid array_oid_of(type_oid element) noexcept {
  for (const auto& r : type_table)
    if (r.oid == element) return r.array;
  return 0;
}

std::string type_name_of(type_oid t) {
  for (const auto& r : type_table) {
    if (r.oid == t) return r.name;
    if (r.array == t && t != 0) return std::string(r.name) + "[]";
  }
  return "oid " + std::to_string(t);
}

namespace detail::codec {
namespace {

// A table, not comparisons: random hex digits (uuids, bytea) make the
// digit-or-letter branch mispredict about every other character, which cost
// ~5x in bench/micro_type_decoders.cpp.
constexpr std::array<signed char, 256> hex_table = [] {
  std::array<signed char, 256> t{};
  for (auto& x : t) x = -1;
  for (int i = 0; i < 10; ++i) t['0' + i] = static_cast<signed char>(i);
  for (int i = 0; i < 6; ++i) {
    t['a' + i] = static_cast<signed char>(10 + i);
    t['A' + i] = static_cast<signed char>(10 + i);
  }
  return t;
}();

int hex_value(char c) noexcept { return hex_table[static_cast<unsigned char>(c)]; }


}  // namespace

std::error_code decode_bytea_text(std::string_view in, std::vector<std::byte>& out) {
  out.clear();
  if (in.size() >= 2 && in[0] == '\\' && in[1] == 'x') {
    // Hex format. The server never puts whitespace in it; byteain accepts
    // some between pairs, and so do we.
    out.reserve((in.size() - 2) / 2);
    std::size_t i = 2;
    while (i < in.size()) {
      char c = in[i];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++i;
        continue;
      }
      if (i + 1 >= in.size()) return bad();
      int hi = hex_value(c), lo = hex_value(in[i + 1]);
      if (hi < 0 || lo < 0) return bad();
      out.push_back(static_cast<std::byte>(hi * 16 + lo));
      i += 2;
    }
    return {};
  }
  // Escape format: "\\" is a backslash, "\ooo" an octal byte, anything else itself.
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size();) {
    if (in[i] != '\\') {
      out.push_back(static_cast<std::byte>(in[i]));
      ++i;
      continue;
    }
    if (i + 1 < in.size() && in[i + 1] == '\\') {
      out.push_back(std::byte{'\\'});
      i += 2;
      continue;
    }
    if (i + 3 < in.size() && in[i + 1] >= '0' && in[i + 1] <= '3' && in[i + 2] >= '0' && in[i + 2] <= '7' &&
        in[i + 3] >= '0' && in[i + 3] <= '7') {
      out.push_back(static_cast<std::byte>((in[i + 1] - '0') * 64 + (in[i + 2] - '0') * 8 + (in[i + 3] - '0')));
      i += 4;
      continue;
    }
    return bad();
  }
  return {};
}

std::string encode_bytea_text(std::span<const std::byte> in) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 + in.size() * 2);
  s += "\\x";
  for (std::byte b : in) {
    auto v = std::to_integer<unsigned>(b);
    s.push_back(digits[v >> 4]);
    s.push_back(digits[v & 15]);
  }
  return s;
}

std::error_code decode_uuid_text(std::string_view in, std::array<std::uint8_t, 16>& out) {
  // uuid_in: optional braces around the whole, a hyphen allowed after any
  // group of four hex digits.
  if (!in.empty() && in.front() == '{') {
    if (in.size() < 2 || in.back() != '}') return bad();
    in = in.substr(1, in.size() - 2);
  }
  std::size_t i = 0;
  for (std::size_t b = 0; b < 16; ++b) {
    if (b > 0 && b % 2 == 0 && i < in.size() && in[i] == '-') ++i;
    if (i + 1 >= in.size()) return bad();
    int hi = hex_value(in[i]), lo = hex_value(in[i + 1]);
    if (hi < 0 || lo < 0) return bad();
    out[b] = static_cast<std::uint8_t>(hi * 16 + lo);
    i += 2;
  }
  if (i != in.size()) return bad();
  return {};
}

std::error_code decode_uuid_binary(std::string_view in, std::array<std::uint8_t, 16>& out) {
  if (in.size() != 16) return bad();
  std::copy(in.begin(), in.end(), out.begin());
  return {};
}

std::string encode_uuid_text(const std::array<std::uint8_t, 16>& in) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s;
  s.reserve(36);
  for (std::size_t b = 0; b < 16; ++b) {
    if (b == 4 || b == 6 || b == 8 || b == 10) s.push_back('-');
    s.push_back(digits[in[b] >> 4]);
    s.push_back(digits[in[b] & 15]);
  }
  return s;
}

}  // namespace detail::codec
}  // namespace pgpipe
