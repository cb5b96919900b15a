// Which typed reads ask for binary values (field_traits' binary_results,
// summed over a row's fields), and the raw accessors on a binary result
// built client-side: field::text() and get<std::string>() refuse a value
// whose binary form is not text, naming the column. No server needed.
#include <pgpipe/array.hpp>
#include <pgpipe/enums.hpp>
#include <pgpipe/query_options.hpp>
#include <pgpipe/range.hpp>
#include <pgpipe/result.hpp>

#include <pgpipe/detail/typed_query_glue.hpp>

#include <boost/describe/class.hpp>
#include <boost/json/value.hpp>
#include <boost/uuid/uuid.hpp>
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace {

using pgpipe::result_format;
using pgpipe::detail::row_traits;
using pgpipe::detail::wants_binary;

struct numbers {
  std::int64_t id = 0;
  std::optional<double> score;
  std::vector<std::optional<std::int32_t>> tags;
  pgpipe::range<std::chrono::sys_time<std::chrono::microseconds>> during;
};
BOOST_DESCRIBE_STRUCT(numbers, (), (id, score, tags, during))

struct named {
  std::int64_t id = 0;
  std::string name;
};
BOOST_DESCRIBE_STRUCT(named, (), (id, name))

struct plain {
  boost::uuids::uuid id{};
  pgpipe::numeric amount;
  boost::json::value doc;
};

// A user type that declares nothing: its decoder may read text only.
struct opaque {
  std::string v;
};

}  // namespace

template <>
struct pgpipe::field_traits<opaque> {
  static std::error_code decode(std::string_view text, opaque& out) {
    out.v = std::string(text);
    return {};
  }
};

static_assert(row_traits<numbers>::binary_results, "every field of numbers reads binary");
static_assert(row_traits<plain>::binary_results, "uuid, numeric and json read binary");
static_assert(row_traits<std::tuple<std::int16_t, bool, std::vector<std::byte>>>::binary_results);
static_assert(row_traits<std::chrono::sys_days>::binary_results, "a one-column read");
static_assert(!row_traits<named>::binary_results, "std::string reads any column in text");
static_assert(!row_traits<std::tuple<std::int64_t, std::vector<std::string>>>::binary_results);
static_assert(!row_traits<std::tuple<std::int64_t, opaque>>::binary_results, "undeclared: text");

TEST(binary_results_choice, automatic_follows_the_row_and_the_caller_overrides_it) {
  EXPECT_TRUE(wants_binary<numbers>(result_format::automatic));
  EXPECT_FALSE(wants_binary<named>(result_format::automatic));
  EXPECT_FALSE(wants_binary<numbers>(result_format::text));
  EXPECT_TRUE(wants_binary<named>(result_format::binary));
}

namespace {

struct cell {
  const char* name;
  pgpipe::type_oid type;
  std::string bytes;
};

// One row, every column in binary format.
pgpipe::result binary_row(const std::vector<cell>& cells) {
  PGresult* r = PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK);
  std::vector<PGresAttDesc> attrs;
  for (const cell& c : cells) attrs.push_back(PGresAttDesc{const_cast<char*>(c.name), 0, 0, 1, c.type, -1, -1});
  PQsetResultAttrs(r, static_cast<int>(attrs.size()), attrs.data());
  for (std::size_t i = 0; i < cells.size(); ++i) {
    std::string v = cells[i].bytes;
    PQsetvalue(r, 0, static_cast<int>(i), v.data(), static_cast<int>(v.size()));
  }
  return pgpipe::result(r);
}

template <class F>
pgpipe::error thrown(F&& f) {
  try {
    f();
  } catch (const pgpipe::error& e) {
    return e;
  }
  ADD_FAILURE() << "no pgpipe::error thrown";
  return pgpipe::error(make_error_code(pgpipe::errc::protocol_error), "none");
}

}  // namespace

TEST(binary_results_choice, text_refuses_a_binary_value_that_is_not_text_naming_the_column) {
  const std::string int8_42("\0\0\0\0\0\0\0\x2a", 8);
  // A composite's binary form: a column count, then (oid, length, bytes).
  const std::string pair("\0\0\0\x01\0\0\0\x17\0\0\0\x04\0\0\0\x07", 16);
  auto r = binary_row({{"n", pgpipe::oids::int8, int8_42},
                       {"name", pgpipe::oids::text, "Huế"},
                       {"mood", 70000, "vui"},  // a user type (an enum): its label
                       {"pair", 70001, pair}});  // a user composite
  const pgpipe::row row = r[0];
  auto e = thrown([&] { (void)row.at("n").text(); });
  EXPECT_EQ(e.code(), pgpipe::errc::type_mismatch);
  EXPECT_NE(std::string(e.what()).find("\"n\""), std::string::npos) << e.what();
  EXPECT_EQ(row.at("n").bytes(), int8_42);
  EXPECT_EQ(row.get<std::int64_t>("n"), 42);
  EXPECT_EQ(row.at("name").text(), "Huế");
  EXPECT_EQ(row.get<std::string>("mood"), "vui");
  EXPECT_EQ(row.at("mood").text(), "vui");
  auto c = thrown([&] { (void)row.get<std::string>("pair"); });
  EXPECT_EQ(c.code(), pgpipe::errc::type_mismatch);
  EXPECT_NE(std::string(c.what()).find("\"pair\""), std::string::npos) << c.what();
  auto t = thrown([&] { (void)row.at("pair").text(); });
  EXPECT_EQ(t.code(), pgpipe::errc::type_mismatch);
}
