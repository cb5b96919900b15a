// How the drivers use the traits: a parameter list becomes encoded_params
// (values, types, formats), and a field becomes a T with its type checked.
// Included by pgpipe/type_traits.hpp; users must not touch this.
#pragma once

#include <pgpipe/detail/builtin_traits_containers.hpp>
#include <pgpipe/detail/param_limits.hpp>
#include <pgpipe/error.hpp>

#include <boost/container/small_vector.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

namespace pgpipe::detail {

/// One parameter on its way to libpq.
struct encoded_param {
  std::optional<std::string> value;  ///< std::nullopt: SQL NULL
  type_oid type = 0;                 ///< 0: the server infers it
  wire_format format = wire_format::text;
};

/// Parameters as libpq's PQsendQueryParams wants them. A NUL byte cannot be
/// sent in text format (libpq would cut the value there), so encoding
/// records errc::invalid_argument naming the parameter instead; binary
/// parameters (bytea, ...) carry any byte.
/// Up to inline_params parameters are held in the object itself: a query's
/// three arrays were three allocations per call. Their storage moves with
/// the object, so a key borrowing types.data() must not outlive a move (the
/// async driver borrows it from a request that stays in place).
inline constexpr std::size_t inline_params = 4;
template <class T>
using param_array = boost::container::small_vector<T, inline_params>;

struct encoded_params {
  param_array<std::optional<std::string>> values;
  param_array<type_oid> types;  ///< one per value
  param_array<int> formats;     ///< one per value: 0 text, 1 binary
  std::error_code ec;
  std::string error_message;  ///< why ec is set, e.g. "parameter $2 contains a NUL byte"

  bool all_text_untyped() const noexcept {
    for (std::size_t i = 0; i < types.size(); ++i)
      if (types[i] != 0 || formats[i] != 0) return false;
    return true;
  }
  /// Sent with a type and a format per value (else all text, types
  /// inferred by the server). Internal requests may leave types and formats
  /// empty.
  bool typed() const noexcept {
    return types.size() == values.size() && formats.size() == values.size() && !all_text_untyped();
  }
};

template <class T>
using param_traits_for = std::conditional_t<std::is_array_v<std::remove_cvref_t<T>>,
                                            param_traits<std::remove_cvref_t<T>>,
                                            param_traits<std::decay_t<std::remove_cvref_t<T>>>>;

/// The text form of a parameter (what the blocking driver sends).
template <class T>
std::optional<std::string> encode_param(const T& v) {
  return param_traits_for<T>::encode(v);
}

/// The form the async driver sends: binary with its type when the traits
/// have one, else text (typed when the traits name a type).
template <class T>
encoded_param encode_param_for_wire(const T& v, std::error_code& ec) {
  using P = param_traits_for<T>;
  using D = std::remove_cvref_t<T>;
  encoded_param p;
  p.type = traits_detect::oid_of<P>();
  if constexpr (traits_detect::has_binary<P, D>) {
    if constexpr (text_conv::is_optional_v<D>) {
      if (!v) return p;  // NULL: no bytes, format irrelevant
    }
    p.format = wire_format::binary;
    p.value.emplace();
    ec = P::encode_binary(v, *p.value);
  } else {
    p.value = P::encode(v);
  }
  return p;
}

inline void check_params(encoded_params& p) {
  // Sizes first: they are known without reading a byte, and libpq takes each
  // length as an int.
  std::string too_large = param_size_refusal(p.values.size(), [&](std::size_t i) -> std::size_t {
    return p.values[i] ? p.values[i]->size() : 0;
  });
  if (!too_large.empty()) {
    p.ec = make_error_code(errc::invalid_argument);
    p.error_message = std::move(too_large);
    return;
  }
  for (std::size_t i = 0; i < p.values.size(); ++i) {
    const auto& v = p.values[i];
    if (p.formats[i] == 0 && v && v->find('\0') != std::string::npos) {
      p.ec = make_error_code(errc::invalid_argument);
      p.error_message = "parameter $" + std::to_string(i + 1) +
                        " contains a NUL byte, which text format cannot carry (send bytes as std::vector<std::byte>)";
      return;
    }
  }
}

template <class... Args>
encoded_params encode_params(const Args&... args) {
  encoded_params p;
  p.values.reserve(sizeof...(Args));
  p.types.reserve(sizeof...(Args));
  p.formats.reserve(sizeof...(Args));
  std::size_t n = 0;
  auto add = [&](const auto& a) {
    ++n;
    std::error_code ec;
    encoded_param e = encode_param_for_wire(a, ec);
    if (ec && !p.ec) {
      p.ec = make_error_code(errc::invalid_argument);
      p.error_message = "parameter $" + std::to_string(n) + " cannot be sent: " + ec.message();
    }
    p.values.push_back(std::move(e.value));
    p.types.push_back(e.type);
    p.formats.push_back(static_cast<int>(e.format));
  };
  (add(args), ...);
  (void)add;  // unused when there are no arguments
  if (!p.ec) check_params(p);
  return p;
}

/// Converts a field: `v` is std::nullopt for SQL NULL. std::optional<T>
/// maps NULL to std::nullopt; any other T gives errc::null_value. The
/// column's type is checked first: errc::type_mismatch when T cannot be read
/// from it.
template <class T>
std::error_code decode_field(const std::optional<field_value>& v, T& out) {
  if constexpr (text_conv::is_optional_v<T>) {
    using V = typename T::value_type;
    if (!v) {
      out.reset();
      return {};
    }
    if (!traits_detect::accepts<V>(v->type)) return make_error_code(errc::type_mismatch);
    V x{};
    auto ec = traits_detect::decode_value(*v, x);
    if (!ec) out = std::move(x);
    return ec;
  } else {
    if (!v) return make_error_code(errc::null_value);
    if (!traits_detect::accepts<T>(v->type)) return make_error_code(errc::type_mismatch);
    return traits_detect::decode_value(*v, out);
  }
}

/// Legacy text-only entry point, kept for code that decodes text directly.
template <class T>
std::error_code decode_field(std::optional<std::string_view> text, T& out) {
  std::optional<field_value> v;
  if (text) v = field_value{*text, 0, wire_format::text};
  if constexpr (text_conv::is_optional_v<T>) {
    using V = typename T::value_type;
    if (!v) {
      out.reset();
      return {};
    }
    V x{};
    auto ec = traits_detect::decode_value(*v, x);
    if (!ec) out = std::move(x);
    return ec;
  } else {
    if (!v) return make_error_code(errc::null_value);
    return traits_detect::decode_value(*v, out);
  }
}

/// The C++ type's name for messages ("int32_t", "std::vector<pgpipe::numeric>").
template <class T>
std::string cpp_type_name() {
  if constexpr (text_conv::is_optional_v<T>) {
    return "std::optional<" + traits_detect::cpp_name<typename T::value_type>() + ">";
  } else {
    return traits_detect::cpp_name<T>();
  }
}

}  // namespace pgpipe::detail
