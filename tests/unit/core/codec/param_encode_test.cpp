// Text encoding of query parameters: no server needed.
#include <pgpipe/type_traits.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

using pgpipe::detail::encode_param;
using pgpipe::detail::encode_params;

TEST(param_encode, integers_at_their_limits) {
  EXPECT_EQ(encode_param(std::int16_t{-32768}), "-32768");
  EXPECT_EQ(encode_param(std::numeric_limits<std::int64_t>::min()), "-9223372036854775808");
  EXPECT_EQ(encode_param(std::numeric_limits<std::uint64_t>::max()), "18446744073709551615");
  EXPECT_EQ(encode_param(0), "0");
}

TEST(param_encode, floating_point_round_trips_exactly) {
  for (double v : {0.1, 1.0 / 3.0, 1e308, 5e-324, -2.5, 123456789.123456789}) {
    auto text = encode_param(v);
    ASSERT_TRUE(text);
    double back = 0;
    ASSERT_FALSE(pgpipe::field_traits<double>::decode({*text, pgpipe::oids::float8}, back)) << *text;
    EXPECT_EQ(back, v) << *text;
  }
  auto f = encode_param(0.1f);
  ASSERT_TRUE(f);
  EXPECT_EQ(*f, "0.1");  // shortest text for the float, not the double's digits
}

TEST(param_encode, floating_point_specials_use_postgres_spelling) {
  EXPECT_EQ(encode_param(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(encode_param(std::numeric_limits<double>::infinity()), "Infinity");
  EXPECT_EQ(encode_param(-std::numeric_limits<double>::infinity()), "-Infinity");
}

TEST(param_encode, bool_and_strings) {
  EXPECT_EQ(encode_param(true), "t");
  EXPECT_EQ(encode_param(false), "f");
  EXPECT_EQ(encode_param(std::string("abc")), "abc");
  EXPECT_EQ(encode_param(std::string_view("view")), "view");
  EXPECT_EQ(encode_param("literal"), "literal");
  const char* p = "pointer";
  EXPECT_EQ(encode_param(p), "pointer");
}

TEST(param_encode, null_forms) {
  EXPECT_EQ(encode_param(std::optional<int>{}), std::nullopt);
  EXPECT_EQ(encode_param(std::optional<int>{7}), "7");
  EXPECT_EQ(encode_param(std::nullopt), std::nullopt);
  EXPECT_EQ(encode_param(nullptr), std::nullopt);
  const char* null_ptr = nullptr;
  EXPECT_EQ(encode_param(null_ptr), std::nullopt);
}

TEST(param_encode, nul_byte_is_an_error_naming_the_parameter) {
  auto p = encode_params(1, std::string("ok"), std::string("bad\0byte", 8));
  EXPECT_EQ(p.ec, pgpipe::errc::invalid_argument);
  EXPECT_NE(p.error_message.find("$3"), std::string::npos) << p.error_message;
  auto fine = encode_params(1, "two", std::optional<double>{});
  EXPECT_FALSE(fine.ec);
  ASSERT_EQ(fine.values.size(), 3u);
  EXPECT_EQ(fine.values[1], "two");
  EXPECT_EQ(fine.values[2], std::nullopt);
}
