// C++ enums mapped to PostgreSQL enums by label, both ways (parameters and
// results, both drivers). Include this header wherever such an enum is sent
// or read (an enum without it has no traits: a compile error, never a
// misread). Two ways to declare the labels:
//
//   // 1. Boost.Describe: each enumerator's name is its label.
//   enum class color { red, green };
//   BOOST_DESCRIBE_ENUM(color, red, green)
//
//   // 2. Any labels (quotes, spaces, non-ASCII), a specialisation:
//   enum class mood { sad, ok, happy };
//   template <>
//   struct pgpipe::enum_labels<mood> {
//     static constexpr std::pair<mood, std::string_view> labels[] = {
//         {mood::sad, "sad"}, {mood::ok, "it's ok"}, {mood::happy, "vui vẻ"}};
//   };
//
// A declared enum reads from a column of a user-defined type (the server's
// enums have OIDs of their own) or of a text type, in text or binary format
// (an enum's binary form is its label). A label the declaration does not
// list is errc::conversion_error naming the text. As a parameter it is sent
// as its label with no type, so the server infers the enum from the
// statement (`insert into t(m) values ($1)`, `$1::mood`); an enumerator with
// no label (a value cast from an integer) cannot be sent: the call taking
// the parameter throws pgpipe::error(errc::invalid_argument).
//
// Thread-safety: stateless.
#pragma once

#include <pgpipe/error.hpp>
#include <pgpipe/type_traits.hpp>
#include <pgpipe/types.hpp>

#include <boost/describe/enum.hpp>
#include <boost/describe/enumerators.hpp>
#include <boost/mp11/algorithm.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

namespace pgpipe {

/// The labels of enum E: specialise with a static array `labels` of
/// std::pair<E, std::string_view> (see the file comment). Unspecialised, a
/// Boost.Describe'd enum's enumerator names are its labels.
template <class E>
struct enum_labels;

namespace detail::enums {

template <class E>
concept has_label_table = requires { enum_labels<E>::labels; };
template <class E>
concept described = std::is_enum_v<E> && boost::describe::has_describe_enumerators<E>::value;
/// An enum pgpipe maps by label.
template <class E>
concept labelled = std::is_enum_v<E> && (has_label_table<E> || described<E>);

template <class E>
std::optional<std::string_view> label_of(E v) {
  std::optional<std::string_view> out;
  if constexpr (has_label_table<E>) {
    for (const auto& [e, l] : enum_labels<E>::labels)
      if (e == v) return l;
  } else {
    boost::mp11::mp_for_each<boost::describe::describe_enumerators<E>>([&](auto d) {
      if (!out && d.value == v) out = std::string_view(d.name);
    });
  }
  return out;
}

template <class E>
bool value_of(std::string_view label, E& out) {
  bool found = false;
  if constexpr (has_label_table<E>) {
    for (const auto& [e, l] : enum_labels<E>::labels)
      if (l == label) {
        out = e;
        return true;
      }
  } else {
    boost::mp11::mp_for_each<boost::describe::describe_enumerators<E>>([&](auto d) {
      if (!found && label == d.name) {
        out = d.value;
        found = true;
      }
    });
  }
  return found;
}

}  // namespace detail::enums

/// A labelled enum as a parameter: its label, sent untyped so that the
/// server infers the enum type from the statement.
template <detail::enums::labelled E>
struct param_traits<E> {
  /// The label; an enumerator without one cannot be sent.
  static std::optional<std::string> encode(E v) {
    auto l = detail::enums::label_of(v);
    if (!l) throw error(errc::invalid_argument, "an enum value with no label cannot be sent: " +
                                                    std::to_string(static_cast<long long>(v)));
    return std::string(*l);
  }
};

/// A labelled enum read from a column of the server's enum type (or text):
/// by label; a label the C++ side does not list is errc::conversion_error.
template <detail::enums::labelled E>
struct field_traits<E> {
  /// An enum's binary form is its label, so binary results read as text ones.
  static constexpr bool binary_results = true;
  /// A user-defined type (the server's enums) or a text type.
  static bool accepts(type_oid t) {
    return t >= oids::first_user_oid || t == oids::text || t == oids::varchar || t == oids::name ||
           t == oids::bpchar || t == oids::unknown;
  }
  /// What a type-mismatch message calls the C++ type.
  static std::string cpp_name() { return "a labelled enum"; }
  /// Text and binary forms are both the label.
  static std::error_code decode(const field_value& v, E& out) {
    if (!detail::enums::value_of(v.data, out)) return make_error_code(errc::conversion_error);
    return {};
  }
};

}  // namespace pgpipe
