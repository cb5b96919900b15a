// Built-in param_traits/field_traits: bool, integers, floating point,
// strings, bytea, uuid, numeric and json. Included by pgpipe/type_traits.hpp
// (read the contract there); not meant to be included directly.
#pragma once

#include <pgpipe/detail/codec.hpp>
#include <pgpipe/detail/from_chars_float.hpp>
#include <pgpipe/error.hpp>
#include <pgpipe/types.hpp>

#include <boost/json/value.hpp>
#include <boost/uuid/uuid.hpp>

#include <bit>
#include <charconv>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace pgpipe {

namespace detail::text_conv {
// A nested namespace: other headers of pgpipe::detail have helpers of the
// same common names.
template <class T>
inline constexpr bool is_char_type_v =
    std::is_same_v<T, char> || std::is_same_v<T, signed char> || std::is_same_v<T, unsigned char> ||
    std::is_same_v<T, wchar_t> || std::is_same_v<T, char8_t> || std::is_same_v<T, char16_t> ||
    std::is_same_v<T, char32_t>;

// Integers other than bool and the character types: those would be ambiguous
// (is a char a number or a letter?), so they are rejected at compile time.
template <class T>
concept sql_integer = std::integral<T> && !std::is_same_v<T, bool> && !is_char_type_v<T>;

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
inline constexpr bool is_optional_v = is_optional<T>::value;

inline std::error_code conversion_error() { return make_error_code(errc::conversion_error); }

// Text types a std::string may read in binary format (their binary form is the text).
inline bool is_text_type(type_oid t) {
  return t == oids::text || t == oids::varchar || t == oids::bpchar || t == oids::name || t == oids::unknown ||
         t == oids::json;
}
}  // namespace detail::text_conv

// ---- integers --------------------------------------------------------------

template <detail::text_conv::sql_integer T>
struct param_traits<T> {
  // The smallest server type that holds every T: int2/int4/int8, binary.
  // An unsigned 64-bit value has none and goes as text for the server to infer.
  static constexpr bool fits_int8 = sizeof(T) < 8 || std::is_signed_v<T>;
  static constexpr type_oid oid = !fits_int8                                                     ? 0
                                  : sizeof(T) < 2 || (sizeof(T) == 2 && std::is_signed_v<T>)     ? oids::int2
                                  : sizeof(T) < 4 || (sizeof(T) == 4 && std::is_signed_v<T>)     ? oids::int4
                                                                                                 : oids::int8;
  static std::optional<std::string> encode(T v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
  }
  static std::error_code encode_binary(T v, std::string& out)
    requires fits_int8
  {
    constexpr std::size_t n = oid == oids::int2 ? 2 : oid == oids::int4 ? 4 : 8;
    detail::codec::store_be(out, static_cast<std::uint64_t>(static_cast<std::int64_t>(v)), n);
    return {};
  }
};

template <detail::text_conv::sql_integer T>
struct field_traits<T> {
  static constexpr bool binary_results = true;  // decode reads the binary form of every type accepts() admits
  static bool accepts(type_oid t) { return t == oids::int2 || t == oids::int4 || t == oids::int8 || t == oids::oid; }
  static std::string cpp_name() {
    return std::string(std::is_signed_v<T> ? "int" : "uint") + std::to_string(8 * sizeof(T)) + "_t";
  }
  // The whole value must be a number that fits T: "12x" and 300 into int8_t
  // both fail instead of silently truncating.
  static std::error_code decode(const field_value& v, T& out) {
    if (v.format == wire_format::text) {
      const char* b = v.data.data();
      const char* e = b + v.data.size();
      auto r = std::from_chars(b, e, out);
      if (r.ec != std::errc{} || r.ptr != e || v.data.empty()) return detail::text_conv::conversion_error();
      return {};
    }
    const std::size_t n = v.data.size();
    if (n != 2 && n != 4 && n != 8) return detail::text_conv::conversion_error();
    const std::uint64_t raw = detail::codec::load_be(v.data.data(), n);
    if (v.type == oids::oid) {  // unsigned 32-bit
      if (n != 4 || !std::in_range<T>(raw)) return detail::text_conv::conversion_error();
      out = static_cast<T>(raw);
      return {};
    }
    // Sign-extend from n bytes.
    const unsigned shift = static_cast<unsigned>(64 - 8 * n);
    const auto x = static_cast<std::int64_t>(raw << shift) >> shift;
    if (!std::in_range<T>(x)) return detail::text_conv::conversion_error();
    out = static_cast<T>(x);
    return {};
  }
};

// ---- floating point ----------------------------------------------------------

