// Arrays of any dimension: pgpipe::array<T> (dimensions, lower bounds) and
// std::vector<std::vector<T>> (rectangular 2-D), from the server's text and
// binary forms and back as parameters. No server: the strings are what
// PostgreSQL 15 prints.
#include <pgpipe/array.hpp>

#include "support/codec_kit.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

using pgpipe::errc;
using pgpipe::field_value;
using pgpipe::wire_format;
namespace oids = pgpipe::oids;

namespace {

using pgpipe::test::decode;
constexpr auto be = pgpipe::test::big_endian;

using grid = std::vector<std::vector<int>>;
using opt_array = pgpipe::array<std::optional<int>>;

}  // namespace

TEST(array_codec, text_of_two_and_three_dimensions_with_lower_bounds) {
  opt_array a;
  ASSERT_FALSE(decode("[0:1][-1:1]={{1,2,3},{4,NULL,6}}", oids::int4_array, wire_format::text, a));
  EXPECT_EQ(a.dims(), (std::vector<std::int32_t>{2, 3}));
  EXPECT_EQ(a.lower_bounds(), (std::vector<std::int32_t>{0, -1}));
  EXPECT_EQ(a.at({0, -1}), 1);
  EXPECT_EQ(a.at({1, 0}), std::nullopt);
  EXPECT_EQ(a.at({1, 1}), 6);
  EXPECT_THROW((void)a.at({2, 0}), pgpipe::error);
  EXPECT_THROW((void)a.at({0}), pgpipe::error);

  pgpipe::array<std::string> s;
  ASSERT_FALSE(decode(R"({{{a,"b }"},{c,d}},{{"{e",f},{g,"h\"i"}}})", oids::text_array, wire_format::text, s));
  EXPECT_EQ(s.dims(), (std::vector<std::int32_t>{2, 2, 2}));
  EXPECT_EQ(s.lower_bounds(), (std::vector<std::int32_t>{1, 1, 1}));
  EXPECT_EQ(s.elements(), (std::vector<std::string>{"a", "b }", "c", "d", "{e", "f", "g", "h\"i"}));

  ASSERT_FALSE(decode("{}", oids::int4_array, wire_format::text, a));
  EXPECT_EQ(a.ndim(), 0u);
  ASSERT_FALSE(decode("[5:6]={7,8}", oids::int4_array, wire_format::text, a));
  EXPECT_EQ(a, opt_array({2}, {5}, {7, 8}));
}

TEST(array_codec, ragged_or_mismatched_text_is_refused) {
  opt_array a;
  for (auto s : {"{{1,2},{3}}", "{{1,2},3}", "{1,{2}}", "{{1},{}}", "{{}}", "[1:3]={1,2}", "[1:2][1:1]={1,2}",
                 "[1:2]{1,2}", "{{{{{{{1}}}}}}}", "[2:1]={}", "{1,2}}", "{{1,2}"}) {
    EXPECT_EQ(decode(s, oids::int4_array, wire_format::text, a), errc::conversion_error) << s;
  }
  // Six dimensions is the server's limit and reads.
  ASSERT_FALSE(decode("{{{{{{1}}}}}}", oids::int4_array, wire_format::text, a));
  EXPECT_EQ(a.ndim(), 6u);
}

TEST(array_codec, binary_n_dimensional_with_every_length_checked) {
  auto header = [](int ndim, int flags) { return be(ndim, 4) + be(flags, 4) + be(oids::int4, 4); };
  // int4[] '[0:1][1:2]={{1,2},{3,NULL}}'.
  std::string b = header(2, 1) + be(2, 4) + be(0, 4) + be(2, 4) + be(1, 4);
  for (int v : {1, 2, 3}) b += be(4, 4) + be(v, 4);
  b += be(0xffffffff, 4);
  opt_array a;
  ASSERT_FALSE(decode(b, oids::int4_array, wire_format::binary, a));
  EXPECT_EQ(a, opt_array({2, 2}, {0, 1}, {1, 2, 3, std::nullopt}));
  for (std::size_t cut = 0; cut < b.size(); ++cut)
    EXPECT_EQ(decode(b.substr(0, cut), oids::int4_array, wire_format::binary, a), errc::conversion_error) << cut;
  // Dimensions whose product cannot fit in what is left, seven dimensions, a
  // negative length, an upper bound past 2^31-1: refused before allocating.
  EXPECT_EQ(decode(header(2, 0) + be(0x10000, 4) + be(1, 4) + be(0x10000, 4) + be(1, 4), oids::int4_array,
                wire_format::binary, a),
            errc::conversion_error);
  EXPECT_EQ(decode(header(7, 0) + std::string(56, '\0'), oids::int4_array, wire_format::binary, a), errc::conversion_error);
  EXPECT_EQ(decode(header(1, 0) + be(0xffffffff, 4) + be(1, 4), oids::int4_array, wire_format::binary, a),
            errc::conversion_error);
  EXPECT_EQ(decode(header(1, 0) + be(2, 4) + be(0x7fffffff, 4) + be(4, 4) + be(1, 4) + be(4, 4) + be(2, 4),
                oids::int4_array, wire_format::binary, a),
            errc::conversion_error);
}

