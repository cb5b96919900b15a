// Binary result values against a real server, the same scenarios for both
// drivers: typed reads ask for binary when every field reads it and give
// the values the text path gives; result_format::binary is the opt-in for
// get<T>() readers; an accessor that cannot read binary fails naming the
// column instead of handing binary bytes over as text.
#include <pgpipe/array.hpp>
#include <pgpipe/async_client.hpp>
#include <pgpipe/blocking_pool.hpp>
#include <pgpipe/range.hpp>

#include "support/result_drivers.hpp"

#include <boost/describe/class.hpp>
#include <boost/json/value.hpp>
#include <boost/uuid/uuid.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>
#include <tuple>
#include <vector>

namespace {

/// An int8 that remembers the format it was decoded from: how a test sees
/// which format a typed read asked for.
struct format_probe {
  std::int64_t value = 0;
  pgpipe::wire_format seen = pgpipe::wire_format::text;
};

}  // namespace

template <>
struct pgpipe::field_traits<format_probe> {
  static constexpr bool binary_results = true;
  static bool accepts(type_oid t) { return t == oids::int8; }
  static std::string cpp_name() { return "format_probe"; }
  static std::error_code decode(const field_value& v, format_probe& out) {
    out.seen = v.format;
    return field_traits<std::int64_t>::decode(v, out.value);
  }
};

namespace {

using pgpipe::errc;
using pgpipe::result_format;
using pgpipe::wire_format;
using pgpipe::test::thrown;
using micros = std::chrono::sys_time<std::chrono::microseconds>;

// Every field reads binary: a typed read of it asks for binary values.
struct wide {
  std::int16_t i2 = 0;
  std::int32_t i4 = 0;
  std::int64_t i8 = 0;
  double f8 = 0;
  pgpipe::numeric num;
  bool b = false;
  std::vector<std::byte> bytes;
  boost::uuids::uuid id{};
  micros at{};
  std::chrono::sys_days day{};
  boost::json::value js;
  boost::json::value jsb;
  std::vector<std::optional<std::int32_t>> arr;
  std::vector<std::vector<std::int64_t>> grid;
  pgpipe::range<std::int64_t> r;
  pgpipe::range<micros> during;
  std::optional<std::int64_t> nothing;
  format_probe probe;
};
BOOST_DESCRIBE_STRUCT(wide, (),
                      (i2, i4, i8, f8, num, b, bytes, id, at, day, js, jsb, arr, grid, r, during, nothing, probe))

constexpr const char* wide_sql =
    "select (-32768)::int2 as i2, 2147483647::int4 as i4, (-9223372036854775808)::int8 as i8, "
    "1.5e300::float8 as f8, '-12345678901234567890.000000000123'::numeric as num, true as b, "
    "'\\x00ff10'::bytea as bytes, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid as id, "
    "'2024-02-29 23:59:59.123456+07'::timestamptz as at, '1999-12-31'::date as day, "
    "'{\"a\": [1, 2, null]}'::json as js, '{\"b\": \"ư\"}'::jsonb as jsb, '{1,null,3}'::int4[] as arr, "
    "'{{1,2},{3,4}}'::int8[] as grid, '[3,10)'::int8range as r, "
    "'[2024-01-01 00:00+00,infinity)'::tstzrange as during, null::int8 as nothing, 5::int8 as probe";

void expect_same(const wide& a, const wide& b) {
  EXPECT_EQ(a.i2, b.i2);
  EXPECT_EQ(a.i4, b.i4);
  EXPECT_EQ(a.i8, b.i8);
  EXPECT_EQ(a.f8, b.f8);
  EXPECT_EQ(a.num, b.num);
  EXPECT_EQ(a.b, b.b);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.at, b.at);
  EXPECT_EQ(a.day, b.day);
  EXPECT_EQ(a.js, b.js);
  EXPECT_EQ(a.jsb, b.jsb);
  EXPECT_EQ(a.arr, b.arr);
  EXPECT_EQ(a.grid, b.grid);
  EXPECT_EQ(a.r, b.r);
  EXPECT_EQ(a.during, b.during);
  EXPECT_EQ(a.nothing, b.nothing);
  EXPECT_EQ(a.probe.value, b.probe.value);
}

