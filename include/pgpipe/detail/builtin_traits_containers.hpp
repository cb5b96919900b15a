// Built-in param_traits/field_traits for std::optional (NULL), arrays as
// std::vector<T> (one dimension; also a multirange's ranges) and as
// std::vector<std::vector<T>> (two, rectangular), and the array codec they
// share with pgpipe::array<T> (pgpipe/array.hpp).
// Included by pgpipe/type_traits.hpp (read the contract there).
#pragma once

#include <pgpipe/detail/codec.hpp>
#include <pgpipe/error.hpp>
#include <pgpipe/types.hpp>

#include <concepts>
#include <cstdint>
#include <span>
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
template <class F>
concept declares_binary_results = requires {
  { F::binary_results } -> std::convertible_to<bool>;
};
/// Whether field_traits<T> reads the binary form of every column type it
/// accepts (its binary_results member; absent: no). Typed reads ask the
/// server for binary results only when every field's type says yes.
template <class T>
constexpr bool reads_binary() {
  if constexpr (declares_binary_results<field_traits<T>>) {
    return field_traits<T>::binary_results;
  } else {
    return false;
  }
}
template <class T>
concept encodable = requires { sizeof(param_traits<T>); };
/// Whether T reads from arrays of user-defined types, whose array OIDs are
/// server-assigned and cannot be looked up here (composites say so).
template <class T>
concept reads_user_arrays = requires { requires field_traits<T>::reads_user_arrays; };

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

// ---- arrays: what every C++ array shape shares ------------------------------

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
template <class T>
inline constexpr bool is_vector_v = false;
template <class T>
inline constexpr bool is_vector_v<std::vector<T>> = true;

/// The built-in array type of an element type, or 0 (the server infers it,
/// e.g. an enum's array, or text).
constexpr type_oid array_oid_for(type_oid element) {
  switch (element) {
    case oids::bool_: return oids::bool_array;
    case oids::bytea: return oids::bytea_array;
    case oids::int2: return oids::int2_array;
    case oids::int4: return oids::int4_array;
    case oids::int8: return oids::int8_array;
    case oids::float4: return oids::float4_array;
    case oids::float8: return oids::float8_array;
    case oids::uuid: return oids::uuid_array;
    case oids::timestamptz: return oids::timestamptz_array;
    case oids::timestamp: return oids::timestamp_array;
    case oids::date: return oids::date_array;
    case oids::time: return oids::time_array;
    case oids::interval: return oids::interval_array;
    case oids::numeric: return oids::numeric_array;
    case oids::int4range: return oids::int4range_array;
    case oids::int8range: return oids::int8range_array;
    case oids::numrange: return oids::numrange_array;
    case oids::tsrange: return oids::tsrange_array;
    case oids::tstzrange: return oids::tstzrange_array;
    case oids::daterange: return oids::daterange_array;
    default: return 0;
  }
}

/// The element type of a column read as a collection: an array's element,
/// a multirange's range; 0 when the column is neither.
inline type_oid collection_element(type_oid t) {
  const type_oid e = array_element_oid(t);
  return e != 0 ? e : multirange_range_oid(t);
}

/// Splits an array or multirange value into its elements (and dimensions).
inline std::error_code split_collection(const field_value& v, codec::array_items& items) {
  const bool text = v.format == wire_format::text;
  if (const type_oid r = multirange_range_oid(v.type)) {
    auto ec = text ? codec::split_multirange_text(v.data, r, items) : codec::split_multirange_binary(v.data, r, items);
    if (!ec && !items.items.empty()) {
      items.dims = {static_cast<std::int32_t>(items.items.size())};
      items.lower_bounds = {1};
    }
    return ec;
  }
  return text ? codec::split_array_text(v.data, array_element_oid(v.type), items)
              : codec::split_array_binary(v.data, items);
}

