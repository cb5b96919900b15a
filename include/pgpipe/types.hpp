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
inline constexpr type_oid bool_ = 16;  ///< bool
inline constexpr type_oid bytea = 17;  ///< bytea
inline constexpr type_oid char_ = 18;  ///< char
inline constexpr type_oid name = 19;  ///< name
inline constexpr type_oid int8 = 20;  ///< int8
inline constexpr type_oid int2 = 21;  ///< int2
inline constexpr type_oid int4 = 23;  ///< int4
inline constexpr type_oid text = 25;  ///< text
inline constexpr type_oid oid = 26;  ///< oid
inline constexpr type_oid json = 114;  ///< json
inline constexpr type_oid float4 = 700;  ///< float4
inline constexpr type_oid float8 = 701;  ///< float8
inline constexpr type_oid unknown = 705;  ///< unknown
inline constexpr type_oid bpchar = 1042;  ///< bpchar
inline constexpr type_oid varchar = 1043;  ///< varchar
inline constexpr type_oid date = 1082;  ///< date
inline constexpr type_oid time = 1083;  ///< time
inline constexpr type_oid timestamp = 1114;  ///< timestamp
inline constexpr type_oid timestamptz = 1184;  ///< timestamptz
inline constexpr type_oid interval = 1186;  ///< interval
inline constexpr type_oid numeric = 1700;  ///< numeric
inline constexpr type_oid uuid = 2950;  ///< uuid
inline constexpr type_oid jsonb = 3802;  ///< jsonb
// Arrays of the above.
inline constexpr type_oid bool_array = 1000;  ///< bool[]
inline constexpr type_oid bytea_array = 1001;  ///< bytea[]
inline constexpr type_oid char_array = 1002;  ///< char[]
inline constexpr type_oid name_array = 1003;  ///< name[]
inline constexpr type_oid int2_array = 1005;  ///< int2[]
inline constexpr type_oid int4_array = 1007;  ///< int4[]
inline constexpr type_oid text_array = 1009;  ///< text[]
inline constexpr type_oid bpchar_array = 1014;  ///< bpchar[]
inline constexpr type_oid varchar_array = 1015;  ///< varchar[]
inline constexpr type_oid int8_array = 1016;  ///< int8[]
inline constexpr type_oid float4_array = 1021;  ///< float4[]
inline constexpr type_oid float8_array = 1022;  ///< float8[]
inline constexpr type_oid oid_array = 1028;  ///< oid[]
inline constexpr type_oid timestamp_array = 1115;  ///< timestamp[]
inline constexpr type_oid date_array = 1182;  ///< date[]
inline constexpr type_oid time_array = 1183;  ///< time[]
inline constexpr type_oid timestamptz_array = 1185;  ///< timestamptz[]
inline constexpr type_oid interval_array = 1187;  ///< interval[]
inline constexpr type_oid numeric_array = 1231;  ///< numeric[]
inline constexpr type_oid json_array = 199;  ///< json[]
inline constexpr type_oid uuid_array = 2951;  ///< uuid[]
inline constexpr type_oid jsonb_array = 3807;  ///< jsonb[]
inline constexpr type_oid record = 2249;  ///< record: an anonymous row value, row(...)
inline constexpr type_oid record_array = 2287;  ///< record[]: array(select row(...) ...)
// Ranges of the numeric and time types, their arrays, and (PostgreSQL 14+)
// their multiranges.
inline constexpr type_oid int4range = 3904;  ///< int4range
inline constexpr type_oid numrange = 3906;  ///< numrange
inline constexpr type_oid tsrange = 3908;  ///< tsrange
inline constexpr type_oid tstzrange = 3910;  ///< tstzrange
inline constexpr type_oid daterange = 3912;  ///< daterange
inline constexpr type_oid int8range = 3926;  ///< int8range
inline constexpr type_oid int4range_array = 3905;  ///< int4range[]
inline constexpr type_oid numrange_array = 3907;  ///< numrange[]
inline constexpr type_oid tsrange_array = 3909;  ///< tsrange[]
inline constexpr type_oid tstzrange_array = 3911;  ///< tstzrange[]
inline constexpr type_oid daterange_array = 3913;  ///< daterange[]
inline constexpr type_oid int8range_array = 3927;  ///< int8range[]
inline constexpr type_oid int4multirange = 4451;  ///< int4multirange
inline constexpr type_oid nummultirange = 4532;  ///< nummultirange
inline constexpr type_oid tsmultirange = 4533;  ///< tsmultirange
inline constexpr type_oid tstzmultirange = 4534;  ///< tstzmultirange
inline constexpr type_oid datemultirange = 4535;  ///< datemultirange
inline constexpr type_oid int8multirange = 4536;  ///< int8multirange
/// OIDs from here up belong to user-defined types (enums, domains, composites).
inline constexpr type_oid first_user_oid = 16384;
}  // namespace oids

