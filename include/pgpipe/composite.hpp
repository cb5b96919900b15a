// C++ structs mapped to PostgreSQL composite (row) types, both ways
// (parameters and results, both drivers, text and binary). A described
// struct opts in with one line:
//
//   // create type address as (street text, zip int, note text);
//   struct address {
//     std::string street;
//     int zip = 0;
//     std::optional<std::string> note;
//   };
//   BOOST_DESCRIBE_STRUCT(address, (), (street, zip, note))
//   template <>
//   struct pgpipe::is_composite<address> : std::true_type {};
//
//   address a = r[0].get<address>("home");                      // a column of type address
//   pool.exec("insert into people(home) values ($1::address)", a);  // a parameter
//
// Fields go by position: the struct's described members, in order, are the
// composite's attributes, in order (the names are for messages). A member
// may be any type pgpipe reads and sends: std::optional<T> (the only one
// that takes NULL), another composite (nested), std::vector<T> and
// std::vector<C> (an array of composites: `address[]`), enums...
//
// Reading checks what the value says about itself: the number of fields
// (both formats) and, in binary, each field's type OID when it is a
// built-in type (a user type's OID, an enum or a nested composite, is
// server-assigned: it is checked by the member's own decoder). A mismatch
// is errc::type_mismatch, a NULL into a non-optional member
// errc::null_value, a field's own failure that field's code; the message
// names the field (position and name) and both types. A composite reads
// from a column of a user-defined type or of the anonymous `record` type
// (`select row(1, 'a')`); a std::vector of it reads an array of either
// (`record[]`: `select array(select row(...) from ...)`).
//
// As a parameter a composite is sent in the text record form
// `("a","b c",,"x""y")`, every non-NULL field quoted, with no type: the
// statement names the type (`$1::address`, or a column it is assigned to).
//
// std::string_view members are refused at compile time: a field that
// needed unquoting lives only as long as the decode.
//
// Thread-safety: stateless.
#pragma once

#include <pgpipe/error.hpp>
#include <pgpipe/type_traits.hpp>
#include <pgpipe/types.hpp>
#include <pgpipe/detail/codec_composite.hpp>
#include <pgpipe/detail/value_note.hpp>

#include <boost/describe/members.hpp>
#include <boost/mp11/algorithm.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

namespace pgpipe {

/// Specialise as std::true_type for a described struct to map it to a
/// composite type (see the file comment).
template <class T>
struct is_composite : std::false_type {};

namespace detail::composites {

template <class T>
using members = boost::describe::describe_members<T, boost::describe::mod_public>;

template <class T>
concept declared = is_composite<T>::value && boost::describe::has_describe_members<T>::value;

/// The anonymous row type (`select row(1, 'a')`), which has no type of its own.
inline constexpr type_oid record_oid = oids::record;

template <class M>
using member_type = std::remove_cvref_t<M>;

template <class V>
inline constexpr bool is_view =
    std::is_same_v<V, std::string_view> || std::is_same_v<V, std::optional<std::string_view>>;

/// Decodes one field into `out` (a member of type V); on failure leaves the
/// note for `whole` (the composite's bytes) naming the field.
template <class V>
std::error_code decode_field_into(const codec::record_fields::field& f, wire_format format, std::size_t i,
                                  std::string_view name, std::string_view whole, V& out) {
  using inner = typename std::conditional_t<text_conv::is_optional_v<V>, V, std::optional<V>>::value_type;
  auto fail = [&](errc code, std::string why) {
    leave_value_note(whole, "composite field " + std::to_string(i) + " (\"" + std::string(name) + "\") " +
                                std::move(why));
    return make_error_code(code);
  };
  if (!f.value) {
    if constexpr (text_conv::is_optional_v<V>) {
      out.reset();
      return {};
    } else {
      return fail(errc::null_value, "is NULL, read as " + traits_detect::cpp_name<inner>() +
                                        " (only std::optional takes NULL)");
    }
  }
  // Binary fields carry their type; a built-in one is checked here, a user
  // type's (server-assigned) by the member's own decoder. Text fields carry
  // none: each is read as the type its member would be sent as.
  type_oid type = f.type;
  if (format == wire_format::binary) {
    if (type < oids::first_user_oid && !traits_detect::accepts<inner>(type))
      return fail(errc::type_mismatch, "is " + type_name_of(type) + ", read as " + traits_detect::cpp_name<inner>());
  } else if constexpr (traits_detect::encodable<inner>) {
    type = traits_detect::oid_of<param_traits<inner>>();
  }
  inner x{};
  if (auto ec = traits_detect::decode_value(field_value{*f.value, type, format}, x)) {
    std::string why = take_value_note(*f.value);
    if (why.empty()) {
      why = "read as " + traits_detect::cpp_name<inner>() + ": " + ec.message();
      if (ec == errc::conversion_error && format == wire_format::text)
        why += " (text \"" + std::string(f.value->substr(0, 40)) + (f.value->size() > 40 ? "...\")" : "\")");
    }
    leave_value_note(whole, "composite field " + std::to_string(i) + " (\"" + std::string(name) + "\"): " + why);
    return ec;
  }
  out = std::move(x);
  return {};
}

// Whether every member reads binary results (field_traits' binary_results).
template <class T, template <class...> class L, class... D>
constexpr bool members_read_binary(L<D...>*) {
  return (traits_detect::reads_binary<typename std::conditional_t<
              text_conv::is_optional_v<member_type<decltype(std::declval<T&>().*D::pointer)>>,
              member_type<decltype(std::declval<T&>().*D::pointer)>,
              std::optional<member_type<decltype(std::declval<T&>().*D::pointer)>>>::value_type>() &&
          ...);
}

}  // namespace detail::composites

/// A composite parameter: its text record form, untyped (the statement
/// names the type). Throws pgpipe::error(errc::invalid_argument) when a
/// field cannot be encoded (as that field's own parameter would).
template <detail::composites::declared T>
struct param_traits<T> {
  /// `("a","b c",,"x""y")`: every non-NULL field quoted, NULL as nothing.
  static std::optional<std::string> encode(const T& v) {
    std::string s(1, '(');
    bool first = true;
    boost::mp11::mp_for_each<detail::composites::members<T>>([&](auto d) {
      if (!first) s.push_back(',');
      first = false;
      detail::codec::append_record_text_field(s, detail::encode_param(v.*d.pointer));
    });
    s.push_back(')');
    return s;
  }
};

/// A composite read from a column of a user-defined type (or `record`),
/// text or binary.
template <detail::composites::declared T>
struct field_traits<T> {
  /// Number of attributes the C++ struct declares.
  static constexpr std::size_t size = boost::mp11::mp_size<detail::composites::members<T>>::value;
  static_assert(size > 0, "a composite struct needs at least one described public member");

