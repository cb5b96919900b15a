// Text and binary codecs for the types a service stores: every
// decoder against the server's own spellings and byte layouts, its edges, and
// malformed input. No server: the byte strings are what PostgreSQL 15 sends.
#include <pgpipe/type_traits.hpp>

#include <boost/json.hpp>
#include <boost/uuid/uuid.hpp>

#include "support/codec_kit.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

using namespace std::chrono;
using pgpipe::errc;
using pgpipe::field_value;
using pgpipe::wire_format;
namespace oids = pgpipe::oids;
namespace codec = pgpipe::detail::codec;

namespace {

using pgpipe::test::decode;
constexpr auto be = pgpipe::test::big_endian;

field_value text(std::string_view s, pgpipe::type_oid t) { return {s, t, wire_format::text}; }
field_value bin(std::string_view s, pgpipe::type_oid t) { return {s, t, wire_format::binary}; }


}  // namespace

TEST(type_codec, integers_binary_sign_extend_and_range_check) {
  std::int64_t v = 0;
  ASSERT_FALSE(decode(bin(be(0xfffe, 2), oids::int2), v));
  EXPECT_EQ(v, -2);
  ASSERT_FALSE(decode(bin(be(0x80000000, 4), oids::int4), v));
  EXPECT_EQ(v, std::numeric_limits<std::int32_t>::min());
  std::int16_t small = 0;
  EXPECT_EQ(decode(bin(be(40000, 4), oids::int4), small), errc::conversion_error);  // does not fit
  EXPECT_EQ(decode(bin(be(1, 3), oids::int4), small), errc::conversion_error);      // odd size
  std::uint32_t o = 0;
  ASSERT_FALSE(decode(bin(be(4000000000u, 4), oids::oid), o));
  EXPECT_EQ(o, 4000000000u);
  std::int32_t i = 0;
  EXPECT_EQ(decode(bin(be(4000000000u, 4), oids::oid), i), errc::conversion_error);
}

TEST(type_codec, type_is_checked_before_the_bytes) {
  int i = 0;
  EXPECT_EQ(decode(text("42", oids::text), i), errc::type_mismatch);
  EXPECT_EQ(decode(text("42", oids::numeric), i), errc::type_mismatch);
  double d = 0;
  EXPECT_EQ(decode(text("1.5", oids::numeric), d), errc::type_mismatch);
  float f = 0;
  EXPECT_EQ(decode(text("1.5", oids::float8), f), errc::type_mismatch);  // would lose digits
  std::string s;
  EXPECT_FALSE(decode(text("42", oids::int4), s));  // every text form reads as a string
  EXPECT_EQ(decode(bin(be(42, 4), oids::int4), s), errc::type_mismatch);
  std::optional<int> oi;
  EXPECT_EQ(pgpipe::detail::decode_field(std::optional<field_value>(), i), errc::null_value);
  EXPECT_FALSE(pgpipe::detail::decode_field(std::optional<field_value>(), oi));
  EXPECT_FALSE(oi);
}

TEST(type_codec, floats_and_bool_binary) {
  double d = 0;
  ASSERT_FALSE(decode(bin(be(0x3ff8000000000000ULL, 8), oids::float8), d));
  EXPECT_EQ(d, 1.5);
  ASSERT_FALSE(decode(bin(be(0x3fc00000, 4), oids::float4), d));
  EXPECT_EQ(d, 1.5);
  bool b = false;
  ASSERT_FALSE(decode(bin(std::string(1, '\1'), oids::bool_), b));
  EXPECT_TRUE(b);
  EXPECT_EQ(decode(bin(std::string(1, '\2'), oids::bool_), b), errc::conversion_error);
  EXPECT_EQ(decode(bin("", oids::bool_), b), errc::conversion_error);
}

