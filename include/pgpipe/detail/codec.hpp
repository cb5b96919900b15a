// Sans-IO codecs for PostgreSQL's text and binary wire formats, behind
// pgpipe/type_traits.hpp. Every decoder takes the exact bytes of one value,
// never reads past them, and answers errc::conversion_error (or
// errc::out_of_range for a well-formed value C++ cannot hold) instead of
// guessing. Compiled in src/core/codec_*.cpp; fuzzed by
// tests/fuzz/type_decoders_fuzz.cpp. Users must not rely on this header.
#pragma once

#include <pgpipe/types.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace boost::json {
class value;
}

namespace pgpipe::detail::codec {

// ---- big-endian helpers (binary format is network byte order) -----------

inline std::uint64_t load_be(const char* p, std::size_t n) noexcept {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
inline void store_be(std::string& out, std::uint64_t v, std::size_t n) {
  for (std::size_t i = n; i-- > 0;) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// ---- bytea ----------------------------------------------------------------
/// Text: hex ("\x0aff") or the legacy escape format (bytea_output = escape).
std::error_code decode_bytea_text(std::string_view in, std::vector<std::byte>& out);
/// Text form for a parameter: "\x" + lowercase hex.
std::string encode_bytea_text(std::span<const std::byte> in);

// ---- uuid -----------------------------------------------------------------
/// Text: 32 hex digits, hyphens allowed between groups of four, optional
/// braces (what uuid_in accepts). Binary: exactly 16 bytes.
std::error_code decode_uuid_text(std::string_view in, std::array<std::uint8_t, 16>& out);
std::error_code decode_uuid_binary(std::string_view in, std::array<std::uint8_t, 16>& out);
std::string encode_uuid_text(const std::array<std::uint8_t, 16>& in);

// ---- date and time --------------------------------------------------------
/// A decoded timestamp/date: finite, +infinity or -infinity.
enum class special : signed char { none = 0, pos_infinity = 1, neg_infinity = -1 };

/// timestamptz (with_zone) or timestamp, to microseconds since 1970-01-01
/// (UTC for timestamptz, wall clock for timestamp). Text must be ISO
/// DateStyle ("2024-05-06 07:08:09.123456+02", " BC" suffix, years past
/// 9999, "infinity"); other DateStyles are conversion_error. A value beyond
/// int64 microseconds since 1970 (after ~294247 AD) is out_of_range.
std::error_code decode_timestamp_text(std::string_view in, bool with_zone, std::int64_t& us, special& sp);
std::error_code decode_timestamp_binary(std::string_view in, std::int64_t& us, special& sp);
/// ISO text, "+00" suffix when with_zone; always accepted by the server
/// whatever its DateStyle and TimeZone.
std::string encode_timestamp_text(std::int64_t us, bool with_zone);
/// Binary: microseconds since 2000-01-01. out_of_range past the server's
/// range (4713 BC .. 294276 AD).
std::error_code encode_timestamp_binary(std::int64_t us, std::string& out);

/// date, to days since 1970-01-01.
std::error_code decode_date_text(std::string_view in, std::int64_t& days, special& sp);
std::error_code decode_date_binary(std::string_view in, std::int64_t& days, special& sp);
std::string encode_date_text(std::int64_t days);
std::error_code encode_date_binary(std::int64_t days, std::string& out);

/// time (without time zone), to microseconds since midnight (0 .. 24:00:00).
std::error_code decode_time_text(std::string_view in, std::int64_t& us);
std::error_code decode_time_binary(std::string_view in, std::int64_t& us);
std::string encode_time_text(std::int64_t us);

/// interval. Text must be IntervalStyle postgres (the default:
/// "1 year 2 mons -3 days +04:05:06.000007") or iso_8601 ("P1Y2M-3DT4H5M6.000007S").
std::error_code decode_interval_text(std::string_view in, interval& out);
std::error_code decode_interval_binary(std::string_view in, interval& out);
std::string encode_interval_text(const interval& in);
void encode_interval_binary(const interval& in, std::string& out);

/// Calendar helpers on a proleptic Gregorian calendar with a year 0
/// (year 0 is 1 BC), over the server's whole range.
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) noexcept;
void civil_from_days(std::int64_t days, std::int64_t& y, unsigned& m, unsigned& d) noexcept;

// ---- numeric --------------------------------------------------------------
/// Text as the server prints it (checked, then kept verbatim).
std::error_code decode_numeric_text(std::string_view in, numeric& out);
/// Binary: ndigits, weight, sign, dscale, then base-10000 digits.
std::error_code decode_numeric_binary(std::string_view in, numeric& out);
/// Binary form of a numeric (used inside binary arrays).
void encode_numeric_binary(const numeric& in, std::string& out);

// ---- json -----------------------------------------------------------------
/// json text, jsonb text, or jsonb binary (a version byte, 1, then text).
/// Nesting is limited (boost::json's default depth, 32) and malformed input
/// is conversion_error, never an exception.
std::error_code decode_json(std::string_view in, bool jsonb_binary, boost::json::value& out);
std::string encode_json_text(const boost::json::value& in);

// ---- arrays of any dimension ------------------------------------------------
/// PostgreSQL's limit on an array's dimensions (MAXDIM).
inline constexpr std::size_t max_array_dims = 6;
/// The elements of an array value, as views, in row-major order (the last
/// subscript varies fastest). Text elements that needed unquoting live in
/// `owned` (a deque: views into it stay valid). An empty array has no
/// dimensions.
struct array_items {
  type_oid element_type = 0;
  std::vector<std::optional<std::string_view>> items;  ///< std::nullopt: NULL element
  std::deque<std::string> owned;
  std::vector<std::int32_t> dims;          ///< length of each dimension
  std::vector<std::int32_t> lower_bounds;  ///< first subscript of each dimension
};
/// Text array literal ("{1,NULL,\"a b\"}", "{{1,2},{3,4}}", optionally
/// "[0:1][1:2]={...}"). The element type comes from the column's array type.
/// Sub-arrays of one level must have the same length (the server never
/// sends others) and a decoration must agree with the braces.
std::error_code split_array_text(std::string_view in, type_oid element_type, array_items& out);
/// Binary array: ndim, flags, element oid, (length, lower bound) per
/// dimension, then length-prefixed elements; every length is checked
/// against what is left before anything is allocated.
std::error_code split_array_binary(std::string_view in, array_items& out);
/// Quotes one element for a text array literal (always quoted; NULL as NULL).
void append_array_text_element(std::string& out, const std::optional<std::string>& element);

// ---- ranges and multiranges ------------------------------------------------
/// One range value split into its bounds, as views. `lower`/`upper` are
/// std::nullopt for an unbounded side (and for an empty range). Text bounds
/// that needed unquoting live in `owned` (a deque: views stay valid).
struct range_parts {
  bool empty = false;
  std::optional<std::string_view> lower, upper;
  bool lower_inclusive = false, upper_inclusive = false;
  std::deque<std::string> owned;
};
/// Text as range_in reads it: "empty" (any case), or '[' / '(', the lower
/// bound, ',', the upper bound, ']' / ')'. A bound may be quoted ("" is a
/// quote inside quotes) and may use backslash escapes; an absent bound is
/// unbounded, a quoted empty one ("") is a bound of empty text.
std::error_code split_range_text(std::string_view in, range_parts& out);
/// Binary: a flags byte, then each bounded side as a 4-byte length and its
/// bytes; every length is checked against what is left.
std::error_code split_range_binary(std::string_view in, range_parts& out);
/// Text for a parameter: bounds always quoted, '"' and '\' escaped.
std::string encode_range_text(const range_parts& in);
/// Binary for a parameter: `lower_binary`/`upper_binary` are the bounds'
/// binary forms (ignored for an unbounded side). invalid_argument when a
/// bound is longer than the format's 4-byte length can say.
std::error_code encode_range_binary(const range_parts& in, std::string_view lower_binary,
                                    std::string_view upper_binary, std::string& out);

/// A multirange's ranges, as views of each range's own text or bytes, into
/// `out.items` (one dimension); out.element_type is `range_type`.
/// Text: "{}" or "{[1,3),[5,7)}" (whitespace allowed between ranges).
/// Binary: a 4-byte count, then each range length-prefixed.
std::error_code split_multirange_text(std::string_view in, type_oid range_type, array_items& out);
std::error_code split_multirange_binary(std::string_view in, type_oid range_type, array_items& out);
/// Text for a multirange parameter: "{" then each range's text (what
/// encode_range_text made), comma-separated, then "}".
std::string encode_multirange_text(std::span<const std::string> ranges);
/// Binary for a multirange parameter (multirange_send's layout): a 4-byte
/// count, then each range's binary form (encode_range_binary's) after its
/// 4-byte length. invalid_argument when the count or a length is more than
/// the format's signed 4 bytes can say.
std::error_code encode_multirange_binary(std::span<const std::string> ranges, std::string& out);

}  // namespace pgpipe::detail::codec
