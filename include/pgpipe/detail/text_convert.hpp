// Text-format conversion between C++ values and PostgreSQL's text
// representation: encoding query parameters and decoding result fields.
// Header-only and server-free, so the rules are unit-tested without a
// database. Users normally reach this through field::get<T>() and the
// argument lists of async_query(); specialise pgpipe::param_traits /
// pgpipe::field_traits for their own types.
#pragma once

#include <pgpipe/error.hpp>

#include <charconv>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

namespace pgpipe {

/// How a C++ value becomes a text-format parameter. `encode` returns the text,
/// or std::nullopt for SQL NULL. Specialise for your own types.
template <class T, class Enable = void>
struct param_traits;

/// How a text-format field becomes a C++ value. `decode` returns an empty
/// error_code on success, errc::conversion_error when the text does not fit.
/// NULL is handled before decode is called (std::optional<T> or errc::null_value).
template <class T, class Enable = void>
struct field_traits;

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

}  // namespace detail::text_conv

// ---- parameters ------------------------------------------------------------

template <detail::text_conv::sql_integer T>
struct param_traits<T> {
  static std::optional<std::string> encode(T v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
  }
};

template <std::floating_point T>
struct param_traits<T> {
  // Shortest text that reads back to the same value (std::to_chars without a
  // precision), so a double survives the round trip through the server.
  static std::optional<std::string> encode(T v) {
    if (std::isnan(v)) return std::string("NaN");
    if (std::isinf(v)) return std::string(v < 0 ? "-Infinity" : "Infinity");
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
  }
};

template <>
struct param_traits<bool> {
  static std::optional<std::string> encode(bool v) { return std::string(v ? "t" : "f"); }
};

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

template <>
struct param_traits<std::nullopt_t> {
  static std::optional<std::string> encode(std::nullopt_t) { return std::nullopt; }
};
template <>
struct param_traits<std::nullptr_t> {
  static std::optional<std::string> encode(std::nullptr_t) { return std::nullopt; }
};

template <class T>
struct param_traits<std::optional<T>> {
  static std::optional<std::string> encode(const std::optional<T>& v) {
    if (!v) return std::nullopt;
    return param_traits<std::remove_cvref_t<T>>::encode(*v);
  }
};

namespace detail {

/// Parameters encoded for libpq's text format. A NUL byte cannot be sent in
/// text format (libpq would silently cut the value there), so encoding
/// records errc::invalid_argument naming the parameter instead.
struct encoded_params {
  std::vector<std::optional<std::string>> values;
  std::error_code ec;
  std::string error_message;  ///< why ec is set, e.g. "parameter $2 contains a NUL byte"
};

template <class T>
std::optional<std::string> encode_param(const T& v) {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_array_v<U>) {
    return param_traits<U>::encode(v);
  } else {
    return param_traits<std::decay_t<U>>::encode(v);
  }
}

inline void check_params(encoded_params& p) {
  for (std::size_t i = 0; i < p.values.size(); ++i) {
    const auto& v = p.values[i];
    if (v && v->find('\0') != std::string::npos) {
      p.ec = make_error_code(errc::invalid_argument);
      p.error_message = "parameter $" + std::to_string(i + 1) +
                        " contains a NUL byte, which text format cannot carry";
      return;
    }
  }
}

template <class... Args>
encoded_params encode_params(const Args&... args) {
  encoded_params p;
  p.values.reserve(sizeof...(Args));
  (p.values.push_back(encode_param(args)), ...);
  check_params(p);
  return p;
}

}  // namespace detail

// ---- fields ----------------------------------------------------------------

template <detail::text_conv::sql_integer T>
struct field_traits<T> {
  // Whole text must be a number that fits T: "12x" and 300 into int8_t both
  // fail instead of silently truncating.
  static std::error_code decode(std::string_view text, T& out) {
    const char* b = text.data();
    const char* e = b + text.size();
    auto r = std::from_chars(b, e, out);
    if (r.ec != std::errc{} || r.ptr != e || text.empty()) return make_error_code(errc::conversion_error);
    return {};
  }
};

template <std::floating_point T>
struct field_traits<T> {
  static std::error_code decode(std::string_view text, T& out) {
    // PostgreSQL spells the specials NaN / Infinity / -Infinity; from_chars
    // accepts those (case-insensitively) too.
    const char* b = text.data();
    const char* e = b + text.size();
    auto r = std::from_chars(b, e, out);
    if (r.ec != std::errc{} || r.ptr != e || text.empty()) return make_error_code(errc::conversion_error);
    return {};
  }
};

template <>
struct field_traits<bool> {
  static std::error_code decode(std::string_view text, bool& out) {
    if (text == "t" || text == "true") {
      out = true;
      return {};
    }
    if (text == "f" || text == "false") {
      out = false;
      return {};
    }
    return make_error_code(errc::conversion_error);
  }
};

template <>
struct field_traits<std::string_view> {
  static std::error_code decode(std::string_view text, std::string_view& out) {
    out = text;
    return {};
  }
};

template <>
struct field_traits<std::string> {
  static std::error_code decode(std::string_view text, std::string& out) {
    out.assign(text);
    return {};
  }
};

namespace detail {

/// Converts a field: `text` is std::nullopt for SQL NULL. std::optional<T>
/// maps NULL to std::nullopt; any other T gives errc::null_value.
template <class T>
std::error_code decode_field(std::optional<std::string_view> text, T& out) {
  if constexpr (text_conv::is_optional_v<T>) {
    using V = typename T::value_type;
    if (!text) {
      out.reset();
      return {};
    }
    V v{};
    auto ec = field_traits<V>::decode(*text, v);
    if (!ec) out = std::move(v);
    return ec;
  } else {
    if (!text) return make_error_code(errc::null_value);
    return field_traits<T>::decode(*text, out);
  }
}

}  // namespace detail
}  // namespace pgpipe