TEST(type_codec, bytea_hex_escape_and_binary) {
  std::vector<std::byte> v;
  ASSERT_FALSE(decode(text("\\x00ff7f", oids::bytea), v));
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], std::byte{0});
  EXPECT_EQ(v[1], std::byte{0xff});
  ASSERT_FALSE(decode(text("a\\\\b\\000", oids::bytea), v));  // escape format
  EXPECT_EQ(v, (std::vector<std::byte>{std::byte{'a'}, std::byte{'\\'}, std::byte{'b'}, std::byte{0}}));
  EXPECT_EQ(decode(text("\\x0", oids::bytea), v), errc::conversion_error);   // odd digit count
  EXPECT_EQ(decode(text("\\x0g", oids::bytea), v), errc::conversion_error);
  EXPECT_EQ(decode(text("ab\\", oids::bytea), v), errc::conversion_error);   // dangling backslash
  EXPECT_EQ(decode(text("ab\\00", oids::bytea), v), errc::conversion_error); // short octal
  ASSERT_FALSE(decode(bin(std::string("\0\1", 2), oids::bytea), v));
  EXPECT_EQ(v.size(), 2u);
  std::vector<std::byte> all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<std::byte>(i));
  std::string t = codec::encode_bytea_text(all);
  ASSERT_FALSE(decode(text(t, oids::bytea), v));
  EXPECT_EQ(v, all);
}