template <class D>
class binary_results : public ::testing::Test {
 protected:
  D d_{pgpipe::test::result_driver_params(1)};
};
TYPED_TEST_SUITE(binary_results, pgpipe::test::result_drivers, pgpipe::test::driver_names);

TYPED_TEST(binary_results, a_typed_read_asks_for_binary_and_reads_what_text_reads) {
  const wide bin = this->d_.template one<wide>(wide_sql);
  EXPECT_EQ(bin.probe.seen, wire_format::binary);
  const wide txt = this->d_.run_as(result_format::text, wide_sql).template as<wide>();
  EXPECT_EQ(txt.probe.seen, wire_format::text);
  expect_same(bin, txt);
  // A few values checked outright, so two equal misreads cannot pass.
  EXPECT_EQ(bin.i8, INT64_MIN);
  EXPECT_EQ(bin.num.str(), "-12345678901234567890.000000000123");
  EXPECT_EQ(bin.bytes, (std::vector<std::byte>{std::byte{0}, std::byte{0xff}, std::byte{0x10}}));
  EXPECT_EQ(bin.at.time_since_epoch().count(), 1709225999123456);
  EXPECT_EQ(bin.arr, (std::vector<std::optional<std::int32_t>>{1, std::nullopt, 3}));
  EXPECT_EQ(bin.grid, (std::vector<std::vector<std::int64_t>>{{1, 2}, {3, 4}}));
  EXPECT_FALSE(bin.nothing.has_value());
  // The _opt and vector forms choose the same way.
  auto v = this->d_.template all<std::tuple<format_probe>>("select 1::int8 union all select 2::int8");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(std::get<0>(v[1]).value, 2);
  EXPECT_EQ(std::get<0>(v[1]).seen, wire_format::binary);
  auto o = this->d_.template opt<format_probe>("select 3::int8");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->seen, wire_format::binary);
}

TYPED_TEST(binary_results, a_row_with_a_string_field_stays_text) {
  // std::string reads any column in text (an int's digits, an enum's
  // label), so a row holding one keeps text values.
  auto t = this->d_.template one<std::tuple<std::string, format_probe>>("select 'Hà Nội'::text, 4::int8");
  EXPECT_EQ(std::get<0>(t), "Hà Nội");
  EXPECT_EQ(std::get<1>(t).seen, wire_format::text);
  EXPECT_EQ(std::get<1>(t).value, 4);
}

TYPED_TEST(binary_results, a_narrower_column_widens_and_a_wider_value_fails_naming_the_column) {
  // The shape check accepts int2/int4 into an int64 field; the binary value
  // is 2 or 4 bytes and must be sign-extended, not misread.
  auto w = this->d_.template one<std::tuple<std::int64_t, std::int64_t, format_probe>>(
      "select (-7)::int4, (-3)::int2, 1::int8");
  EXPECT_EQ(std::get<2>(w).seen, wire_format::binary);
  EXPECT_EQ(std::get<0>(w), -7);
  EXPECT_EQ(std::get<1>(w), -3);
  // An int8 value an int32 field cannot hold is an error naming the column.
  auto e = thrown([&] {
    (void)this->d_.template one<std::tuple<std::int32_t, format_probe>>("select 9999999999::int8 as big, 1::int8");
  });
  EXPECT_TRUE(e.code() == errc::conversion_error || e.code() == errc::out_of_range) << e.code().message();
  EXPECT_NE(std::string(e.what()).find("\"big\""), std::string::npos) << e.what();
}