/// Decodes items [from, from + count) into `out` (E: T or std::optional<T>):
/// the one element loop of every array shape.
template <class E>
std::error_code decode_items(const codec::array_items& items, wire_format f, std::size_t from, std::size_t count,
                             std::vector<E>& out) {
  using element = typename element_of<E>::type;
  out.clear();
  out.reserve(count);
  for (std::size_t k = from; k < from + count; ++k) {
    const auto& item = items.items[k];
    if (!item) {
      if constexpr (element_of<E>::nullable) {
        out.emplace_back(std::nullopt);
        continue;
      } else {
        return make_error_code(errc::null_value);
      }
    }
    element x{};
    if (auto e = decode_value(field_value{*item, items.element_type, f}, x)) return e;
    out.push_back(std::move(x));
  }
  return {};
}

/// Splits `v` and checks its element type and its number of dimensions
/// (0, for an empty array, is always allowed).
template <class E>
std::error_code split_checked(const field_value& v, std::size_t ndim, codec::array_items& items) {
  if (auto ec = split_collection(v, items)) return ec;
  if (!accepts<typename element_of<E>::type>(items.element_type)) return make_error_code(errc::type_mismatch);
  if (!items.dims.empty() && items.dims.size() != ndim) return make_error_code(errc::dimensions_mismatch);
  return {};
}

/// Encodes an array of E (T or std::optional<T>) whose elements `at(k)`
/// gives in row-major order, in text or binary form.
template <class E>
struct array_encoder {
  using element = typename element_of<E>::type;
  using inner = param_traits<element>;
  static constexpr type_oid element_oid = oid_of<inner>();
  static constexpr type_oid oid = array_oid_for(element_oid);
  static constexpr bool binary = has_binary<inner, element>;

  /// "{"1","2"}", "{{"1","2"},{"3","4"}}", "[0:1]={...}" when a lower bound
  /// is not 1; "{}" when there are no elements.
  template <class At>
  static std::string text(std::span<const std::int32_t> dims, std::span<const std::int32_t> lower_bounds, At at) {
    std::string s;
    std::size_t total = dims.empty() ? 0 : 1;
    for (auto d : dims) total *= static_cast<std::size_t>(d);
    if (total == 0) return "{}";
    bool decorate = false;
    for (auto lb : lower_bounds) decorate = decorate || lb != 1;
    if (decorate) {
      for (std::size_t d = 0; d < dims.size(); ++d)
        s += "[" + std::to_string(lower_bounds[d]) + ":" +
             std::to_string(static_cast<std::int64_t>(lower_bounds[d]) + dims[d] - 1) + "]";
      s += "=";
    }
    std::size_t k = 0;
    level(s, dims, 0, at, k);
    return s;
  }

  template <class At>
  static std::error_code binary_form(std::span<const std::int32_t> dims, std::span<const std::int32_t> lower_bounds,
                                     At at, std::string& out)
    requires binary
  {
    using codec::store_be;
    std::size_t total = dims.empty() ? 0 : 1;
    for (auto d : dims) total *= static_cast<std::size_t>(d);
    bool has_null = false;
    if constexpr (element_of<E>::nullable) {
      for (std::size_t k = 0; k < total; ++k) has_null = has_null || !at(k);
    }
    store_be(out, total == 0 ? 0 : dims.size(), 4);
    store_be(out, has_null ? 1 : 0, 4);
    store_be(out, element_oid, 4);
    if (total == 0) return {};
    for (std::size_t d = 0; d < dims.size(); ++d) {
      store_be(out, static_cast<std::uint32_t>(dims[d]), 4);
      store_be(out, static_cast<std::uint32_t>(lower_bounds[d]), 4);
    }
    for (std::size_t k = 0; k < total; ++k) {
      const E& e = at(k);
      const element* p = nullptr;
      if constexpr (element_of<E>::nullable) {
        if (!e) {
          store_be(out, 0xffffffffu, 4);
          continue;
        }
        p = &*e;
      } else {
        p = &e;
      }
      const std::size_t pos = out.size();
      store_be(out, 0, 4);
      if (auto ec = inner::encode_binary(*p, out)) return ec;
      const std::size_t len = out.size() - pos - 4;
      if (len > 0x7fffffff) return make_error_code(errc::invalid_argument);
      for (int b = 0; b < 4; ++b) out[pos + b] = static_cast<char>((len >> (8 * (3 - b))) & 0xff);
    }
    return {};
  }