  /// A user-defined type, the anonymous record type, or 0 (the element of
  /// an array of a user type in text format, which names no element type).
  static bool accepts(type_oid t) { return t >= oids::first_user_oid || t == detail::composites::record_oid || t == 0; }
  /// Arrays of composites have user-defined array types pgpipe cannot look
  /// up: std::vector<T> reads them (see builtin_traits_containers.hpp).
  static constexpr bool reads_user_arrays = true;
  /// Typed reads ask for binary rows when every member reads binary (a
  /// std::string member keeps the row in text).
  static constexpr bool binary_results =
      detail::composites::members_read_binary<T>(static_cast<detail::composites::members<T>*>(nullptr));
  /// "composite(street, zip, note)": the members, for messages.
  static std::string cpp_name() {
    std::string s = "composite(";
    bool first = true;
    boost::mp11::mp_for_each<detail::composites::members<T>>([&](auto d) {
      if (!first) s += ", ";
      first = false;
      s += d.name;
    });
    return s + ")";
  }
  /// Text or binary. Errors: conversion_error for a malformed value;
  /// type_mismatch when the field count differs or a binary field's
  /// built-in type cannot be read as its member; null_value for NULL into a
  /// non-optional member; a field's own code when it fails. The message
  /// (where the error is described) names the field.
  static std::error_code decode(const field_value& v, T& out) {
    detail::codec::record_fields parts;
    auto ec = v.format == wire_format::text ? detail::codec::split_record_text(v.data, parts)
                                            : detail::codec::split_record_binary(v.data, parts);
    if (ec) return ec;
    if (parts.fields.size() != size) {
      detail::leave_value_note(v.data, "the composite has " + std::to_string(parts.fields.size()) +
                                           " field(s), " + cpp_name() + " has " + std::to_string(size));
      return make_error_code(errc::type_mismatch);
    }
    std::size_t i = 0;
    boost::mp11::mp_for_each<detail::composites::members<T>>([&](auto d) {
      if (ec) return;
      using V = detail::composites::member_type<decltype(out.*d.pointer)>;
      static_assert(!detail::composites::is_view<V>, "a composite member cannot be a std::string_view");
      ec = detail::composites::decode_field_into(parts.fields[i], v.format, i, d.name, v.data, out.*d.pointer);
      ++i;
    });
    return ec;
  }
};

}  // namespace pgpipe
