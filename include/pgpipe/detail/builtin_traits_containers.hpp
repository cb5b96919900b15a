// Built-in param_traits/field_traits for std::optional (NULL) and
// one-dimensional arrays (std::vector<T>, std::vector<std::optional<T>>).
// Included by pgpipe/type_traits.hpp (read the contract there).
#pragma once

#include <pgpipe/detail/codec.hpp>
#include <pgpipe/error.hpp>
#include <pgpipe/types.hpp>

#include <concepts>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace pgpipe {
namespace detail::traits_detect {

template <class P>
concept has_oid = requires { P::oid; };
template <class P>
constexpr type_oid oid_of() {
  if constexpr (has_oid<P>) {
    return P::oid;
  } else {
    return 0;
  }
}
template <class P, class T>
concept has_binary = has_oid<P> && requires(const T& v, std::string& out) {
  { P::encode_binary(v, out) } -> std::same_as<std::error_code>;
};
template <class F>
concept has_accepts = requires(type_oid t) {
  { F::accepts(t) } -> std::convertible_to<bool>;
};
template <class F, class T>
concept has_value_decode = requires(const field_value& v, T& out) {
  { F::decode(v, out) } -> std::convertible_to<std::error_code>;
};
template <class F>
concept has_cpp_name = requires {
  { F::cpp_name() } -> std::convertible_to<std::string>;
};
template <class T>
concept decodable = requires { sizeof(field_traits<T>); };
template <class T>
concept encodable = requires { sizeof(param_traits<T>); };

template <class T>
bool accepts(type_oid t) {
  if constexpr (has_accepts<field_traits<T>>) {
    return field_traits<T>::accepts(t);
  } else {
    return true;
  }
}

template <class T>
std::string cpp_name() {
  if constexpr (has_cpp_name<field_traits<T>>) {
    return field_traits<T>::cpp_name();
  } else {
    return "a user type";
  }
}

/// Runs field_traits<T>::decode, new or legacy (text-only) form.
template <class T>
std::error_code decode_value(const field_value& v, T& out) {
  using F = field_traits<T>;
  if constexpr (has_value_decode<F, T>) {
    return F::decode(v, out);
  } else {
    if (v.format != wire_format::text) return make_error_code(errc::type_mismatch);
    return F::decode(v.data, out);
  }
}

}  // namespace detail::traits_detect

// ---- std::optional: NULL ----------------------------------------------------------

template <class T>
struct param_traits<std::optional<T>> {
  using inner = param_traits<std::remove_cvref_t<T>>;
  static constexpr type_oid oid = detail::traits_detect::oid_of<inner>();
  static std::optional<std::string> encode(const std::optional<T>& v) {
    if (!v) return std::nullopt;
    return inner::encode(*v);
  }
  // Only called for an engaged optional (NULL needs no bytes).
  static std::error_code encode_binary(const std::optional<T>& v, std::string& out)
    requires detail::traits_detect::has_binary<inner, T>
  {
    return inner::encode_binary(*v, out);
  }
};

// ---- one-dimensional arrays --------------------------------------------------------------

namespace detail::traits_detect {
template <class T>
struct element_of {
  using type = T;
  static constexpr bool nullable = false;
};
template <class T>
struct element_of<std::optional<T>> {
  using type = T;
  static constexpr bool nullable = true;
};
}  // namespace detail::traits_detect

template <class E>
  requires(!std::is_same_v<E, std::byte> && detail::traits_detect::encodable<
                                                typename detail::traits_detect::element_of<E>::type>)
struct param_traits<std::vector<E>> {
  using element = typename detail::traits_detect::element_of<E>::type;
  using inner = param_traits<element>;
  static constexpr type_oid element_oid = detail::traits_detect::oid_of<inner>();
  // An array type pgpipe knows, or none (the server infers it, e.g. an enum's array).
  static constexpr type_oid oid = element_oid == oids::bool_          ? oids::bool_array
                                  : element_oid == oids::bytea       ? oids::bytea_array
                                  : element_oid == oids::int2        ? oids::int2_array
                                  : element_oid == oids::int4        ? oids::int4_array
                                  : element_oid == oids::int8        ? oids::int8_array
                                  : element_oid == oids::float4      ? oids::float4_array
                                  : element_oid == oids::float8      ? oids::float8_array
                                  : element_oid == oids::uuid        ? oids::uuid_array
                                  : element_oid == oids::timestamptz ? oids::timestamptz_array
                                  : element_oid == oids::timestamp   ? oids::timestamp_array
                                  : element_oid == oids::date        ? oids::date_array
                                  : element_oid == oids::time        ? oids::time_array
                                  : element_oid == oids::interval    ? oids::interval_array
                                  : element_oid == oids::numeric     ? oids::numeric_array
                                                                     : 0;