 private:
  template <class At>
  static void level(std::string& s, std::span<const std::int32_t> dims, std::size_t d, At& at, std::size_t& k) {
    s.push_back('{');
    for (std::int32_t i = 0; i < dims[d]; ++i) {
      if (i) s.push_back(',');
      if (d + 1 < dims.size()) {
        level(s, dims, d + 1, at, k);
      } else {
        codec::append_array_text_element(s, one(at(k++)));
      }
    }
    s.push_back('}');
  }
  static std::optional<std::string> one(const E& e) {
    if constexpr (element_of<E>::nullable) {
      if (!e) return std::nullopt;
      return inner::encode(*e);
    } else {
      return inner::encode(e);
    }
  }
};

}  // namespace detail::traits_detect

// ---- std::vector<T>: one dimension -------------------------------------------------------

template <class E>
  requires(!std::is_same_v<E, std::byte> && detail::traits_detect::encodable<
                                                typename detail::traits_detect::element_of<E>::type>)
struct param_traits<std::vector<E>> {
  using encoder = detail::traits_detect::array_encoder<E>;
  static constexpr type_oid oid = encoder::oid;

  /// Text array literal, every element quoted: "{"1","2",NULL}".
  static std::optional<std::string> encode(const std::vector<E>& v) {
    const std::int32_t dims[1] = {length(v)}, lbs[1] = {1};
    return encoder::text(dims, lbs, [&](std::size_t k) -> const E& { return v[k]; });
  }
  /// Binary array (ndim 1, lower bound 1) when the element has a binary form.
  static std::error_code encode_binary(const std::vector<E>& v, std::string& out)
    requires encoder::binary
  {
    const std::int32_t dims[1] = {length(v)}, lbs[1] = {1};
    return encoder::binary_form(dims, lbs, [&](std::size_t k) -> const E& { return v[k]; }, out);
  }

 private:
  static std::int32_t length(const std::vector<E>& v) {
    if (v.size() > 0x7fffffff) throw error(errc::invalid_argument, "an array parameter has more than 2^31-1 elements");
    return static_cast<std::int32_t>(v.size());
  }
};

template <class E>
  requires(!std::is_same_v<E, std::byte> && detail::traits_detect::decodable<
                                                typename detail::traits_detect::element_of<E>::type>)
struct field_traits<std::vector<E>> {
  using element = typename detail::traits_detect::element_of<E>::type;
  static constexpr bool binary_results = detail::traits_detect::reads_binary<element>();
  static constexpr bool nullable = detail::traits_detect::element_of<E>::nullable;

  /// A one-dimensional array (any lower bound) or a multirange; any
  /// user-defined type when the element reads from user arrays (the value's
  /// own layout is checked as it decodes).
  static bool accepts(type_oid t) {
    if constexpr (detail::traits_detect::reads_user_arrays<element>) {
      if (t >= oids::first_user_oid) return true;
    }
    const type_oid e = detail::traits_detect::collection_element(t);
    return e != 0 && detail::traits_detect::accepts<element>(e);
  }
  static std::string cpp_name() {
    const std::string n = detail::traits_detect::cpp_name<element>();
    return nullable ? "std::vector<std::optional<" + n + ">>" : "std::vector<" + n + ">";
  }
  /// errc::dimensions_mismatch for an array of two or more dimensions.
  static std::error_code decode(const field_value& v, std::vector<E>& out) {
    detail::codec::array_items items;
    if (auto ec = detail::traits_detect::split_checked<E>(v, 1, items)) return ec;
    return detail::traits_detect::decode_items(items, v.format, 0, items.items.size(), out);
  }
};

// ---- std::vector<std::vector<T>>: two dimensions, rectangular -----------------------------