/// The element type of a built-in array type, or 0 when `array` is not one.
type_oid array_element_oid(type_oid array) noexcept;
/// The array type of a built-in element type, or 0 when it has none here.
type_oid array_oid_of(type_oid element) noexcept;
/// The range type over a built-in subtype (int4 -> int4range), or 0.
constexpr type_oid range_oid_of(type_oid subtype) noexcept {
  switch (subtype) {
    case oids::int4: return oids::int4range;
    case oids::int8: return oids::int8range;
    case oids::numeric: return oids::numrange;
    case oids::timestamp: return oids::tsrange;
    case oids::timestamptz: return oids::tstzrange;
    case oids::date: return oids::daterange;
    default: return 0;
  }
}
/// The subtype of a built-in range type (int4range -> int4), or 0.
constexpr type_oid range_subtype_oid(type_oid range) noexcept {
  for (type_oid s : {oids::int4, oids::int8, oids::numeric, oids::timestamp, oids::timestamptz, oids::date})
    if (range != 0 && range_oid_of(s) == range) return s;
  return 0;
}
/// The range type of a built-in multirange type (int4multirange -> int4range), or 0.
constexpr type_oid multirange_range_oid(type_oid multirange) noexcept {
  switch (multirange) {
    case oids::int4multirange: return oids::int4range;
    case oids::int8multirange: return oids::int8range;
    case oids::nummultirange: return oids::numrange;
    case oids::tsmultirange: return oids::tsrange;
    case oids::tstzmultirange: return oids::tstzrange;
    case oids::datemultirange: return oids::daterange;
    default: return 0;
  }
}
/// The multirange type of a built-in range type (int4range -> int4multirange), or 0.
constexpr type_oid multirange_oid_of(type_oid range) noexcept {
  for (type_oid m : {oids::int4multirange, oids::int8multirange, oids::nummultirange, oids::tsmultirange,
                     oids::tstzmultirange, oids::datemultirange})
    if (range != 0 && multirange_range_oid(m) == range) return m;
  return 0;
}
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

  /// Not a number ('NaN').
  bool is_nan() const noexcept { return text_ == "NaN"; }
  /// 'Infinity' or '-Infinity'.
  bool is_infinity() const noexcept { return text_ == "Infinity" || text_ == "-Infinity"; }
  /// Neither NaN nor an infinity.
  bool is_finite() const noexcept { return !is_nan() && !is_infinity(); }
  /// Below zero ('-Infinity' included).
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
  /// Throwing form of to_int64().
  std::int64_t as_int64() const;

  /// Compares the canonical text (see str()), not the numeric value.
  friend bool operator==(const numeric&, const numeric&) = default;

 private:
  std::string text_ = "0";
};

/// A PostgreSQL interval: months, days and microseconds are separate because
/// their lengths vary (a month is 28-31 days, a day 23-25 hours across a DST
/// change). pgpipe never folds them into one duration.
struct interval {
  std::int32_t months = 0;        ///< whole months (a year is 12)
  std::int32_t days = 0;          ///< whole days
  std::int64_t microseconds = 0;  ///< the time part
  /// Field by field: 1 month is not 30 days (the server says they are equal).
  friend bool operator==(const interval&, const interval&) = default;
};

}  // namespace pgpipe