TEST(array_codec, vector_of_vectors_reads_rectangular_2d_only) {
  grid g;
  ASSERT_FALSE(decode("{{1,2,3},{4,5,6}}", oids::int4_array, wire_format::text, g));
  EXPECT_EQ(g, (grid{{1, 2, 3}, {4, 5, 6}}));
  ASSERT_FALSE(decode("[0:0][0:1]={{7,8}}", oids::int4_array, wire_format::text, g));  // lower bounds dropped
  EXPECT_EQ(g, (grid{{7, 8}}));
  ASSERT_FALSE(decode("{}", oids::int4_array, wire_format::text, g));
  EXPECT_TRUE(g.empty());
  EXPECT_EQ(decode("{1,2}", oids::int4_array, wire_format::text, g), errc::dimensions_mismatch);
  EXPECT_EQ(decode("{{{1}}}", oids::int4_array, wire_format::text, g), errc::dimensions_mismatch);
  EXPECT_EQ(decode("{{1,NULL}}", oids::int4_array, wire_format::text, g), errc::null_value);
  std::vector<std::vector<std::optional<int>>> og;
  ASSERT_FALSE(decode("{{1,NULL}}", oids::int4_array, wire_format::text, og));
  EXPECT_EQ(og[0][1], std::nullopt);
  EXPECT_EQ(decode("{{1}}", oids::text_array, wire_format::text, g), errc::type_mismatch);
  // bytea[] stays a 1-D array of byte strings.
  std::vector<std::vector<std::byte>> blobs;
  ASSERT_FALSE(decode(R"({"\\x00ff"})", oids::bytea_array, wire_format::text, blobs));
  EXPECT_EQ(blobs.at(0).size(), 2u);
}

TEST(array_codec, parameters_round_trip_text_and_binary) {
  using G = pgpipe::param_traits<grid>;
  static_assert(G::oid == oids::int4_array);
  const grid g{{1, 2}, {3, 4}, {5, 6}};
  EXPECT_EQ(*G::encode(g), R"({{"1","2"},{"3","4"},{"5","6"}})");
  std::string b;
  ASSERT_FALSE(G::encode_binary(g, b));
  grid back;
  ASSERT_FALSE(decode(b, oids::int4_array, wire_format::binary, back));
  EXPECT_EQ(back, g);
  ASSERT_FALSE(decode(*G::encode(g), oids::int4_array, wire_format::text, back));
  EXPECT_EQ(back, g);
  EXPECT_EQ(*G::encode(grid{}), "{}");

  using A = pgpipe::param_traits<opt_array>;
  const opt_array a({2, 1}, {0, -3}, {std::nullopt, 9});
  EXPECT_EQ(*A::encode(a), R"([0:1][-3:-3]={{NULL},{"9"}})");
  opt_array aback;
  ASSERT_FALSE(decode(*A::encode(a), oids::int4_array, wire_format::text, aback));
  EXPECT_EQ(aback, a);
  b.clear();
  ASSERT_FALSE(A::encode_binary(a, b));
  ASSERT_FALSE(decode(b, oids::int4_array, wire_format::binary, aback));
  EXPECT_EQ(aback, a);
  // Text elements (no binary form): the literal, untyped.
  const std::vector<std::vector<std::string>> words{{"a,b", "\"q\""}, {"NULL", ""}};
  auto enc = pgpipe::detail::encode_params(words);
  EXPECT_EQ(enc.types[0], 0u);
  std::vector<std::vector<std::string>> wback;
  ASSERT_FALSE(decode(*enc.values[0], oids::text_array, wire_format::text, wback));
  EXPECT_EQ(wback, words);
}

TEST(array_codec, a_ragged_parameter_or_a_bad_shape_is_refused_naming_it) {
  try {
    (void)pgpipe::detail::encode_params(grid{{1, 2}, {3}});
    FAIL() << "no error";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("row 1 has 1 element(s), row 0 has 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(opt_array({2, 2}, {1, 1}, {1, 2, 3}), pgpipe::error);
  EXPECT_THROW(opt_array({2}, {1, 1}, {1, 2}), pgpipe::error);
  EXPECT_THROW(opt_array({1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1}, {1}), pgpipe::error);
  EXPECT_THROW(opt_array({2}, {0x7fffffff}, {1, 2}), pgpipe::error);
}
