// pgpipe::range<T>: the server's range spellings (text and binary) read into
// C++, and ranges sent back read the same. No server: the strings are what
// PostgreSQL 15 prints (quoting, "empty", unbounded sides); the binary
// layouts are range_send's.
#include <pgpipe/range.hpp>

#include "support/codec_kit.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

using namespace std::chrono;
using pgpipe::errc;
using pgpipe::field_value;
using pgpipe::range;
using pgpipe::wire_format;
namespace oids = pgpipe::oids;
namespace codec = pgpipe::detail::codec;

namespace {

using pgpipe::test::decode;
constexpr auto be = pgpipe::test::big_endian;

template <class T>
T text(std::string_view s, pgpipe::type_oid t) {
  T out{};
  auto ec = decode(s, t, wire_format::text, out);
  EXPECT_FALSE(ec) << s << ": " << ec.message();
  return out;
}

}  // namespace

TEST(range_codec, text_bounds_inclusivity_and_unbounded_sides) {
  auto r = text<range<int>>("[1,5)", oids::int4range);
  EXPECT_FALSE(r.empty());
  EXPECT_EQ(r.lower(), 1);
  EXPECT_EQ(r.upper(), 5);
  EXPECT_TRUE(r.lower_inclusive());
  EXPECT_FALSE(r.upper_inclusive());

  auto below = text<range<int>>("(,5]", oids::int4range);
  EXPECT_TRUE(below.lower_unbounded());
  EXPECT_FALSE(below.lower_inclusive());
  EXPECT_EQ(below.upper(), 5);
  EXPECT_TRUE(below.upper_inclusive());
  EXPECT_EQ(below, range<int>(std::nullopt, 5, "(]"));

  auto above = text<range<std::int64_t>>("[2,)", oids::int8range);
  EXPECT_EQ(above.lower(), 2);
  EXPECT_TRUE(above.upper_unbounded());
  EXPECT_EQ(text<range<int>>("(,)", oids::int4range), range<int>(std::nullopt, std::nullopt));

  for (auto s : {"empty", "EMPTY", "  Empty  "}) {
    auto e = text<range<int>>(s, oids::int4range);
    EXPECT_TRUE(e.empty()) << s;
    EXPECT_FALSE(e.lower_unbounded());
    EXPECT_EQ(e, range<int>());
  }
}

TEST(range_codec, quoted_timestamps_dates_and_numerics) {
  // tstzrange as the server prints it in a +05:30 session.
  auto t = text<range<sys_time<microseconds>>>(R"(["2024-01-01 05:30:00+05:30","2024-01-02 05:30:00.5+05:30"))",
                                               oids::tstzrange);
  EXPECT_EQ(*t.lower(), sys_days(2024y / 1 / 1));
  EXPECT_EQ(*t.upper(), sys_days(2024y / 1 / 2) + 500ms);
  auto ts = text<range<local_time<microseconds>>>(R"(("2024-01-01 00:00:00",infinity])", oids::tsrange);
  EXPECT_EQ(*ts.upper(), local_time<microseconds>::max());  // infinite, not unbounded
  EXPECT_FALSE(ts.upper_unbounded());
  auto d = text<range<sys_days>>("[2024-02-29,2024-03-01)", oids::daterange);
  EXPECT_EQ(*d.lower(), sys_days(2024y / 2 / 29));
  auto n = text<range<pgpipe::numeric>>("[1.50,-Infinity]", oids::numrange);
  EXPECT_EQ(n.lower()->str(), "1.50");
  EXPECT_EQ(n.upper()->str(), "-Infinity");
}