  /// Text array literal, every element quoted: "{"1","2",NULL}".
  static std::optional<std::string> encode(const std::vector<E>& v) {
    std::string s = "{";
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) s.push_back(',');
      detail::codec::append_array_text_element(s, encode_one(v[i]));
    }
    s.push_back('}');
    return s;
  }
  /// Binary array (ndim 1, lower bound 1) when the element has a binary form.
  static std::error_code encode_binary(const std::vector<E>& v, std::string& out)
    requires detail::traits_detect::has_binary<inner, element>
  {
    using detail::codec::store_be;
    bool has_null = false;
    if constexpr (detail::traits_detect::element_of<E>::nullable) {
      for (const auto& e : v) has_null = has_null || !e;
    }
    store_be(out, v.empty() ? 0 : 1, 4);
    store_be(out, has_null ? 1 : 0, 4);
    store_be(out, element_oid, 4);
    if (v.empty()) return {};
    if (v.size() > 0x7fffffff) return make_error_code(errc::invalid_argument);
    store_be(out, v.size(), 4);
    store_be(out, 1, 4);
    for (const auto& e : v) {
      const element* p = nullptr;
      if constexpr (detail::traits_detect::element_of<E>::nullable) {
        if (!e) {
          store_be(out, 0xffffffffu, 4);
          continue;
        }
        p = &*e;
      } else {
        p = &e;
      }
      const std::size_t at = out.size();
      store_be(out, 0, 4);
      if (auto ec = inner::encode_binary(*p, out)) return ec;
      const std::size_t len = out.size() - at - 4;
      if (len > 0x7fffffff) return make_error_code(errc::invalid_argument);
      for (int k = 0; k < 4; ++k) out[at + k] = static_cast<char>((len >> (8 * (3 - k))) & 0xff);
    }
    return {};
  }

 private:
  static std::optional<std::string> encode_one(const E& e) {
    if constexpr (detail::traits_detect::element_of<E>::nullable) {
      if (!e) return std::nullopt;
      return inner::encode(*e);
    } else {
      return inner::encode(e);
    }
  }
};

template <class E>
  requires(!std::is_same_v<E, std::byte> && detail::traits_detect::decodable<
                                                typename detail::traits_detect::element_of<E>::type>)
struct field_traits<std::vector<E>> {
  using element = typename detail::traits_detect::element_of<E>::type;
  static constexpr bool nullable = detail::traits_detect::element_of<E>::nullable;

  static bool accepts(type_oid t) {
    const type_oid e = array_element_oid(t);
    return e != 0 && detail::traits_detect::accepts<element>(e);
  }
  static std::string cpp_name() {
    const std::string n = detail::traits_detect::cpp_name<element>();
    return nullable ? "std::vector<std::optional<" + n + ">>" : "std::vector<" + n + ">";
  }
  static std::error_code decode(const field_value& v, std::vector<E>& out) {
    detail::codec::array_items items;
    auto ec = v.format == wire_format::text
                  ? detail::codec::split_array_text(v.data, array_element_oid(v.type), items)
                  : detail::codec::split_array_binary(v.data, items);
    if (ec) return ec;
    if (!detail::traits_detect::accepts<element>(items.element_type)) return make_error_code(errc::type_mismatch);
    out.clear();
    out.reserve(items.items.size());
    for (const auto& item : items.items) {
      if (!item) {
        if constexpr (nullable) {
          out.emplace_back(std::nullopt);
          continue;
        } else {
          return make_error_code(errc::null_value);
        }
      }
      element x{};
      if (auto e = detail::traits_detect::decode_value(field_value{*item, items.element_type, v.format}, x)) return e;
      out.push_back(std::move(x));
    }
    return {};
  }
};

}  // namespace pgpipe
