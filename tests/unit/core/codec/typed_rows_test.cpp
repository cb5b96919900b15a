// Typed reads (result::as/as_opt/rows_as/to_vector, row::as) on results built
// client-side, and the shape check on bare metadata: no server.
#include <pgpipe/result.hpp>

#include "support/made_result.hpp"

#include <boost/describe/class.hpp>
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace {

using pgpipe_test::make_rows;
namespace oids = pgpipe::oids;

struct user {
  std::int64_t id = 0;
  std::string name;
  std::optional<std::string> email;
};
BOOST_DESCRIBE_STRUCT(user, (), (id, name, email))

struct point {  // a plain aggregate: by position
  std::int32_t x = 0;
  std::optional<double> y;
};

// Counts how often its type is checked, to see that a result is checked once.
struct counted {
  std::string text;
};
int accepts_calls = 0;

pgpipe::result users() {
  return make_rows({{"id", oids::int8}, {"name", oids::text}, {"email", oids::text}},
                   {{"1", "An", "an@example.org"}, {"2", "Bình", std::nullopt}});
}

template <class F>
pgpipe::error thrown(F&& f) {
  try {
    f();
  } catch (const pgpipe::error& e) {
    return e;
  }
  ADD_FAILURE() << "no pgpipe::error thrown";
  return pgpipe::error(pgpipe::make_error_code(pgpipe::errc::protocol_error), "none");
}

}  // namespace

template <>
struct pgpipe::field_traits<counted> {
  static bool accepts(pgpipe::type_oid t) {
    ++accepts_calls;
    return t == pgpipe::oids::text;
  }
  static std::error_code decode(const pgpipe::field_value& v, counted& out) {
    out.text = std::string(v.data);
    return {};
  }
};

static_assert(pgpipe::row_kind_of<user> == pgpipe::row_kind::described);
static_assert(pgpipe::row_kind_of<point> == pgpipe::row_kind::aggregate);
static_assert(pgpipe::row_kind_of<std::tuple<int, std::string>> == pgpipe::row_kind::tuple);
static_assert(pgpipe::row_kind_of<std::optional<std::string>> == pgpipe::row_kind::single_field);
static_assert(!pgpipe::row_type<int*>);

TEST(typed_rows, described_struct_reads_by_name_whatever_the_column_order) {
  auto r = make_rows({{"email", oids::varchar}, {"id", oids::int4}, {"name", oids::text}},
                     {{"a@x", "7", "Chi"}, {std::nullopt, "8", "Dũng"}});
  std::vector<user> v = r.to_vector<user>();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].id, 7);
  EXPECT_EQ(v[0].name, "Chi");
  EXPECT_EQ(v[0].email, "a@x");
  EXPECT_EQ(v[1].id, 8);
  EXPECT_EQ(v[1].name, "Dũng");
  EXPECT_FALSE(v[1].email.has_value());
}