TEST(type_codec, uuid_text_and_binary) {
  boost::uuids::uuid u{};
  ASSERT_FALSE(decode(text("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", oids::uuid), u));
  EXPECT_EQ(u.data[0], 0xa0);
  EXPECT_EQ(u.data[15], 0x11);
  boost::uuids::uuid w{};
  ASSERT_FALSE(decode(text("{A0EEBC999C0B4EF8BB6D6BB9BD380A11}", oids::uuid), w));
  EXPECT_EQ(u, w);
  EXPECT_EQ(decode(text("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1", oids::uuid), u), errc::conversion_error);
  EXPECT_EQ(decode(text("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111", oids::uuid), u), errc::conversion_error);
  EXPECT_EQ(decode(bin(std::string(15, 'x'), oids::uuid), u), errc::conversion_error);
  ASSERT_FALSE(decode(bin(std::string(16, '\0'), oids::uuid), u));
  EXPECT_TRUE(u.is_nil());
  EXPECT_EQ(*pgpipe::detail::encode_param(w), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
}

TEST(type_codec, timestamptz_text_honours_the_offset_bc_and_infinity) {
  sys_time<microseconds> t;
  ASSERT_FALSE(decode(text("2024-05-06 07:08:09.123456+02", oids::timestamptz), t));
  EXPECT_EQ(t, sys_days(2024y / May / 6) + 5h + 8min + 9s + 123456us);
  ASSERT_FALSE(decode(text("1900-01-01 00:00:00+00:09:21", oids::timestamptz), t));  // historical offset
  EXPECT_EQ(t, sys_days(1900y / January / 1) - 9min - 21s);
  ASSERT_FALSE(decode(text("0001-01-01 00:00:00+00 BC", oids::timestamptz), t));
  EXPECT_EQ(t, sys_days(year(0) / January / 1));
  ASSERT_FALSE(decode(text("12345-01-01 00:00:00.5+00", oids::timestamptz), t));
  ASSERT_FALSE(decode(text("infinity", oids::timestamptz), t));
  EXPECT_EQ(t, sys_time<microseconds>::max());
  ASSERT_FALSE(decode(text("-infinity", oids::timestamptz), t));
  EXPECT_EQ(t, sys_time<microseconds>::min());
  // Other DateStyles and junk are refused, never read as another date.
  EXPECT_EQ(decode(text("Mon May 06 07:08:09 2024 CEST", oids::timestamptz), t), errc::conversion_error);
  EXPECT_EQ(decode(text("06/05/2024 07:08:09+02", oids::timestamptz), t), errc::conversion_error);
  EXPECT_EQ(decode(text("2024-02-30 00:00:00+00", oids::timestamptz), t), errc::conversion_error);
  EXPECT_EQ(decode(text("2024-05-06 07:08:09", oids::timestamptz), t), errc::conversion_error);  // no zone
  // timestamptz is not a local time and vice versa.
  local_time<microseconds> lt;
  EXPECT_EQ(decode(text("2024-05-06 07:08:09+02", oids::timestamptz), lt), errc::type_mismatch);
  ASSERT_FALSE(decode(text("2024-05-06 07:08:09.5", oids::timestamp), lt));
  EXPECT_EQ(lt.time_since_epoch(), (sys_days(2024y / May / 6) + 7h + 8min + 9s + 500ms).time_since_epoch());
}

TEST(type_codec, timestamp_binary_infinity_and_overflow) {
  sys_time<microseconds> t;
  ASSERT_FALSE(decode(bin(be(0, 8), oids::timestamptz), t));
  EXPECT_EQ(t, sys_days(2000y / January / 1));
  ASSERT_FALSE(decode(bin(be(0x7fffffffffffffffULL, 8), oids::timestamptz), t));
  EXPECT_EQ(t, sys_time<microseconds>::max());
  ASSERT_FALSE(decode(bin(be(0x8000000000000000ULL, 8), oids::timestamptz), t));
  EXPECT_EQ(t, sys_time<microseconds>::min());
  // The server's last years do not fit int64 microseconds since 1970.
  EXPECT_EQ(decode(bin(be(0x7ffffffffffffffeULL, 8), oids::timestamptz), t), errc::out_of_range);
  EXPECT_EQ(decode(text("294270-01-01 00:00:00+00", oids::timestamptz), t), errc::out_of_range);
  EXPECT_EQ(decode(bin(be(0, 7), oids::timestamptz), t), errc::conversion_error);
}

TEST(type_codec, timestamp_parameters_round_trip_through_both_forms) {
  for (sys_time<microseconds> tp : std::vector<sys_time<microseconds>>{sys_days(1969y / December / 31) + 23h + 59min + 59s + 999999us,
                  sys_days(2100y / March / 1) + 1us, sys_days(year(-300) / July / 4) + 12h + 0us}) {
    sys_time<microseconds> back;
    auto t = pgpipe::detail::encode_param(tp);
    ASSERT_TRUE(t);
    ASSERT_FALSE(decode(text(*t, oids::timestamptz), back)) << *t;
    EXPECT_EQ(back, tp) << *t;
    std::string b;
    ASSERT_FALSE(pgpipe::param_traits<sys_time<microseconds>>::encode_binary(tp, b));
    ASSERT_FALSE(decode(bin(b, oids::timestamptz), back));
    EXPECT_EQ(back, tp);
  }
  EXPECT_EQ(*pgpipe::detail::encode_param(sys_time<microseconds>::max()), "infinity");
  EXPECT_EQ(*pgpipe::detail::encode_param(sys_days(year(-1) / January / 1) + 0us), "0002-01-01 00:00:00.000000+00 BC");
  // A nanosecond time point is floored to microseconds.
  sys_time<nanoseconds> ns = sys_days(2024y / January / 1) + 1999ns;
  EXPECT_EQ(*pgpipe::detail::encode_param(ns), "2024-01-01 00:00:00.000001+00");
}

TEST(type_codec, dates) {
  sys_days d;
  ASSERT_FALSE(decode(text("1969-07-20", oids::date), d));
  EXPECT_EQ(d, sys_days(1969y / July / 20));
  ASSERT_FALSE(decode(text("2040-02-29", oids::date), d));
  EXPECT_EQ(d, sys_days(2040y / February / 29));
  ASSERT_FALSE(decode(text("4713-01-01 BC", oids::date), d));
  EXPECT_EQ(d, sys_days(year(-4712) / January / 1));
  ASSERT_FALSE(decode(text("infinity", oids::date), d));
  EXPECT_EQ(d, sys_days::max());
  ASSERT_FALSE(decode(bin(be(0x80000000, 4), oids::date), d));
  EXPECT_EQ(d, sys_days::min());
  ASSERT_FALSE(decode(bin(be(0xffffffff, 4), oids::date), d));
  EXPECT_EQ(d, sys_days(1999y / December / 31));
  year_month_day ymd;
  EXPECT_EQ(decode(text("infinity", oids::date), ymd), errc::out_of_range);  // no such year_month_day
  EXPECT_EQ(decode(text("40000-01-01", oids::date), ymd), errc::out_of_range);
  ASSERT_FALSE(decode(text("0900-03-01", oids::date), ymd));
  EXPECT_EQ(ymd, 900y / March / 1);
  EXPECT_EQ(decode(text("2023-02-29", oids::date), d), errc::conversion_error);
  EXPECT_EQ(decode(text("2023-13-01", oids::date), d), errc::conversion_error);
  EXPECT_EQ(*pgpipe::detail::encode_param(sys_days(1899y / December / 31)), "1899-12-31");
}

TEST(type_codec, time_and_interval) {
  microseconds t{};
  ASSERT_FALSE(decode(text("23:59:59.999999", oids::time), t));
  EXPECT_EQ(t, 24h - 1us);
  ASSERT_FALSE(decode(text("24:00:00", oids::time), t));
  EXPECT_EQ(decode(text("24:00:01", oids::time), t), errc::conversion_error);
  EXPECT_EQ(decode(bin(be(86400000001ULL, 8), oids::time), t), errc::conversion_error);
  pgpipe::interval iv;
  ASSERT_FALSE(decode(text("1 year 2 mons -3 days +04:05:06.000007", oids::interval), iv));
  EXPECT_EQ(iv, (pgpipe::interval{14, -3, 14706000007}));
  ASSERT_FALSE(decode(text("-1 years -2 mons +3 days -04:05:06", oids::interval), iv));
  EXPECT_EQ(iv, (pgpipe::interval{-14, 3, -14706000000}));
  ASSERT_FALSE(decode(text("00:00:00", oids::interval), iv));
  EXPECT_EQ(iv, pgpipe::interval{});
  ASSERT_FALSE(decode(text("1 day", oids::interval), iv));
  EXPECT_EQ(iv, (pgpipe::interval{0, 1, 0}));
  EXPECT_EQ(decode(text("@ 1 day", oids::interval), iv), errc::conversion_error);  // postgres_verbose
  EXPECT_EQ(decode(text("P1D", oids::interval), iv), errc::conversion_error);      // iso_8601
  std::string b;
  pgpipe::interval x{-5, 40, std::numeric_limits<std::int64_t>::min()};
  codec::encode_interval_binary(x, b);
  ASSERT_FALSE(decode(bin(b, oids::interval), iv));
  EXPECT_EQ(iv, x);
  pgpipe::interval y{7, -2, -3723000004};
  ASSERT_FALSE(decode(text(codec::encode_interval_text(y), oids::interval), iv)) << codec::encode_interval_text(y);
  EXPECT_EQ(iv, y);
}

TEST(type_codec, numeric_is_exact_both_ways) {
  pgpipe::numeric n;
  ASSERT_FALSE(decode(text("-12.3400", oids::numeric), n));
  EXPECT_EQ(n.str(), "-12.3400");
  std::string big(1000, '7');
  big.insert(300, ".");
  ASSERT_FALSE(decode(text(big, oids::numeric), n));
  EXPECT_EQ(n.str(), big);
  for (std::string s : std::vector<std::string>{"0", "0.000", "1", "-1", "10000", "0.0001", "123456789.987654321", "NaN", "Infinity",
                        "-Infinity", "-0.00012", "99990000", big}) {
    pgpipe::numeric a(s), back;
    std::string b;
    codec::encode_numeric_binary(a, b);
    ASSERT_FALSE(decode(bin(b, oids::numeric), back)) << s;
    EXPECT_EQ(back.str(), a.str()) << s;
  }
  // The server's binary for -12.3400: ndigits 2, weight 0, sign 0x4000, dscale 4, digits 12, 3400.
  std::string raw = be(2, 2) + be(0, 2) + be(0x4000, 2) + be(4, 2) + be(12, 2) + be(3400, 2);
  ASSERT_FALSE(decode(bin(raw, oids::numeric), n));
  EXPECT_EQ(n.str(), "-12.3400");
  EXPECT_EQ(decode(bin(raw.substr(0, raw.size() - 1), oids::numeric), n), errc::conversion_error);
  std::string bad_digit = be(1, 2) + be(0, 2) + be(0, 2) + be(0, 2) + be(10000, 2);
  EXPECT_EQ(decode(bin(bad_digit, oids::numeric), n), errc::conversion_error);
  EXPECT_EQ(decode(text("1.2.3", oids::numeric), n), errc::conversion_error);
  EXPECT_EQ(pgpipe::numeric("1e3").str(), "1000");
  EXPECT_EQ(pgpipe::numeric("-0").str(), "0");
}

TEST(type_codec, numeric_conversions_refuse_to_round_silently) {
  std::int64_t i = 0;
  EXPECT_FALSE(pgpipe::numeric("42.000").to_int64(i));
  EXPECT_EQ(i, 42);
  EXPECT_EQ(pgpipe::numeric("42.5").to_int64(i), errc::out_of_range);
  EXPECT_EQ(pgpipe::numeric("9223372036854775808").to_int64(i), errc::out_of_range);
  EXPECT_EQ(pgpipe::numeric("NaN").to_int64(i), errc::out_of_range);
  double d = 0;
  EXPECT_FALSE(pgpipe::numeric("0.5").to_double(d));
  EXPECT_EQ(d, 0.5);
  EXPECT_EQ(pgpipe::numeric("1" + std::string(400, '0')).to_double(d), errc::out_of_range);
  EXPECT_FALSE(pgpipe::numeric("-Infinity").to_double(d));
  EXPECT_EQ(d, -std::numeric_limits<double>::infinity());
  EXPECT_THROW((void)pgpipe::numeric("abc"), pgpipe::error);
}

TEST(type_codec, json_text_and_jsonb_binary) {
  boost::json::value j;
  ASSERT_FALSE(decode(text(R"({"a":[1,{"b":"ü😀"}]})", oids::jsonb), j));
  EXPECT_EQ(j.at("a").at(1).at("b").as_string(), "ü😀");
  ASSERT_FALSE(decode(bin(std::string("\1[1,2]"), oids::jsonb), j));
  EXPECT_EQ(j.as_array().size(), 2u);
  EXPECT_EQ(decode(bin(std::string("\2[1]"), oids::jsonb), j), errc::conversion_error);  // unknown version
  ASSERT_FALSE(decode(bin("[1]", oids::json), j));  // json's binary form is its text
  EXPECT_EQ(decode(text("{\"a\":", oids::json), j), errc::conversion_error);
  EXPECT_EQ(decode(text(std::string(10000, '['), oids::json), j), errc::conversion_error);  // too deep
}

TEST(type_codec, text_arrays) {
  std::vector<std::optional<std::string>> v;
  ASSERT_FALSE(decode(text(R"({a,"b c",NULL,"NULL","q\"\\",  x y  })", oids::text_array), v));
  ASSERT_EQ(v.size(), 6u);
  EXPECT_EQ(v[1], "b c");
  EXPECT_FALSE(v[2]);
  EXPECT_EQ(v[3], "NULL");
  EXPECT_EQ(v[4], "q\"\\");
  EXPECT_EQ(v[5], "x y");
  std::vector<int> ints;
  ASSERT_FALSE(decode(text("[0:2]={1,2,3}", oids::int4_array), ints));
  EXPECT_EQ(ints, (std::vector<int>{1, 2, 3}));
  ASSERT_FALSE(decode(text("{}", oids::int4_array), ints));
  EXPECT_TRUE(ints.empty());
  EXPECT_EQ(decode(text("{1,NULL}", oids::int4_array), ints), errc::null_value);
  // 2-D into a vector: std::vector<std::vector<int>> or pgpipe::array reads it.
  EXPECT_EQ(decode(text("{{1,2},{3,4}}", oids::int4_array), ints), errc::dimensions_mismatch);
  EXPECT_EQ(decode(text("[1:2][1:1]={{1},{2}}", oids::int4_array), ints), errc::dimensions_mismatch);
  EXPECT_EQ(decode(text("{1,2", oids::int4_array), ints), errc::conversion_error);
  EXPECT_EQ(decode(text("{1,,2}", oids::int4_array), ints), errc::conversion_error);
  EXPECT_EQ(decode(text("{1,2}", oids::text_array), ints), errc::type_mismatch);
  std::vector<pgpipe::numeric> nums;
  ASSERT_FALSE(decode(text("{1.5,NaN,-Infinity}", oids::numeric_array), nums));
  EXPECT_EQ(nums[2].str(), "-Infinity");
}

TEST(type_codec, binary_arrays_check_every_length) {
  auto header = [](int ndim, int flags, std::uint32_t elem) { return be(ndim, 4) + be(flags, 4) + be(elem, 4); };
  std::string a = header(1, 1, oids::int8) + be(3, 4) + be(1, 4) + be(8, 4) + be(7, 8) + be(0xffffffff, 4) + be(8, 4) +
                  be(static_cast<std::uint64_t>(-9), 8);
  std::vector<std::optional<std::int64_t>> v;
  ASSERT_FALSE(decode(bin(a, oids::int8_array), v));
  EXPECT_EQ(v, (std::vector<std::optional<std::int64_t>>{7, std::nullopt, -9}));
  for (std::size_t cut = 0; cut < a.size(); ++cut)
    EXPECT_EQ(decode(bin(a.substr(0, cut), oids::int8_array), v), errc::conversion_error) << cut;
  EXPECT_EQ(decode(bin(a + "x", oids::int8_array), v), errc::conversion_error);
  // A count the remaining bytes cannot hold is refused before allocating.
  EXPECT_EQ(decode(bin(header(1, 0, oids::int8) + be(0x7fffffff, 4) + be(1, 4), oids::int8_array), v),
            errc::conversion_error);
  EXPECT_EQ(decode(bin(header(2, 0, oids::int8) + be(1, 4) + be(1, 4) + be(1, 4) + be(1, 4) + be(8, 4) + be(1, 8),
                    oids::int8_array),
                v),
            errc::dimensions_mismatch);  // 2-D
  ASSERT_FALSE(decode(bin(header(0, 0, oids::int8), oids::int8_array), v));
  EXPECT_TRUE(v.empty());
  // Element type in the header must suit T as well.
  std::vector<std::optional<std::string>> s;
  EXPECT_EQ(decode(bin(a, oids::text_array), s), errc::type_mismatch);
}

TEST(type_codec, array_parameters_binary_and_text) {
  using P = pgpipe::param_traits<std::vector<std::optional<std::int32_t>>>;
  static_assert(P::oid == oids::int4_array);
  std::vector<std::optional<std::int32_t>> in{1, std::nullopt, -3};
  std::string b;
  ASSERT_FALSE(P::encode_binary(in, b));
  std::vector<std::optional<std::int32_t>> back;
  ASSERT_FALSE(decode(bin(b, oids::int4_array), back));
  EXPECT_EQ(back, in);
  EXPECT_EQ(*P::encode(in), R"({"1",NULL,"-3"})");
  std::vector<std::string> strs{"a\"b", "NULL", ""};
  auto t = pgpipe::detail::encode_param(strs);
  std::vector<std::string> sback;
  ASSERT_FALSE(decode(text(*t, oids::text_array), sback));
  EXPECT_EQ(sback, strs);
}

TEST(type_codec, wire_encoding_picks_binary_with_types) {
  std::vector<std::byte> bytes{std::byte{0}, std::byte{'a'}};
  auto p = pgpipe::detail::encode_params(std::int64_t{5}, bytes, std::string("x"), std::optional<int>{},
                                         pgpipe::numeric("1.50"), sys_days(2024y / January / 1));
  ASSERT_FALSE(p.ec) << p.error_message;
  EXPECT_EQ(std::vector<pgpipe::type_oid>(p.types.begin(), p.types.end()),
            (std::vector<pgpipe::type_oid>{oids::int8, oids::bytea, 0, oids::int4, oids::numeric, oids::date}));
  EXPECT_EQ(std::vector<int>(p.formats.begin(), p.formats.end()), (std::vector<int>{1, 1, 0, 0, 0, 1}));
  EXPECT_EQ(*p.values[0], be(5, 8));
  EXPECT_EQ(*p.values[1], std::string("\0a", 2));  // NUL goes through in binary
  EXPECT_FALSE(p.values[3]);
  EXPECT_EQ(*p.values[4], "1.50");
  auto bad = pgpipe::detail::encode_params(std::string("nul\0", 4));
  EXPECT_EQ(bad.ec, errc::invalid_argument);
}