template <std::floating_point T>
struct param_traits<T> {
  static constexpr type_oid oid = sizeof(T) == 4 ? oids::float4 : oids::float8;
  // Shortest text that reads back to the same value (std::to_chars without a
  // precision), so a double survives the round trip through the server.
  static std::optional<std::string> encode(T v) {
    if (std::isnan(v)) return std::string("NaN");
    if (std::isinf(v)) return std::string(v < 0 ? "-Infinity" : "Infinity");
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
  }
  static std::error_code encode_binary(T v, std::string& out)
    requires(sizeof(T) == 4 || sizeof(T) == 8)
  {
    if constexpr (sizeof(T) == 4) {
      detail::codec::store_be(out, std::bit_cast<std::uint32_t>(v), 4);
    } else {
      detail::codec::store_be(out, std::bit_cast<std::uint64_t>(v), 8);
    }
    return {};
  }
};

template <std::floating_point T>
struct field_traits<T> {
  static constexpr bool binary_results = true;  // decode reads the binary form of every type accepts() admits
  // A float reads only float4: a float8 would lose digits without a word.
  static bool accepts(type_oid t) { return t == oids::float4 || (sizeof(T) > 4 && t == oids::float8); }
  static std::string cpp_name() { return sizeof(T) == 4 ? "float" : "double"; }
  static std::error_code decode(const field_value& v, T& out) {
    if (v.format == wire_format::text) {
      // PostgreSQL spells the specials NaN / Infinity / -Infinity; from_chars
      // accepts those (case-insensitively) too.
      const char* b = v.data.data();
      const char* e = b + v.data.size();
      auto r = detail::from_chars_float(b, e, out);
      if (r.ec != std::errc{} || r.ptr != e || v.data.empty()) return detail::text_conv::conversion_error();
      return {};
    }
    if (v.data.size() == 4) {
      out = static_cast<T>(std::bit_cast<float>(static_cast<std::uint32_t>(detail::codec::load_be(v.data.data(), 4))));
      return {};
    }
    if (v.data.size() == 8 && sizeof(T) > 4) {
      out = static_cast<T>(std::bit_cast<double>(detail::codec::load_be(v.data.data(), 8)));
      return {};
    }
    return detail::text_conv::conversion_error();
  }
};

// ---- bool ------------------------------------------------------------------------

template <>
struct param_traits<bool> {
  static constexpr type_oid oid = oids::bool_;
  static std::optional<std::string> encode(bool v) { return std::string(v ? "t" : "f"); }
  static std::error_code encode_binary(bool v, std::string& out) {
    out.push_back(v ? '\1' : '\0');
    return {};
  }
};

template <>
struct field_traits<bool> {
  static constexpr bool binary_results = true;  // decode reads the binary form of every type accepts() admits
  static bool accepts(type_oid t) { return t == oids::bool_; }
  static std::string cpp_name() { return "bool"; }
  static std::error_code decode(const field_value& v, bool& out) {
    if (v.format == wire_format::binary) {
      if (v.data.size() != 1 || static_cast<unsigned char>(v.data[0]) > 1) return detail::text_conv::conversion_error();
      out = v.data[0] == 1;
      return {};
    }
    if (v.data == "t" || v.data == "true") {
      out = true;
      return {};
    }
    if (v.data == "f" || v.data == "false") {
      out = false;
      return {};
    }
    return detail::text_conv::conversion_error();
  }
};

// ---- strings -------------------------------------------------------------------------
// Sent as text with no type: the server infers text, varchar, an enum, a
// domain, json... from the statement, as it always did.

template <>
struct param_traits<std::string> {
  static std::optional<std::string> encode(const std::string& v) { return v; }
};
template <>
struct param_traits<std::string_view> {
  static std::optional<std::string> encode(std::string_view v) { return std::string(v); }
};
template <>
struct param_traits<const char*> {
  // A null pointer is SQL NULL rather than undefined behaviour.
  static std::optional<std::string> encode(const char* v) {
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  }
};
template <>
struct param_traits<char*> : param_traits<const char*> {};
template <std::size_t N>
struct param_traits<char[N]> {
  // String literals: stop at the terminator, not at N.
  static std::optional<std::string> encode(const char (&v)[N]) {
    return std::string(v, std::char_traits<char>::length(v));
  }
};

template <class S>
  requires std::is_same_v<S, std::string> || std::is_same_v<S, std::string_view>
struct field_traits<S> {
  // Not binary_results: accepts() admits every type, and only the text
  // types (and user types such as enums) have a binary form that is text.
  static constexpr bool binary_results = false;
  // In text format every value has a text form, and reading it as a string
  // is never a misread (a numeric's digits, a json document, an enum label,
  // a domain's value). In binary format only the text types are text.
  static bool accepts(type_oid) { return true; }
  static std::string cpp_name() { return std::is_same_v<S, std::string> ? "std::string" : "std::string_view"; }
  static std::error_code decode(const field_value& v, S& out) {
    // A user type's binary form is text for an enum (its label) but not for
    // a composite or an array, whose binary forms start with a 4-byte count
    // and so hold a NUL byte, which no text value can.
    if (v.format == wire_format::binary && !detail::text_conv::is_text_type(v.type) &&
        (v.type < oids::first_user_oid || v.data.find('\0') != std::string_view::npos))
      return make_error_code(errc::type_mismatch);
    out = S(v.data);
    return {};
  }
};