TEST(range_codec, quotes_and_escapes_in_bounds_follow_range_in) {
  codec::range_parts p;
  ASSERT_FALSE(codec::split_range_text(R"(["a""b\\c",""))", p));
  EXPECT_EQ(*p.lower, R"(a"b\c)");
  ASSERT_TRUE(p.upper.has_value());  // "" is a bound of empty text, not unbounded
  EXPECT_EQ(*p.upper, "");
  ASSERT_FALSE(codec::split_range_text(R"([a\,b,"x,y"])", p));
  EXPECT_EQ(*p.lower, "a,b");
  EXPECT_EQ(*p.upper, "x,y");
  EXPECT_TRUE(p.upper_inclusive);
  // What the encoder writes, the parser reads back.
  codec::range_parts q;
  q.lower = R"(say "hi" \ ok)";
  q.upper = "";
  q.lower_inclusive = true;
  ASSERT_FALSE(codec::split_range_text(codec::encode_range_text(q), p));
  EXPECT_EQ(*p.lower, *q.lower);
  EXPECT_EQ(*p.upper, "");
}

TEST(range_codec, malformed_text_is_a_conversion_error) {
  range<int> r;
  for (auto s : {"", "[", "[1,5", "1,5)", "[1,5)x", "[1,2,3)", "[1;5)", "emptyx", "[\"1,5)", "[1,5\\"}) {
    EXPECT_EQ(decode(s, oids::int4range, wire_format::text, r), errc::conversion_error) << s;
  }
  // A bound the subtype cannot read is the subtype's error.
  EXPECT_EQ(decode("[1,99999999999)", oids::int8range, wire_format::text, r), errc::conversion_error);
  // The column's subtype is checked first.
  range<sys_days> d;
  EXPECT_EQ(decode("[1,5)", oids::int4range, wire_format::text, d), errc::type_mismatch);
  EXPECT_EQ(decode("[1,5)", oids::int4, wire_format::text, r), errc::type_mismatch);
}

TEST(range_codec, binary_flags_and_every_length_checked) {
  // int4range [1,5): flags LB_INC, two 4-byte bounds.
  const std::string b = std::string(1, '\x02') + be(4, 4) + be(1, 4) + be(4, 4) + be(5, 4);
  range<int> r;
  ASSERT_FALSE(decode(b, oids::int4range, wire_format::binary, r));
  EXPECT_EQ(r, range<int>(1, 5));
  for (std::size_t cut = 0; cut < b.size(); ++cut)
    EXPECT_EQ(decode(b.substr(0, cut), oids::int4range, wire_format::binary, r), errc::conversion_error) << cut;
  EXPECT_EQ(decode(b + "x", oids::int4range, wire_format::binary, r), errc::conversion_error);
  // (,5]: LB_INF | UB_INC, one bound.
  ASSERT_FALSE(decode(std::string(1, '\x0c') + be(4, 4) + be(5, 4), oids::int4range, wire_format::binary, r));
  EXPECT_EQ(r, range<int>(std::nullopt, 5, "(]"));
  ASSERT_FALSE(decode(std::string(1, '\x01'), oids::int4range, wire_format::binary, r));
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(decode(std::string(1, '\x01') + "x", oids::int4range, wire_format::binary, r), errc::conversion_error);
  // A length past the end, and a negative one.
  EXPECT_EQ(decode(std::string(1, '\x10') + be(0x7fffffff, 4), oids::int4range, wire_format::binary, r),
            errc::conversion_error);
  EXPECT_EQ(decode(std::string(1, '\x10') + be(0xffffffff, 4), oids::int4range, wire_format::binary, r),
            errc::conversion_error);
}

