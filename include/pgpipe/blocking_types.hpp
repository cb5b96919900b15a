// pgpipe's value types on the blocking driver: the same C++ types as the async
// driver, through pgpipe's own traits rather than libpqxx string_traits.
//
// Reading: pgpipe::get<T>(field) converts a pqxx::field (libpqxx 8: also
// the pqxx::field_ref that row[i] returns) with the same
// field_traits, the same type check (errc::type_mismatch naming the column,
// the PostgreSQL type and the C++ type) and the same errors as
// pgpipe::field::get<T>(). A pqxx::field is read as text: libpqxx asks for
// text results in every version.
//
//   pool.transaction([&](pqxx::work& tx) {
//     pqxx::result r = tx.exec_params("select id, created from t where id = $1", pgpipe::pqxx_arg(id));
//     auto back = pgpipe::get<boost::uuids::uuid>(r[0][0]);
//     auto created = pgpipe::get<std::chrono::sys_time<std::chrono::microseconds>>(r[0]["created"]);
//   });
// (blocking_pool::exec and blocking_lease::exec return a pgpipe::result,
// read with its own get<T>, as in the async driver.)
//
// Parameters: blocking_pool::exec encodes its arguments as the async driver
// does; inside your own pqxx transactions, wrap them with pqxx_arg():
//   tx.exec_params("insert into t values ($1, $2)", pgpipe::pqxx_arg(id), pgpipe::pqxx_arg(bytes));
// (libpqxx 7.10 and later: tx.exec("...", pqxx::params{pgpipe::pqxx_arg(id), ...})).
// bytea goes as a binary parameter (pqxx::binarystring with libpqxx 6.4, a
// view of std::byte from 7 on: any byte, NUL included; an std::optional of bytes goes as hex text, which also carries
// any byte); every other pgpipe type goes as its text form with no type, for
// the server to infer, as libpqxx does for its own types. Types libpqxx
// already converts the same way (numbers, bool, strings) pass through.
//
// Thread-safety: stateless.
#pragma once

#include <pgpipe/error.hpp>
#include <pgpipe/type_traits.hpp>

#include <pgpipe/detail/pqxx_compat.hpp>
#include <pgpipe/detail/value_note.hpp>

#include <pqxx/field>
#include <pqxx/row>

#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace pgpipe {

namespace detail {
// One reading for every libpqxx field class: pqxx::field, and from libpqxx 8
// the pqxx::field_ref that row[i] returns. Both have is_null(), c_str(),
// size(), type() and name().
template <class T, class F>
T get_pqxx_field(const F& f, std::error_code& ec) {
  std::optional<field_value> v;
  if (!f.is_null())
    v = field_value{std::string_view(f.c_str(), f.size()), static_cast<type_oid>(f.type()), wire_format::text};
  T out{};
  ec = decode_field(v, out);
  if (ec) return T{};
  return out;
}

template <class T, class F>
T get_pqxx_field(const F& f, std::size_t column) {
  std::error_code ec;
  T v = get_pqxx_field<T>(f, ec);
  if (ec) {
    // std::system_error appends ec.message() to this.
    std::string m = "column " + std::to_string(column) + " (\"" + std::string(f.name()) + "\"), type " +
                    type_name_of(static_cast<type_oid>(f.type())) + ", read as " + cpp_type_name<T>();
    // Which part of a value made of values failed (a composite's field).
    if (!f.is_null())
      if (std::string note = take_value_note(std::string_view(f.c_str(), f.size())); !note.empty()) m += ", " + note;
    throw error(ec, m);
  }
  return v;
}
}  // namespace detail

/// Converts a libpqxx field; on failure sets ec and returns T{}.
template <class T>
T get(const pqxx::field& f, std::error_code& ec) {
  return detail::get_pqxx_field<T>(f, ec);
}

/// Converts a libpqxx field; throws pgpipe::error (type_mismatch,
/// conversion_error, out_of_range, null_value) naming the column and types.
template <class T>
T get(const pqxx::field& f) {
  return detail::get_pqxx_field<T>(f, detail::pqxx_column_number(f));
}

#if PQXX_VERSION_MAJOR >= 8
/// libpqxx 8: `row[i]` is a pqxx::field_ref (a pqxx::field no longer binds to
/// it); the same conversions and errors as for a pqxx::field.
///@{
template <class T>
T get(const pqxx::field_ref& f, std::error_code& ec) {
  return detail::get_pqxx_field<T>(f, ec);
}
template <class T>
T get(const pqxx::field_ref& f) {
  return detail::get_pqxx_field<T>(f, static_cast<std::size_t>(f.column_number()));
}
///@}
#endif

namespace detail {
template <class D>
inline constexpr bool pqxx_native_v =
    std::is_arithmetic_v<D> || std::is_same_v<D, std::string> || std::is_same_v<D, const char*> ||
    std::is_same_v<D, char*> || (std::is_array_v<D> && std::is_same_v<std::remove_extent_t<D>, char>);
template <class D>
struct pqxx_native : std::bool_constant<pqxx_native_v<D>> {};
template <class D>
struct pqxx_native<std::optional<D>> : std::bool_constant<pqxx_native_v<D>> {};

template <class D>
inline constexpr bool is_bytes_v = std::is_same_v<D, std::vector<std::byte>> || std::is_same_v<D, std::span<const std::byte>>;
}  // namespace detail

/// An argument for libpqxx's exec_params / exec_prepared (see above).
template <class T>
decltype(auto) pqxx_arg(T&& v) {
  using D = std::remove_cvref_t<T>;
  if constexpr (detail::is_bytes_v<D>) {
    return detail::pqxx_bytes(v.data(), v.size());
  } else if constexpr (detail::pqxx_native<D>::value || !detail::traits_detect::encodable<D>) {
    return std::forward<T>(v);
  } else {
    return detail::encode_param(v);  // std::optional<std::string>: the text form, or NULL
  }
}

}  // namespace pgpipe