TYPED_TEST(binary_results, the_opt_in_gives_binary_values_that_get_reads) {
  pgpipe::result bin = this->d_.run_as(result_format::binary, wide_sql);
  pgpipe::result txt = this->d_.run(wide_sql);
  const pgpipe::row b = bin.one(), t = txt.one();
  EXPECT_EQ(b.at("i8").format(), wire_format::binary);
  EXPECT_EQ(t.at("i8").format(), wire_format::text);  // untyped queries stay text by default
  EXPECT_EQ(b.get<std::int16_t>("i2"), t.get<std::int16_t>("i2"));
  EXPECT_EQ(b.get<std::int64_t>("i4"), t.get<std::int64_t>("i4"));
  EXPECT_EQ(b.get<std::int64_t>("i8"), t.get<std::int64_t>("i8"));
  EXPECT_EQ(b.get<double>("f8"), t.get<double>("f8"));
  EXPECT_EQ(b.get<pgpipe::numeric>("num"), t.get<pgpipe::numeric>("num"));
  EXPECT_EQ(b.get<bool>("b"), t.get<bool>("b"));
  EXPECT_EQ(b.get<std::vector<std::byte>>("bytes"), t.get<std::vector<std::byte>>("bytes"));
  EXPECT_EQ(b.get<boost::uuids::uuid>("id"), t.get<boost::uuids::uuid>("id"));
  EXPECT_EQ(b.get<micros>("at"), t.get<micros>("at"));
  EXPECT_EQ(b.get<std::chrono::sys_days>("day"), t.get<std::chrono::sys_days>("day"));
  EXPECT_EQ(b.get<boost::json::value>("js"), t.get<boost::json::value>("js"));
  EXPECT_EQ(b.get<boost::json::value>("jsb"), t.get<boost::json::value>("jsb"));
  EXPECT_EQ((b.get<std::vector<std::optional<std::int32_t>>>("arr")),
            (t.get<std::vector<std::optional<std::int32_t>>>("arr")));
  EXPECT_EQ(b.get<pgpipe::array<std::int64_t>>("grid").dims(), t.get<pgpipe::array<std::int64_t>>("grid").dims());
  EXPECT_EQ(b.get<pgpipe::range<std::int64_t>>("r"), t.get<pgpipe::range<std::int64_t>>("r"));
  EXPECT_EQ(b.get<pgpipe::range<micros>>("during"), t.get<pgpipe::range<micros>>("during"));
  EXPECT_EQ(b.get<std::optional<std::int64_t>>("nothing"), std::nullopt);
  // A typed read of an opted-in result decodes binary too.
  expect_same(bin.as<wide>(), txt.as<wide>());
  // Text columns read the same in both formats, by get and by text().
  pgpipe::result s = this->d_.run_as(result_format::binary, "select 'Đà Lạt'::text as name, 'x'::varchar as v");
  EXPECT_EQ(s.one().get<std::string>("name"), "Đà Lạt");
  EXPECT_EQ(s.one().at("v").text(), "x");
}

TYPED_TEST(binary_results, reading_a_binary_value_as_text_fails_naming_the_column) {
  pgpipe::result r = this->d_.run_as(result_format::binary, "select 42::int8 as n, row(1, 'a') as pair");
  const pgpipe::row row = r.one();
  auto e = thrown([&] { (void)row.at("n").text(); });
  EXPECT_EQ(e.code(), errc::type_mismatch);
  EXPECT_NE(std::string(e.what()).find("\"n\""), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("binary"), std::string::npos) << e.what();
  auto g = thrown([&] { (void)row.get<std::string>("n"); });
  EXPECT_EQ(g.code(), errc::type_mismatch);
  EXPECT_NE(std::string(g.what()).find("\"n\""), std::string::npos) << g.what();
  auto c = thrown([&] { (void)row.get<std::string>("pair"); });
  EXPECT_EQ(c.code(), errc::type_mismatch);
  // The bytes stay reachable, tagged with their format.
  EXPECT_EQ(row.at("n").bytes().size(), 8u);
  EXPECT_EQ(row.at("n").value()->format, wire_format::binary);
  EXPECT_EQ(row.get<std::int64_t>("n"), 42);
}

}  // namespace