TEST(range_codec, parameters_round_trip_in_both_forms) {
  using P = pgpipe::param_traits<range<sys_days>>;
  static_assert(P::oid == oids::daterange);
  static_assert(pgpipe::param_traits<range<int>>::oid == oids::int4range);
  static_assert(pgpipe::param_traits<range<std::int64_t>>::oid == oids::int8range);
  static_assert(pgpipe::param_traits<range<pgpipe::numeric>>::oid == oids::numrange);
  static_assert(pgpipe::param_traits<range<sys_time<microseconds>>>::oid == oids::tstzrange);
  static_assert(pgpipe::param_traits<range<local_time<microseconds>>>::oid == oids::tsrange);
  const std::vector<range<sys_days>> cases{
      range<sys_days>(),
      range<sys_days>(sys_days(2024y / 1 / 1), sys_days(2024y / 2 / 1)),
      range<sys_days>(std::nullopt, sys_days(1999y / 12 / 31), "(]"),
      range<sys_days>(sys_days(2024y / 1 / 1), std::nullopt),
      range<sys_days>(sys_days::min(), sys_days::max(), "[]"),
  };
  for (const auto& c : cases) {
    auto t = P::encode(c);
    range<sys_days> back;
    ASSERT_FALSE(decode(*t, oids::daterange, wire_format::text, back)) << *t;
    EXPECT_EQ(back, c) << *t;
    std::string b;
    ASSERT_FALSE(P::encode_binary(c, b));
    ASSERT_FALSE(decode(b, oids::daterange, wire_format::binary, back));
    EXPECT_EQ(back, c) << *t;
  }
  EXPECT_EQ(*P::encode(cases[2]), R"((,"1999-12-31"])");
  // numeric has no binary parameter form: its range goes as typed text.
  range<pgpipe::numeric> n(pgpipe::numeric("0.5"), pgpipe::numeric("Infinity"), "(]");
  auto enc = pgpipe::detail::encode_params(n);
  EXPECT_EQ(enc.types[0], oids::numrange);
  EXPECT_EQ(enc.formats[0], 0);
  EXPECT_EQ(*enc.values[0], R"(("0.5","Infinity"])");
}

TEST(range_codec, bounds_other_than_the_four_are_refused_at_construction) {
  try {
    range<int> r(1, 2, "[[");
    FAIL() << "constructed";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("\"[[\""), std::string::npos) << e.what();
  }
  // An unbounded side is never inclusive, whatever the bounds say.
  range<int> open(std::nullopt, 3, "[]");
  EXPECT_FALSE(open.lower_inclusive());
  EXPECT_TRUE(open.upper_inclusive());
}

TEST(range_codec, a_multirange_reads_as_a_vector_of_ranges) {
  using V = std::vector<range<int>>;
  EXPECT_EQ(text<V>("{[1,3), [5,7)}", oids::int4multirange), (V{range<int>(1, 3), range<int>(5, 7)}));
  EXPECT_EQ(text<V>("{}", oids::int4multirange), V{});
  EXPECT_EQ(text<V>("{(,0)}", oids::int4multirange), (V{range<int>(std::nullopt, 0)}));
  // An array of ranges reads the same way.
  EXPECT_EQ(text<V>(R"x({"[1,3)",empty})x", oids::int4range_array), (V{range<int>(1, 3), range<int>()}));
  // Binary: a count, then each range length-prefixed.
  const std::string one = std::string(1, '\x02') + be(4, 4) + be(1, 4) + be(4, 4) + be(3, 4);
  const std::string b = be(2, 4) + be(one.size(), 4) + one + be(one.size(), 4) + one;
  V v;
  ASSERT_FALSE(decode(b, oids::int4multirange, wire_format::binary, v));
  EXPECT_EQ(v, (V{range<int>(1, 3), range<int>(1, 3)}));
  for (std::size_t cut = 0; cut < b.size(); ++cut)
    EXPECT_EQ(decode(b.substr(0, cut), oids::int4multirange, wire_format::binary, v), errc::conversion_error) << cut;
  EXPECT_EQ(decode(be(0x7fffffff, 4), oids::int4multirange, wire_format::binary, v), errc::conversion_error);
  for (auto s : {"", "{", "{[1,3)", "{[1,3),}", "{[1,3)}x", "{[1,3) [4,5)}"})
    EXPECT_EQ(decode(s, oids::int4multirange, wire_format::text, v), errc::conversion_error) << s;
  // A multirange of another subtype is a type mismatch.
  EXPECT_EQ(decode("{}", oids::datemultirange, wire_format::text, v), errc::type_mismatch);
}
