// C++ enums mapped to PostgreSQL enum labels (pgpipe/enums.hpp), on results
// built client-side and on the parameter encoder: no server.
#include <pgpipe/result.hpp>
#include <pgpipe/enums.hpp>
#include <pgpipe/type_traits.hpp>

#include "support/made_result.hpp"

#include <boost/describe/enum.hpp>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

enum class mood { sad, ok, happy };
enum class color { red, green };
BOOST_DESCRIBE_ENUM(color, red, green)

constexpr pgpipe::type_oid mood_oid = 16500;  // a user type, as the server's enums are

}  // namespace

template <>
struct pgpipe::enum_labels<mood> {
  static constexpr std::pair<mood, std::string_view> labels[] = {
      {mood::sad, "sad"}, {mood::ok, "it's \"ok\""}, {mood::happy, "vui vẻ ☺"}};
};

namespace {

using pgpipe_test::make_rows;

TEST(enum_labels, a_declared_label_reads_in_text_and_binary) {
  auto r = make_rows({{"t", mood_oid}, {"b", mood_oid, pgpipe::wire_format::binary}, {"n", mood_oid}},
                     {{"it's \"ok\"", "vui vẻ ☺", std::nullopt}});
  EXPECT_EQ(r[0].get<mood>(0), mood::ok);
  EXPECT_EQ(r[0].get<mood>(1), mood::happy);
  EXPECT_EQ(r[0].get<std::optional<mood>>(2), std::nullopt);
  auto c = make_rows({{"c", mood_oid + 1}}, {{"green"}, {"red"}});
  EXPECT_EQ(c.to_vector<color>(), (std::vector<color>{color::green, color::red}));
}

TEST(enum_labels, an_unknown_label_is_a_conversion_error_naming_the_text) {
  auto r = make_rows({{"m", mood_oid}}, {{"angry"}});
  std::error_code ec;
  (void)r[0][0].get<mood>(ec);
  EXPECT_EQ(ec, pgpipe::errc::conversion_error);
  try {
    (void)r.as<mood>();
    FAIL() << "no error";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::errc::conversion_error);
    EXPECT_NE(std::string(e.what()).find("(text \"angry\")"), std::string::npos) << e.what();
  }
  // Labels are compared exactly: PostgreSQL's are case-sensitive.
  auto upper = make_rows({{"c", mood_oid}}, {{"Red"}});
  (void)upper[0][0].get<color>(ec);
  EXPECT_EQ(ec, pgpipe::errc::conversion_error);
}

TEST(enum_labels, a_built_in_non_text_column_is_a_type_mismatch) {
  auto r = make_rows({{"m", pgpipe::oids::int4}}, {{"1"}});
  std::error_code ec;
  (void)r[0][0].get<mood>(ec);
  EXPECT_EQ(ec, pgpipe::errc::type_mismatch);
}

TEST(enum_labels, parameters_are_their_labels_with_no_type) {
  auto p = pgpipe::detail::encode_params(mood::ok, color::green, std::optional<mood>());
  ASSERT_FALSE(p.ec) << p.error_message;
  EXPECT_EQ(p.values[0], "it's \"ok\"");
  EXPECT_EQ(p.values[1], "green");
  EXPECT_EQ(p.values[2], std::nullopt);
  EXPECT_EQ(p.types[0], 0u);
  EXPECT_EQ(p.formats[0], 0);
  EXPECT_THROW((void)pgpipe::detail::encode_params(static_cast<mood>(7)), pgpipe::error);
}

}  // namespace
