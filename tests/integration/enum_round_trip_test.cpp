// C++ enums and PostgreSQL enums by label through a real server, both
// directions, the same scenarios for each driver: labels with a quote and
// non-ASCII, a Boost.Describe'd enum, and a label the C++ side does not list.
#include <pgpipe/async_client.hpp>
#include <pgpipe/blocking_pool.hpp>
#include <pgpipe/enums.hpp>

#include "support/async_kit.hpp"
#include "support/result_drivers.hpp"

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

}  // namespace

template <>
struct pgpipe::enum_labels<mood> {
  static constexpr std::pair<mood, std::string_view> labels[] = {
      {mood::sad, "sad"}, {mood::ok, "it's \"ok\""}, {mood::happy, "vui vẻ ☺"}};
};

namespace {

using pgpipe::errc;

// 'giận' is a label of the server's type that the C++ enum does not list.
constexpr const char* create_types =
    "do $$ begin "
    "create type mood_t as enum ('sad', 'it''s \"ok\"', 'vui vẻ ☺', 'giận'); "
    "create type color_t as enum ('red', 'green'); "
    "exception when duplicate_object then null; end $$";

template <class D>
class enum_round_trip : public ::testing::Test {
 protected:
  void SetUp() override { (void)d_.run(create_types); }
  D d_{pgpipe::test::result_driver_params()};
};
TYPED_TEST_SUITE(enum_round_trip, pgpipe::test::result_drivers, pgpipe::test::driver_names);

TYPED_TEST(enum_round_trip, every_label_goes_and_comes_back) {
  for (mood m : {mood::sad, mood::ok, mood::happy}) {
    auto r = this->d_.run("select $1::mood_t as m, $1::mood_t::text as label", m);
    EXPECT_EQ(r[0].template get<mood>("m"), m);
  }
  // What the server stored is the label itself.
  EXPECT_EQ(this->d_.run("select $1::mood_t::text", mood::ok).template as<std::string>(), "it's \"ok\"");
  EXPECT_EQ(this->d_.run("select $1::mood_t::text", mood::happy).template as<std::string>(), "vui vẻ ☺");
  // The parameter's type is inferred from the comparison.
  EXPECT_TRUE(this->d_.run("select $1 = 'vui vẻ ☺'::mood_t", mood::happy).template as<bool>());
  EXPECT_EQ(this->d_.run("select null::mood_t").template as<std::optional<mood>>(), std::nullopt);
  EXPECT_EQ(this->d_.run("select m from unnest(enum_range('red'::color_t)) m").template to_vector<color>(),
            (std::vector<color>{color::red, color::green}));
  EXPECT_EQ(this->d_.run("select $1::color_t", color::green).template as<color>(), color::green);
}

TYPED_TEST(enum_round_trip, a_label_the_enum_does_not_list_is_a_clear_error) {
  auto r = this->d_.run("select 'giận'::mood_t as m");
  try {
    (void)r.template as<mood>();
    FAIL() << "no error";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), errc::conversion_error);
    EXPECT_NE(std::string(e.what()).find("(text \"giận\")"), std::string::npos) << e.what();
  }
  std::error_code ec;
  (void)r[0][0].template get<mood>(ec);
  EXPECT_EQ(ec, errc::conversion_error);
  // An integer column is not an enum.
  auto n = this->d_.run("select 1");
  (void)n[0][0].template get<mood>(ec);
  EXPECT_EQ(ec, errc::type_mismatch);
}

}  // namespace
