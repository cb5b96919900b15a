// The issue-12 types on the blocking driver: the same C++ types as the async
// driver, through pgpipe's own traits rather than libpqxx string_traits.
//
// Reading: pgpipe::get<T>(field) converts a pqxx::field with the same
// field_traits, the same type check (errc::type_mismatch naming the column,
// the PostgreSQL type and the C++ type) and the same errors as
// pgpipe::field::get<T>(). libpqxx 6.4 results are text format.
//
//   pqxx::result r = pool.exec("select id, created, doc from t where id = $1", id);
//   auto id = pgpipe::get<boost::uuids::uuid>(r[0][0]);
//   auto created = pgpipe::get<std::chrono::sys_time<std::chrono::microseconds>>(r[0]["created"]);
//
// Parameters: blocking_pool::exec converts its arguments with pqxx_arg();
// inside your own pqxx transactions, wrap them yourself:
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

/// Converts a libpqxx field; on failure sets ec and returns T{}.
template <class T>
T get(const pqxx::field& f, std::error_code& ec) {
  std::optional<field_value> v;
  if (!f.is_null())
    v = field_value{std::string_view(f.c_str(), f.size()), static_cast<type_oid>(f.type()), wire_format::text};
  T out{};
  ec = detail::decode_field(v, out);
  if (ec) return T{};
  return out;
}

/// Converts a libpqxx field; throws pgpipe::error (type_mismatch,
/// conversion_error, out_of_range, null_value) naming the column and types.
template <class T>
T get(const pqxx::field& f) {
  std::error_code ec;
  T v = get<T>(f, ec);
  if (ec) {
    // std::system_error appends ec.message() to this.
    throw error(ec, "column " + std::to_string(detail::pqxx_column_number(f)) + " (\"" + std::string(f.name()) + "\"), type " +
                        type_name_of(static_cast<type_oid>(f.type())) + ", read as " + detail::cpp_type_name<T>());
  }
  return v;
}

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