TEST(typed_rows, rows_as_iterates_every_row_in_order) {
  auto r = users();
  std::vector<std::int64_t> ids;
  std::vector<bool> has_email;
  for (const user& u : r.rows_as<user>()) {
    ids.push_back(u.id);
    has_email.push_back(u.email.has_value());
  }
  EXPECT_EQ(ids, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(has_email, (std::vector<bool>{true, false}));
  EXPECT_EQ(r.rows_as<user>().size(), 2u);
}

TEST(typed_rows, rows_as_on_a_temporary_result_keeps_it) {
  std::vector<std::string> names;
  for (const user& u : users().rows_as<user>()) names.push_back(u.name);
  EXPECT_EQ(names, (std::vector<std::string>{"An", "Bình"}));
}

TEST(typed_rows, tuples_and_aggregates_read_by_position) {
  auto r = make_rows({{"a", oids::int4}, {"b", oids::float8}}, {{"3", "0.5"}, {"4", std::nullopt}});
  auto t = r.to_vector<std::tuple<std::int32_t, std::optional<double>>>();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(std::get<0>(t[1]), 4);
  EXPECT_FALSE(std::get<1>(t[1]).has_value());
  auto p = r.to_vector<point>();
  EXPECT_EQ(p[0].x, 3);
  EXPECT_EQ(p[0].y, 0.5);
  EXPECT_EQ(r[1].as<point>().x, 4);
}

TEST(typed_rows, one_field_types_read_a_one_column_result) {
  auto r = make_rows({{"n", oids::text}}, {{"x"}, {std::nullopt}});
  EXPECT_EQ(r.to_vector<std::optional<std::string>>(), (std::vector<std::optional<std::string>>{"x", std::nullopt}));
}

TEST(typed_rows, binary_columns_decode_as_binary) {
  const std::string eight_be("\0\0\0\0\0\0\1\2", 8);
  auto r = make_rows({{"id", oids::int8, pgpipe::wire_format::binary}, {"name", oids::text}, {"email", oids::text}},
                     {{eight_be, "b", std::nullopt}});
  EXPECT_EQ(r.as<user>().id, 258);
}

TEST(typed_rows, as_wants_exactly_one_row_and_as_opt_at_most_one) {
  auto two = users();
  auto e = thrown([&] { (void)two.as<user>(); });
  EXPECT_EQ(e.code(), pgpipe::errc::out_of_range);
  EXPECT_NE(std::string(e.what()).find("exactly one row, the query returned 2"), std::string::npos) << e.what();
  EXPECT_EQ(thrown([&] { (void)two.as_opt<user>(); }).code(), pgpipe::errc::out_of_range);

  auto none = make_rows({{"id", oids::int8}, {"name", oids::text}, {"email", oids::text}}, {});
  EXPECT_FALSE(none.as_opt<user>().has_value());
  EXPECT_EQ(thrown([&] { (void)none.as<user>(); }).code(), pgpipe::errc::out_of_range);
  EXPECT_TRUE(none.to_vector<user>().empty());
}

TEST(typed_rows, missing_extra_and_twice_named_columns_are_all_named) {
  auto r = make_rows({{"id", oids::int8}, {"nick", oids::text}, {"email", oids::text}, {"email", oids::text}}, {});
  auto e = thrown([&] { (void)r.to_vector<user>(); });
  EXPECT_EQ(e.code(), pgpipe::errc::columns_mismatch);
  const std::string w = e.what();
  EXPECT_NE(w.find("no column for field \"name\""), std::string::npos) << w;
  EXPECT_NE(w.find("column 1 (\"nick\") has no field"), std::string::npos) << w;
  EXPECT_NE(w.find("column \"email\" appears more than once"), std::string::npos) << w;
}

TEST(typed_rows, a_column_count_that_differs_fails_by_position) {
  auto r = make_rows({{"a", oids::int4}}, {{"1"}});
  auto e = thrown([&] { (void)r.to_vector<point>(); });
  EXPECT_EQ(e.code(), pgpipe::errc::columns_mismatch);
  EXPECT_NE(std::string(e.what()).find("1 column(s) (\"a\"), the row type has 2 field(s)"), std::string::npos)
      << e.what();
}

TEST(typed_rows, a_type_mismatch_names_the_field_the_column_and_both_types) {
  auto r = make_rows({{"id", oids::text}, {"name", oids::text}, {"email", oids::text}}, {{"1", "a", "b"}});
  auto e = thrown([&] { (void)r.rows_as<user>(); });
  EXPECT_EQ(e.code(), pgpipe::errc::type_mismatch);
  EXPECT_NE(std::string(e.what()).find("field \"id\" from column 0 (\"id\", type text, read as int64_t)"),
            std::string::npos)
      << e.what();
}

TEST(typed_rows, the_shape_is_checked_before_any_row_is_read) {
  // The only row holds junk for id: the shape error must come first (an
  // extra column), not a conversion error from the row.
  auto r = make_rows({{"id", oids::int8}, {"name", oids::text}, {"email", oids::text}, {"x", oids::text}},
                     {{"junk", "a", "b", "c"}});
  EXPECT_EQ(thrown([&] { (void)r.rows_as<user>(); }).code(), pgpipe::errc::columns_mismatch);
  EXPECT_EQ(thrown([&] { (void)r.as<user>(); }).code(), pgpipe::errc::columns_mismatch);
  auto empty_but_wrong = make_rows({{"id", oids::int8}}, {});
  EXPECT_EQ(thrown([&] { (void)empty_but_wrong.as_opt<user>(); }).code(), pgpipe::errc::columns_mismatch);
  // Not "expected exactly one row": the row type is wrong whatever the count.
  EXPECT_EQ(thrown([&] { (void)empty_but_wrong.as<user>(); }).code(), pgpipe::errc::columns_mismatch);
}

TEST(typed_rows, the_shape_is_checked_once_per_result_not_per_row) {
  auto r = make_rows({{"c", oids::text}}, {{"a"}, {"b"}, {"c"}, {"d"}});
  accepts_calls = 0;
  std::string all;
  for (const auto& c : r.rows_as<std::tuple<counted>>()) all += std::get<0>(c).text;
  EXPECT_EQ(all, "abcd");
  EXPECT_EQ(accepts_calls, 1);
  accepts_calls = 0;
  EXPECT_EQ(r.to_vector<counted>().size(), 4u);
  EXPECT_EQ(accepts_calls, 1);
}

TEST(typed_rows, null_into_a_non_optional_field_names_the_row_and_column) {
  auto r = make_rows({{"id", oids::int8}, {"name", oids::text}, {"email", oids::text}},
                     {{"1", "a", std::nullopt}, {"2", std::nullopt, std::nullopt}});
  auto e = thrown([&] { (void)r.to_vector<user>(); });
  EXPECT_EQ(e.code(), pgpipe::errc::null_value);
  EXPECT_NE(std::string(e.what()).find("field \"name\" from column 1 (\"name\", type text, read as std::string) of row 1"),
            std::string::npos)
      << e.what();

  // In a loop, the row before the bad one is read; the bad one throws from ++.
  int seen = 0;
  auto loop = [&] {
    for (const user& u : r.rows_as<user>()) {
      EXPECT_EQ(u.id, 1);
      ++seen;
    }
  };
  EXPECT_EQ(thrown(loop).code(), pgpipe::errc::null_value);
  EXPECT_EQ(seen, 1);
}

TEST(typed_rows, a_value_that_is_not_one_fails_with_conversion_error) {
  auto r = make_rows({{"id", oids::int8}, {"name", oids::text}, {"email", oids::text}}, {{"12x", "a", "b"}});
  auto e = thrown([&] { (void)r.as<user>(); });
  EXPECT_EQ(e.code(), pgpipe::errc::conversion_error);
  EXPECT_NE(std::string(e.what()).find("of row 0"), std::string::npos) << e.what();
}

TEST(typed_rows, a_failed_result_throws_its_own_error) {
  pgpipe::diagnostics d;
  d.sqlstate = "42P01";
  d.message = "relation \"nope\" does not exist";
  pgpipe::result failed(pgpipe::make_sqlstate("42P01"), d);
  EXPECT_EQ(thrown([&] { (void)failed.to_vector<user>(); }).code(), pgpipe::make_sqlstate("42P01"));
  EXPECT_EQ(thrown([&] { (void)failed.rows_as<user>(); }).code(), pgpipe::make_sqlstate("42P01"));
  EXPECT_EQ(thrown([&] { (void)failed.as_opt<user>(); }).code(), pgpipe::make_sqlstate("42P01"));
}