// ---- NULL --------------------------------------------------------------------------------

template <>
struct param_traits<std::nullopt_t> {
  static std::optional<std::string> encode(std::nullopt_t) { return std::nullopt; }
};
template <>
struct param_traits<std::nullptr_t> {
  static std::optional<std::string> encode(std::nullptr_t) { return std::nullopt; }
};

// ---- bytea -------------------------------------------------------------------------------
// Always binary as a parameter: every byte value, NUL included, goes as is.

template <>
struct param_traits<std::span<const std::byte>> {
  static constexpr type_oid oid = oids::bytea;
  static std::optional<std::string> encode(std::span<const std::byte> v) { return detail::codec::encode_bytea_text(v); }
  static std::error_code encode_binary(std::span<const std::byte> v, std::string& out) {
    out.append(reinterpret_cast<const char*>(v.data()), v.size());
    return {};
  }
};
template <>
struct param_traits<std::vector<std::byte>> : param_traits<std::span<const std::byte>> {};

template <>
struct field_traits<std::vector<std::byte>> {
  static constexpr bool binary_results = true;  // decode reads the binary form of every type accepts() admits
  static bool accepts(type_oid t) { return t == oids::bytea; }
  static std::string cpp_name() { return "std::vector<std::byte>"; }
  static std::error_code decode(const field_value& v, std::vector<std::byte>& out) {
    if (v.format == wire_format::text) return detail::codec::decode_bytea_text(v.data, out);
    const auto* p = reinterpret_cast<const std::byte*>(v.data.data());
    out.assign(p, p + v.data.size());
    return {};
  }
};

// ---- uuid --------------------------------------------------------------------------------

template <>
struct param_traits<boost::uuids::uuid> {
  static constexpr type_oid oid = oids::uuid;
  static std::optional<std::string> encode(const boost::uuids::uuid& v) {
    std::array<std::uint8_t, 16> a;
    std::memcpy(a.data(), v.data, 16);
    return detail::codec::encode_uuid_text(a);
  }
  static std::error_code encode_binary(const boost::uuids::uuid& v, std::string& out) {
    out.append(reinterpret_cast<const char*>(v.data), 16);
    return {};
  }
};

template <>
struct field_traits<boost::uuids::uuid> {
  static constexpr bool binary_results = true;  // decode reads the binary form of every type accepts() admits
  static bool accepts(type_oid t) { return t == oids::uuid; }
  static std::string cpp_name() { return "boost::uuids::uuid"; }
  static std::error_code decode(const field_value& v, boost::uuids::uuid& out) {
    std::array<std::uint8_t, 16> a{};
    auto ec = v.format == wire_format::text ? detail::codec::decode_uuid_text(v.data, a)
                                            : detail::codec::decode_uuid_binary(v.data, a);
    if (!ec) std::memcpy(out.data, a.data(), 16);
    return ec;
  }
};

// ---- numeric -----------------------------------------------------------------------------
// Text with its type: the exact digits, nothing to convert on either side.

template <>
struct param_traits<numeric> {
  static constexpr type_oid oid = oids::numeric;
  static std::optional<std::string> encode(const numeric& v) { return v.str(); }
};

template <>
struct field_traits<numeric> {
  static constexpr bool binary_results = true;  // decode reads the binary form of every type accepts() admits
  static bool accepts(type_oid t) { return t == oids::numeric; }
  static std::string cpp_name() { return "pgpipe::numeric"; }
  static std::error_code decode(const field_value& v, numeric& out) {
    return v.format == wire_format::text ? detail::codec::decode_numeric_text(v.data, out)
                                         : detail::codec::decode_numeric_binary(v.data, out);
  }
};

// ---- json, jsonb ---------------------------------------------------------------------------
// Text with no type: the server reads it as the json or jsonb the statement wants.

template <>
struct param_traits<boost::json::value> {
  static std::optional<std::string> encode(const boost::json::value& v) { return detail::codec::encode_json_text(v); }
};

template <>
struct field_traits<boost::json::value> {
  static constexpr bool binary_results = true;  // decode reads the binary form of every type accepts() admits
  static bool accepts(type_oid t) { return t == oids::json || t == oids::jsonb; }
  static std::string cpp_name() { return "boost::json::value"; }
  static std::error_code decode(const field_value& v, boost::json::value& out) {
    return detail::codec::decode_json(v.data, v.format == wire_format::binary && v.type == oids::jsonb, out);
  }
};

}  // namespace pgpipe
