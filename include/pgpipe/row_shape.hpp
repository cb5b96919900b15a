// The C++ types a row can be read into (result::as<T>, rows_as<T>,
// to_vector<T> and the *_as operations of both drivers), and how their
// fields meet the result's columns:
//
//   a described struct   BOOST_DESCRIBE_STRUCT(user, (), (id, name, email))
//                        by column NAME: every field needs a column of its
//                        name and every column a field (extra, missing or
//                        twice-named columns are errc::columns_mismatch,
//                        each named); the column order does not matter.
//   a std::tuple<A, B>   by POSITION: field i is column i, the counts equal.
//   a plain aggregate    by POSITION through Boost.PFR (struct p { int a;
//                        std::string b; }): no base classes, no references.
//   one field type       (int, std::string, std::optional<T>...): a
//                        one-column result, `to_vector<std::string>()`.
//
// Each field's type is any type with pgpipe::field_traits (type_traits.hpp),
// or std::optional of one: only an std::optional field reads NULL; NULL in
// any other field is errc::null_value naming the row and column.
//
// A result is checked ONCE against T before any row is read: the column
// count, the names (described structs) and every column's type OID against
// its field's C++ type. A type that does not fit is errc::type_mismatch,
// naming the field, the column and both types. Rows then decode without
// further checks.
//
// Thread-safety: stateless.
#pragma once

#include <pgpipe/detail/row_shape_check.hpp>
#include <pgpipe/type_traits.hpp>

#include <boost/describe/members.hpp>
#include <boost/describe/modifiers.hpp>
#include <boost/mp11/algorithm.hpp>
#include <boost/pfr/core.hpp>
#include <boost/pfr/tuple_size.hpp>

#include <array>
#include <concepts>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