namespace detail::traits_detect {
/// An element of a 2-D vector: not itself an array (bytea excepted), so that
/// std::vector<std::vector<std::byte>> stays a 1-D bytea[].
template <class E>
concept grid_element = !std::is_same_v<E, std::byte> && !is_vector_v<typename element_of<E>::type>;

/// The shape of rows for a 2-D array: rows x columns, lower bounds 1.
/// Throws pgpipe::error(errc::invalid_argument) naming the first row whose
/// length differs from the first row's.
template <class E>
std::int32_t grid_columns(const std::vector<std::vector<E>>& v) {
  if (v.size() > 0x7fffffff || (!v.empty() && v[0].size() > 0x7fffffff))
    throw error(errc::invalid_argument, "a 2-D array parameter is too large");
  for (std::size_t r = 1; r < v.size(); ++r)
    if (v[r].size() != v[0].size())
      throw error(errc::invalid_argument, "a 2-D array parameter must be rectangular: row " + std::to_string(r) +
                                              " has " + std::to_string(v[r].size()) + " element(s), row 0 has " +
                                              std::to_string(v[0].size()));
  return v.empty() ? 0 : static_cast<std::int32_t>(v[0].size());
}
}  // namespace detail::traits_detect

/// A rectangular 2-D array: a ragged one cannot be sent (the call taking the
/// parameter throws pgpipe::error(errc::invalid_argument) naming the row).
/// Rows of no elements are sent as the empty array '{}'.
template <class E>
  requires(detail::traits_detect::grid_element<E> &&
           detail::traits_detect::encodable<typename detail::traits_detect::element_of<E>::type>)
struct param_traits<std::vector<std::vector<E>>> {
  using encoder = detail::traits_detect::array_encoder<E>;
  static constexpr type_oid oid = encoder::oid;

  static std::optional<std::string> encode(const std::vector<std::vector<E>>& v) {
    const std::int32_t cols = detail::traits_detect::grid_columns(v);
    const std::int32_t dims[2] = {static_cast<std::int32_t>(v.size()), cols}, lbs[2] = {1, 1};
    return encoder::text(dims, lbs, [&](std::size_t k) -> const E& { return v[k / cols][k % cols]; });
  }
  static std::error_code encode_binary(const std::vector<std::vector<E>>& v, std::string& out)
    requires encoder::binary
  {
    const std::int32_t cols = detail::traits_detect::grid_columns(v);
    const std::int32_t dims[2] = {static_cast<std::int32_t>(v.size()), cols}, lbs[2] = {1, 1};
    return encoder::binary_form(dims, lbs, [&](std::size_t k) -> const E& { return v[k / cols][k % cols]; }, out);
  }
};

/// A 2-D array read row by row (lower bounds dropped, as a vector drops
/// them); the empty array reads as no rows. Any other number of dimensions
/// is errc::dimensions_mismatch.
template <class E>
  requires(detail::traits_detect::grid_element<E> &&
           detail::traits_detect::decodable<typename detail::traits_detect::element_of<E>::type>)
struct field_traits<std::vector<std::vector<E>>> {
  using element = typename detail::traits_detect::element_of<E>::type;
  static constexpr bool binary_results = detail::traits_detect::reads_binary<element>();
  static bool accepts(type_oid t) {
    const type_oid e = array_element_oid(t);
    return e != 0 && detail::traits_detect::accepts<element>(e);
  }
  static std::string cpp_name() { return "std::vector<" + field_traits<std::vector<E>>::cpp_name() + ">"; }
  static std::error_code decode(const field_value& v, std::vector<std::vector<E>>& out) {
    detail::codec::array_items items;
    if (auto ec = detail::traits_detect::split_checked<E>(v, 2, items)) return ec;
    out.clear();
    if (items.dims.empty()) return {};
    const auto rows = static_cast<std::size_t>(items.dims[0]), cols = static_cast<std::size_t>(items.dims[1]);
    out.resize(rows);
    for (std::size_t r = 0; r < rows; ++r)
      if (auto ec = detail::traits_detect::decode_items(items, v.format, r * cols, cols, out[r])) return ec;
    return {};
  }
};

}  // namespace pgpipe
