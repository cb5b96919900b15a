// Value types for PostgreSQL types that have no exact standard C++ match:
// pgpipe::numeric (arbitrary precision decimal) and pgpipe::interval
// (months, days and microseconds kept apart, as the server keeps them), plus
// the type OIDs pgpipe knows by name.
//
// Thread-safety: plain values.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

namespace pgpipe {

/// A PostgreSQL type OID (libpq's Oid, without including libpq).
using type_oid = std::uint32_t;

/// Built-in type OIDs (pg_type.dat; stable across server versions).
namespace oids {
inline constexpr type_oid bool_ = 16, bytea = 17, char_ = 18, name = 19, int8 = 20, int2 = 21, int4 = 23,
                          text = 25, oid = 26, json = 114, float4 = 700, float8 = 701, unknown = 705,
                          bpchar = 1042, varchar = 1043, date = 1082, time = 1083, timestamp = 1114,
                          timestamptz = 1184, interval = 1186, numeric = 1700, uuid = 2950, jsonb = 3802;
// Arrays of the above.
inline constexpr type_oid bool_array = 1000, bytea_array = 1001, char_array = 1002, name_array = 1003,
                          int2_array = 1005, int4_array = 1007, text_array = 1009, bpchar_array = 1014,
                          varchar_array = 1015, int8_array = 1016, float4_array = 1021, float8_array = 1022,
                          oid_array = 1028, timestamp_array = 1115, date_array = 1182, time_array = 1183,
                          timestamptz_array = 1185, interval_array = 1187, numeric_array = 1231, json_array = 199,
                          uuid_array = 2951, jsonb_array = 3807;
/// OIDs from here up belong to user-defined types (enums, domains, composites).
inline constexpr type_oid first_user_oid = 16384;
}  // namespace oids

/// The element type of a built-in array type, or 0 when `array` is not one.
type_oid array_element_oid(type_oid array) noexcept;
/// The array type of a built-in element type, or 0 when it has none here.
type_oid array_oid_of(type_oid element) noexcept;
/// "int4", "timestamptz", "text[]"... or "oid 16390" for a type pgpipe does not know.
std::string type_name_of(type_oid t);

/// An exact decimal, as PostgreSQL's numeric: every digit kept, plus NaN and
/// +/-Infinity. Stored as its canonical text ("-12.3400", "NaN", "Infinity",
/// "-Infinity"); the scale (digits after the point) is preserved, so 1.50 and
/// 1.5 are distinct values here (as their text differs on the server too).
class numeric {
 public:
  numeric() = default;  ///< zero
  /// Parses decimal text: [+-]digits[.digits][e[+-]digits], NaN, [+-]Infinity
  /// (case-insensitive). Throws pgpipe::error(errc::conversion_error) on junk.
  explicit numeric(std::string_view text);
  /// Exact for every integer.
  explicit numeric(std::int64_t v);

  /// Like the constructor, without throwing: conversion_error on junk.
  static std::error_code parse(std::string_view text, numeric& out);

  bool is_nan() const noexcept { return text_ == "NaN"; }
  bool is_infinity() const noexcept { return text_ == "Infinity" || text_ == "-Infinity"; }
  bool is_finite() const noexcept { return !is_nan() && !is_infinity(); }
  bool is_negative() const noexcept { return !text_.empty() && text_[0] == '-'; }

  /// The canonical text (what the server prints for the same value).
  const std::string& str() const noexcept { return text_; }

  /// The nearest double. NaN and the infinities map to their doubles; a
  /// finite value beyond double's range is errc::out_of_range rather than a
  /// silent infinity. Digits beyond double's precision are rounded (that is
  /// what asking for a double means).
  std::error_code to_double(double& out) const;
  /// The exact integer: errc::out_of_range when the value has a nonzero
  /// fraction, is not finite, or does not fit (never rounded or truncated).
  std::error_code to_int64(std::int64_t& out) const;
  /// Throwing forms of the two above (pgpipe::error).
  double as_double() const;
  std::int64_t as_int64() const;

  friend bool operator==(const numeric&, const numeric&) = default;

 private:
  std::string text_ = "0";
};

/// A PostgreSQL interval: months, days and microseconds are separate because
/// their lengths vary (a month is 28-31 days, a day 23-25 hours across a DST
/// change). pgpipe never folds them into one duration.
struct interval {
  std::int32_t months = 0;
  std::int32_t days = 0;
  std::int64_t microseconds = 0;
  friend bool operator==(const interval&, const interval&) = default;
};

}  // namespace pgpipe