namespace pgpipe {

/// How a row type's fields meet a result's columns (see the file comment).
enum class row_kind { none, single_field, described, tuple, aggregate };

namespace detail::row_shape {

template <class M>
struct field_value_of {
  using type = M;
  static constexpr bool nullable = false;
};
template <class V>
struct field_value_of<std::optional<V>> {
  using type = V;
  static constexpr bool nullable = true;
};

/// A type one column can be read into: field_traits, or std::optional of one.
template <class M>
concept readable = traits_detect::decodable<typename field_value_of<M>::type>;

template <class T>
struct is_tuple : std::false_type {};
template <class... E>
struct is_tuple<std::tuple<E...>> : std::true_type {};

template <class T>
constexpr row_kind kind_of() {
  if constexpr (readable<T>) {
    return row_kind::single_field;
  } else if constexpr (boost::describe::has_describe_members<T>::value) {
    return row_kind::described;
  } else if constexpr (is_tuple<T>::value) {
    return row_kind::tuple;
  } else if constexpr (std::is_aggregate_v<T> && std::is_class_v<T>) {
    return row_kind::aggregate;
  } else {
    return row_kind::none;
  }
}

template <class M>
bool member_accepts(type_oid t) {
  return traits_detect::accepts<typename field_value_of<M>::type>(t);
}
template <class M>
std::string member_cpp_name() {
  return cpp_type_name<M>();
}
template <class M>
constexpr member_desc member_of(std::string_view name) {
  static_assert(readable<M>,
                "a field of this row type has no pgpipe::field_traits (nor is an std::optional of such a type)");
  return member_desc{name, &member_accepts<M>, &member_cpp_name<M>};
}

template <class T>
using described_list = boost::describe::describe_members<T, boost::describe::mod_public | boost::describe::mod_inherited>;

template <class T, class D>
using described_type = std::remove_cvref_t<decltype(std::declval<T&>().*D::pointer)>;

template <class T, template <class...> class L, class... D>
constexpr std::array<member_desc, sizeof...(D)> described_members(L<D...>) {
  return {{member_of<described_type<T, D>>(D::name)...}};
}

template <class T, std::size_t... I>
constexpr std::array<member_desc, sizeof...(I)> aggregate_members(std::index_sequence<I...>) {
  return {{member_of<boost::pfr::tuple_element_t<I, T>>({})...}};
}

template <class... E>
constexpr std::array<member_desc, sizeof...(E)> tuple_members(std::tuple<E...>*) {
  return {{member_of<E>({})...}};
}

// Whether every field of a row reads binary results (field_traits'
// binary_results): then a typed read asks the server for binary rows.
template <class M>
constexpr bool member_reads_binary() {
  return traits_detect::reads_binary<typename field_value_of<M>::type>();
}
template <class T, template <class...> class L, class... D>
constexpr bool described_binary(L<D...>) {
  return (member_reads_binary<described_type<T, D>>() && ...);
}
template <class T, std::size_t... I>
constexpr bool aggregate_binary(std::index_sequence<I...>) {
  return (member_reads_binary<boost::pfr::tuple_element_t<I, T>>() && ...);
}
template <class... E>
constexpr bool tuple_binary(std::tuple<E...>*) {
  return (member_reads_binary<E>() && ...);
}

}  // namespace detail::row_shape

/// The kind of row type T is; row_kind::none when it cannot hold a row.
template <class T>
inline constexpr row_kind row_kind_of = detail::row_shape::kind_of<T>();

/// A type a row can be read into (see the file comment).
template <class T>
concept row_type = row_kind_of<T> != row_kind::none && std::default_initializable<T>;

namespace detail {

/// T's fields in the terms of the shape check, and a walk over them in the
/// same order. One specialisation per row_kind.
template <class T, row_kind K = row_kind_of<T>>
struct row_traits;

template <class T>
struct row_traits<T, row_kind::single_field> {
  static constexpr bool by_name = false;
  static constexpr bool binary_results = row_shape::member_reads_binary<T>();
  static constexpr std::array<member_desc, 1> members{{row_shape::member_of<T>({})}};
  template <class F>
  static void for_each(T& t, F&& f) {
    f(std::integral_constant<std::size_t, 0>{}, t);
  }
};

template <class T>
struct row_traits<T, row_kind::described> {
  static constexpr bool by_name = true;
  static constexpr bool binary_results = row_shape::described_binary<T>(row_shape::described_list<T>{});
  static constexpr auto members = row_shape::described_members<T>(row_shape::described_list<T>{});
  template <class F>
  static void for_each(T& t, F&& f) {
    walk(t, f, std::make_index_sequence<boost::mp11::mp_size<row_shape::described_list<T>>::value>{});
  }

 private:
  template <class F, std::size_t... I>
  static void walk(T& t, F& f, std::index_sequence<I...>) {
    (f(std::integral_constant<std::size_t, I>{}, t.*boost::mp11::mp_at_c<row_shape::described_list<T>, I>::pointer),
     ...);
  }
};

template <class T>
struct row_traits<T, row_kind::tuple> {
  static constexpr bool by_name = false;
  static constexpr bool binary_results = row_shape::tuple_binary(static_cast<T*>(nullptr));
  static constexpr auto members = row_shape::tuple_members(static_cast<T*>(nullptr));
  template <class F>
  static void for_each(T& t, F&& f) {
    walk(t, f, std::make_index_sequence<std::tuple_size_v<T>>{});
  }

 private:
  template <class F, std::size_t... I>
  static void walk(T& t, F& f, std::index_sequence<I...>) {
    (f(std::integral_constant<std::size_t, I>{}, std::get<I>(t)), ...);
  }
};

template <class T>
struct row_traits<T, row_kind::aggregate> {
  static constexpr bool by_name = false;
  static constexpr bool binary_results =
      row_shape::aggregate_binary<T>(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
  static constexpr auto members =
      row_shape::aggregate_members<T>(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
  template <class F>
  static void for_each(T& t, F&& f) {
    walk(t, f, std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
  }

 private:
  template <class F, std::size_t... I>
  static void walk(T& t, F& f, std::index_sequence<I...>) {
    (f(std::integral_constant<std::size_t, I>{}, boost::pfr::get<I>(t)), ...);
  }
};

}  // namespace detail
}  // namespace pgpipe
