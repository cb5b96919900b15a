// Result views and field conversions on PGresults built client-side with
// libpq's PQmakeEmptyPGresult/PQsetvalue: no server needed.
#include <pgpipe/result.hpp>

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace {

// A one-column-per-value, one-row result; nullopt cells are NULL.
// Every column has type `type` (text by default), in text format.
pgpipe::result make_result(const std::vector<std::optional<std::string>>& cells,
                           const std::vector<std::string>& names = {}, pgpipe::type_oid type = pgpipe::oids::text) {
  PGresult* r = PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK);
  std::vector<PGresAttDesc> attrs(cells.size());
  std::vector<std::string> storage;
  storage.reserve(cells.size());
  for (std::size_t i = 0; i < cells.size(); ++i) {
    storage.push_back(i < names.size() ? names[i] : "c" + std::to_string(i));
    attrs[i] = PGresAttDesc{storage.back().data(), 0, 0, 0, type, -1, -1};
  }
  PQsetResultAttrs(r, static_cast<int>(attrs.size()), attrs.data());
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (cells[i]) {
      std::string v = *cells[i];
      PQsetvalue(r, 0, static_cast<int>(i), v.data(), static_cast<int>(v.size()));
    } else {
      PQsetvalue(r, 0, static_cast<int>(i), nullptr, -1);
    }
  }
  return pgpipe::result(r);
}

template <class T>
std::error_code conv(const std::optional<std::string>& cell, pgpipe::type_oid type) {
  auto r = make_result({cell}, {}, type);
  std::error_code ec;
  (void)r[0][0].get<T>(ec);
  return ec;
}

}  // namespace

TEST(result_convert, integers_are_range_checked_and_reject_junk) {
  auto r = make_result({"42", "-9223372036854775808", "32768", "12x", "", " 1", "1.5"}, {}, pgpipe::oids::int8);
  EXPECT_EQ(r[0].get<int>(0), 42);
  EXPECT_EQ(r[0].get<std::int64_t>(1), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(r[0].get<std::int32_t>(2), 32768);
  for (int c : {3, 4, 5, 6}) {
    std::error_code ec;
    (void)r[0][c].get<int>(ec);
    EXPECT_EQ(ec, pgpipe::errc::conversion_error) << c;
  }
  EXPECT_EQ(conv<std::int16_t>("32768", pgpipe::oids::int4), pgpipe::errc::conversion_error);  // overflow
  EXPECT_EQ(conv<std::uint32_t>("-1", pgpipe::oids::int4), pgpipe::errc::conversion_error);
  EXPECT_FALSE(conv<std::uint64_t>("18446744073709551615", pgpipe::oids::int8));
}

TEST(result_convert, floating_point_including_postgres_specials) {
  auto r = make_result({"3.25", "NaN", "Infinity", "-Infinity", "1e-320", "abc"}, {}, pgpipe::oids::float8);
  EXPECT_EQ(r[0].get<double>(0), 3.25);
  EXPECT_TRUE(std::isnan(r[0].get<double>(1)));
  EXPECT_EQ(r[0].get<double>(2), std::numeric_limits<double>::infinity());
  EXPECT_EQ(r[0].get<double>(3), -std::numeric_limits<double>::infinity());
  EXPECT_GT(r[0].get<double>(4), 0.0);  // subnormal, still parsed
  EXPECT_THROW((void)r[0].get<double>(5), pgpipe::error);
}

TEST(result_convert, bool_accepts_postgres_text_only) {
  EXPECT_FALSE(conv<bool>("t", pgpipe::oids::bool_));
  EXPECT_FALSE(conv<bool>("f", pgpipe::oids::bool_));
  EXPECT_EQ(conv<bool>("yes", pgpipe::oids::bool_), pgpipe::errc::conversion_error);
  EXPECT_EQ(conv<bool>("1", pgpipe::oids::bool_), pgpipe::errc::conversion_error);
  auto r = make_result({"t", "f"}, {}, pgpipe::oids::bool_);
  EXPECT_TRUE(r[0].get<bool>(0));
  EXPECT_FALSE(r[0].get<bool>(1));
}

TEST(result_convert, null_needs_optional) {
  auto r = make_result({std::nullopt, "5"}, {}, pgpipe::oids::int4);
  EXPECT_TRUE(r[0][0].is_null());
  EXPECT_EQ(r[0].get<std::optional<int>>(0), std::nullopt);
  EXPECT_EQ(r[0].get<std::optional<int>>(1), 5);
  EXPECT_EQ(conv<int>(std::nullopt, pgpipe::oids::int4), pgpipe::errc::null_value);
  EXPECT_EQ(conv<std::string>(std::nullopt, pgpipe::oids::text), pgpipe::errc::null_value);
  try {
    (void)r[0].get<std::string>(0);
    FAIL() << "expected pgpipe::error";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::errc::null_value);
  }
}

TEST(result_convert, strings_and_views) {
  std::string with_nul("a\0b", 3);
  auto r = make_result({"hello", with_nul});
  EXPECT_EQ(r[0].get<std::string_view>(0), "hello");
  EXPECT_EQ(r[0].get<std::string>(1), with_nul);  // lengths, not strlen
}

TEST(result_convert, views_by_name_and_bounds) {
  auto r = make_result({"1", "2"}, {"a", "b"}, pgpipe::oids::int4);
  EXPECT_EQ(r.size(), 1u);
  EXPECT_EQ(r.columns(), 2u);
  EXPECT_EQ(r.column_name(1), "b");
  EXPECT_EQ(r[0].get<int>("b"), 2);
  EXPECT_THROW((void)r[0].at("zz"), pgpipe::error);
  EXPECT_THROW((void)r.at(1), pgpipe::error);
  EXPECT_THROW((void)r[0].at(2), pgpipe::error);
  EXPECT_EQ(r.value<int>(), 1);
  int rows = 0;
  for (auto row : r) rows += row.get<int>(0);
  EXPECT_EQ(rows, 1);
}

TEST(result_convert, result_is_move_only_and_owns_the_pgresult) {
  static_assert(!std::is_copy_constructible_v<pgpipe::result>);
  static_assert(std::is_nothrow_move_constructible_v<pgpipe::result>);
  auto r = make_result({"7"}, {}, pgpipe::oids::int4);
  pgpipe::result moved = std::move(r);
  EXPECT_FALSE(r.has_value());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  EXPECT_EQ(moved.value<int>(), 7);
  pgpipe::result empty;
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_EQ(empty.affected_rows(), 0u);
  EXPECT_EQ(empty.command_tag(), "");
}

TEST(result_convert, a_wrong_type_is_type_mismatch_naming_column_and_types) {
  auto r = make_result({"42"}, {"ma"}, pgpipe::oids::text);
  std::error_code ec;
  (void)r[0][0].get<int>(ec);
  EXPECT_EQ(ec, pgpipe::errc::type_mismatch);
  try {
    (void)r[0].get<std::int32_t>("ma");
    FAIL() << "expected pgpipe::error";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::errc::type_mismatch);
    const std::string m = e.what();
    EXPECT_NE(m.find("\"ma\""), std::string::npos) << m;
    EXPECT_NE(m.find("text"), std::string::npos) << m;
    EXPECT_NE(m.find("int32_t"), std::string::npos) << m;
  }
  auto n = make_result({std::nullopt}, {"x"}, pgpipe::oids::numeric);
  try {
    (void)n[0].get<pgpipe::numeric>(0);
    FAIL() << "expected pgpipe::error";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::errc::null_value);
    EXPECT_NE(std::string(e.what()).find("pgpipe::numeric"), std::string::npos) << e.what();
  }
}
