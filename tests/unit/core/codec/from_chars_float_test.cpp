// detail::from_chars_float: std::from_chars' results for float and double,
// also where the standard library lacks them and the strtod fallback runs
// (libc++ 16: .ci/compat-libpqxx8 builds and runs this test there). Each
// case is what std::from_chars gives (the step 1 build, libstdc++, checks the
// same expectations against the standard one).
#include <pgpipe/detail/from_chars_float.hpp>

#include <gtest/gtest.h>

#include <clocale>
#include <cmath>
#include <limits>
#include <string_view>
#include <system_error>

namespace {

struct parsed {
  std::errc ec;
  std::size_t used;  // characters consumed
  double value;
};

template <class T = double>
parsed parse(std::string_view s, T initial = T(-7.5)) {
  T v = initial;
  auto r = pgpipe::detail::from_chars_float(s.data(), s.data() + s.size(), v);
  return {r.ec, static_cast<std::size_t>(r.ptr - s.data()), static_cast<double>(v)};
}

TEST(FromCharsFloat, ReadsDecimalAndExponentForms) {
  EXPECT_EQ(parse("1.5").value, 1.5);
  EXPECT_EQ(parse("-0.25").value, -0.25);
  EXPECT_EQ(parse("1e3").value, 1000.0);
  EXPECT_EQ(parse(".5").value, 0.5);
  EXPECT_EQ(parse("123.456e-2").value, 1.23456);
  EXPECT_EQ(parse("0.1").value, 0.1);
  EXPECT_EQ(parse<float>("0.1").value, static_cast<double>(0.1f));
  auto r = parse("2.5xyz");
  EXPECT_EQ(r.ec, std::errc{});
  EXPECT_EQ(r.used, 3u);
  EXPECT_EQ(r.value, 2.5);
}

TEST(FromCharsFloat, ReadsPostgresSpecials) {
  EXPECT_TRUE(std::isnan(parse("NaN").value));
  EXPECT_EQ(parse("Infinity").value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(parse("-Infinity").value, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(parse("Infinity").used, 8u);
}

TEST(FromCharsFloat, RefusesWhatFromCharsRefusesAndKeepsTheValue) {
  for (std::string_view s : {"", "-", "+1", " 1", "abc", "--1", "e5"}) {
    auto r = parse(s);
    EXPECT_EQ(r.ec, std::errc::invalid_argument) << "'" << s << "'";
    EXPECT_EQ(r.used, 0u) << "'" << s << "'";
    EXPECT_EQ(r.value, -7.5) << "'" << s << "' changed the output";
  }
}

TEST(FromCharsFloat, HexadecimalIsNotReadPastTheZero) {
  auto r = parse("0x10");
  EXPECT_EQ(r.ec, std::errc{});
  EXPECT_EQ(r.used, 1u);
  EXPECT_EQ(r.value, 0.0);
}

TEST(FromCharsFloat, OverflowAndUnderflowAreOutOfRangeNotInfinityOrZero) {
  for (std::string_view s : {"1e400", "-1e400", "1e-400"}) {
    auto r = parse(s);
    EXPECT_EQ(r.ec, std::errc::result_out_of_range) << s;
    EXPECT_EQ(r.used, s.size()) << s;
    EXPECT_EQ(r.value, -7.5) << s << " changed the output";
  }
  EXPECT_EQ(parse<float>("1e39").ec, std::errc::result_out_of_range);
  // A subnormal is a value, not an underflow.
  auto sub = parse("4e-320");
  EXPECT_EQ(sub.ec, std::errc{});
  EXPECT_GT(sub.value, 0.0);
  EXPECT_LT(sub.value, std::numeric_limits<double>::min());
}

TEST(FromCharsFloat, IgnoresTheProcessLocale) {
  // A locale whose decimal point is a comma, where one is installed.
  const char* chosen = nullptr;
  for (const char* name : {"de_DE.UTF-8", "fr_FR.UTF-8", "de_DE", "fr_FR"}) {
    if (std::setlocale(LC_NUMERIC, name) != nullptr) {
      chosen = name;
      break;
    }
  }
  if (chosen == nullptr) GTEST_SKIP() << "no locale with a decimal comma is installed";
  auto r = parse("1.5");
  std::setlocale(LC_NUMERIC, "C");
  EXPECT_EQ(r.ec, std::errc{}) << chosen;
  EXPECT_EQ(r.used, 3u);
  EXPECT_EQ(r.value, 1.5);
}

}  // namespace
