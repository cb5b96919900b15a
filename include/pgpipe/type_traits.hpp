// pgpipe's customisation points: how a C++ type becomes a query parameter
// (param_traits) and how a result field becomes a C++ value (field_traits).
// Both drivers use them: async_client / lease parameters and field::get<T>(),
// blocking_pool::exec parameters and pgpipe::get<T>(pqxx::field).
//
// Built-in mappings (see README "Types"):
//   bool, integers (range-checked), float, double      bool, int2/int4/int8, oid, float4/float8
//   std::string, std::string_view                      text, varchar, char, name, enum, domain...
//   std::vector<std::byte>, std::span<const std::byte> bytea (span: parameters only)
//   boost::uuids::uuid                                 uuid
//   std::chrono::sys_time<microseconds>                timestamptz (any system_clock point as a parameter)
//   std::chrono::local_time<microseconds>              timestamp
//   std::chrono::sys_days, std::chrono::year_month_day date
//   std::chrono::hh_mm_ss<microseconds>, microseconds  time (microseconds: results only, a duration
//                                                      parameter would be ambiguous with interval)
//   pgpipe::interval                                   interval
//   pgpipe::numeric                                    numeric
//   boost::json::value                                 json, jsonb
//   std::vector<T>, std::vector<std::optional<T>>      one-dimensional arrays of the above; multiranges
//   std::vector<std::vector<T>>                        rectangular two-dimensional arrays
//   pgpipe::array<T> (pgpipe/array.hpp)                arrays of any dimension, with lower bounds
//   pgpipe::range<T> (pgpipe/range.hpp)                int4/int8/num/ts/tstz/date ranges
//   (a domain reads and is sent as its base type)
//   std::optional<T>, std::nullopt, nullptr            NULL
//
// ---- param_traits<T> ----------------------------------------------------
// Required:
//   static std::optional<std::string> encode(const T& v);
//       The text form; std::nullopt for SQL NULL. Used inside text array
//       literals and, by both drivers, when there is no binary form.
// Optional:
//   static constexpr type_oid oid = ...;
//       The type sent with the parameter. Absent or 0: the server infers it
//       from the statement (what text parameters always did).
//   static std::error_code encode_binary(const T& v, std::string& out);
//       The binary form, appended to `out` (requires oid). Both drivers send
//       the parameter in binary when this exists (one encoder serves both).
//
// ---- field_traits<T> ----------------------------------------------------
// Required, one of:
//   static std::error_code decode(const field_value& v, T& out);
//   static std::error_code decode(std::string_view text, T& out);   // text format only
//       Empty error_code on success; errc::conversion_error when the bytes
//       are not a valid value, errc::out_of_range when the value does not
//       fit T. NULL never reaches decode (std::optional<T> or errc::null_value).
// Optional:
//   static bool accepts(type_oid t);
//       Whether T may be read from a column of type t. When it says no, the
//       read fails with errc::type_mismatch naming the column, the
//       PostgreSQL type and cpp_name(). Absent: any column type.
//   static std::string cpp_name();   // for messages; absent: "a user type"
//   static constexpr bool binary_results = true;
//       decode reads the binary form of every column type accepts() lets
//       through. Typed reads (async_query_as, blocking_pool::query_as...)
//       ask the server for binary values when every field of the row says
//       so (query_options::results, result_format::automatic). Absent or
//       false: such rows arrive in text.
//
// Thread-safety: all of this is stateless.
#pragma once

#include <pgpipe/error.hpp>
#include <pgpipe/types.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace pgpipe {

/// Text (0) or binary (1), as in libpq's format arguments.
enum class wire_format : int { text = 0, binary = 1 };

/// One non-NULL value as the server sent it: its bytes, its column's type
/// and the format. `data` is a view into the result.
struct field_value {
  std::string_view data;                   ///< the value's bytes (never NULL: that is std::nullopt)
  type_oid type = 0;                        ///< its column's type OID
  wire_format format = wire_format::text;  ///< how `data` is encoded
};

/// How a C++ value becomes a query parameter. Specialise for your own types
/// (see the contract above and examples/custom_types.cpp).
template <class T, class Enable = void>
struct param_traits;

/// How a result field becomes a C++ value. Specialise for your own types.
template <class T, class Enable = void>
struct field_traits;

}  // namespace pgpipe

#include <pgpipe/detail/builtin_traits.hpp>
#include <pgpipe/detail/builtin_traits_time.hpp>
#include <pgpipe/detail/builtin_traits_containers.hpp>
#include <pgpipe/detail/traits_dispatch.hpp>
