// Ranges, multiranges, n-dimensional arrays and domains through a real
// server, both directions, the same scenarios for each driver: empty and
// unbounded ranges, infinite bounds, quoted timestamps in a session that is
// not UTC, arrays with NULLs and lower bounds other than 1, a ragged
// parameter, and domains read as their base type.
#include <pgpipe/array.hpp>
#include <pgpipe/async_client.hpp>
#include <pgpipe/blocking_pool.hpp>
#include <pgpipe/range.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/result_drivers.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace {

using namespace std::chrono;
using pgpipe::errc;
using pgpipe::range;
using pgpipe::test::shared_cluster;
using tstz = sys_time<microseconds>;
using grid = std::vector<std::vector<int>>;

pgpipe::pool_params params() {
  pgpipe::pool_params p;
  // Not UTC: a tstzrange's bounds are printed with the session's offset.
  p.conninfo = pgpipe::test::with_options(shared_cluster().conninfo(), "options='-c TimeZone=Asia/Kolkata'");
  p.max_size = 1;
  p.acquire_timeout = seconds(20);
  return p;
}

template <class D>
class ranges_arrays_domains : public ::testing::Test {
 protected:
  D d_{params()};
};
TYPED_TEST_SUITE(ranges_arrays_domains, pgpipe::test::result_drivers, pgpipe::test::driver_names);

TYPED_TEST(ranges_arrays_domains, ranges_the_server_prints_read_into_cpp) {
  auto r = this->d_.run(
      "select 'empty'::int4range, '(,5]'::int4range, '[2,)'::int8range, numrange(1.50, null, '(]'), "
      "tstzrange('2024-01-01 00:00:00+00', 'infinity', '[]'), daterange('2024-02-10', '2024-02-20', '[]'), "
      "tsrange('2024-01-01 10:00', '2024-01-01 11:00')");
  const auto row = r[0];
  EXPECT_TRUE(row.template get<range<int>>(0).empty());
  // Discrete ranges come back canonical: (,5] is (,6).
  EXPECT_EQ(row.template get<range<int>>(1), range<int>(std::nullopt, 6));
  EXPECT_EQ(row.template get<range<std::int64_t>>(2), range<std::int64_t>(2, std::nullopt));
  auto n = row.template get<range<pgpipe::numeric>>(3);
  EXPECT_EQ(n.lower()->str(), "1.50");
  EXPECT_FALSE(n.lower_inclusive());
  EXPECT_TRUE(n.upper_unbounded());
  auto t = row.template get<range<tstz>>(4);
  EXPECT_EQ(*t.lower(), tstz(sys_days(2024y / 1 / 1)));
  EXPECT_EQ(*t.upper(), tstz::max());  // infinite, not unbounded
  EXPECT_TRUE(t.upper_inclusive());
  EXPECT_EQ(row.template get<range<sys_days>>(5), range<sys_days>(sys_days(2024y / 2 / 10), sys_days(2024y / 2 / 21)));
  auto ts = row.template get<range<local_time<microseconds>>>(6);
  EXPECT_EQ(*ts.upper() - *ts.lower(), hours(1));
  // A range read as a plain type is a type mismatch.
  std::error_code ec;
  (void)row[1].template get<int>(ec);
  EXPECT_EQ(ec, errc::type_mismatch);
}

TYPED_TEST(ranges_arrays_domains, ranges_sent_come_back_as_the_server_holds_them) {
  const range<tstz> window(tstz(sys_days(2024y / 5 / 6) + hours(7)), tstz::max(), "[]");
  auto back = this->d_.run("select $1::tstzrange, upper_inf($1), lower($1) = '2024-05-06 12:30:00+05:30'", window);
  EXPECT_EQ(back[0].template get<range<tstz>>(0), window);
  EXPECT_FALSE(back[0].template get<bool>(1));  // 'infinity' is a bound, not an unbounded side
  EXPECT_TRUE(back[0].template get<bool>(2));
  // [1,5] is stored as [1,6); an empty range stays empty; typed parameters
  // need no cast.
  EXPECT_EQ(this->d_.template one<range<int>>("select $1 * int4range(0, 100)", range<int>(1, 5, "[]")),
            range<int>(1, 6));
  EXPECT_TRUE(this->d_.template one<range<int>>("select $1::int4range", range<int>()).empty());
  EXPECT_TRUE(this->d_.template one<bool>("select isempty($1)", range<std::int64_t>(3, 3)));
  const range<pgpipe::numeric> money(pgpipe::numeric("-0.005"), std::nullopt, "(]");
  EXPECT_EQ(this->d_.template one<range<pgpipe::numeric>>("select $1", money), money);
  const range<sys_days> days(std::nullopt, sys_days(1999y / 12 / 31));
  EXPECT_EQ(this->d_.template one<range<sys_days>>("select $1", days), days);
  EXPECT_EQ(this->d_.template one<std::string>("select $1::text", days), "(,1999-12-31)");
}

TYPED_TEST(ranges_arrays_domains, multiranges_sent_come_back_as_the_server_holds_them) {
  if (pgpipe::devcluster::cluster::server_major() < 14) GTEST_SKIP() << "multiranges came with PostgreSQL 14";
  using pgpipe::multirange;
  // Several ranges, out of order, two touching: the server sorts and merges
  // them ((5,7) is [6,7) canonical; [1,3) and [3,4] become [1,5)).
  const multirange<int> several{{range<int>(5, 7, "()"), range<int>(1, 3), range<int>(3, 4, "[]")}};
  EXPECT_EQ(this->d_.template one<std::string>("select $1::text", several), "{[1,5),[6,7)}");
  EXPECT_EQ(this->d_.template one<multirange<int>>("select $1", several),
            (multirange<int>{{range<int>(1, 5), range<int>(6, 7)}}));
  // The parameter is typed: no cast needed for a multirange operator.
  EXPECT_TRUE(this->d_.template one<bool>("select $1 @> 4", several));

  // Empty: no ranges, and empty ranges dropped.
  EXPECT_TRUE(this->d_.template one<bool>("select $1 = '{}'::int4multirange", multirange<int>{}));
  EXPECT_TRUE(this->d_.template one<multirange<int>>("select $1", multirange<int>{{range<int>()}}).ranges.empty());

  // Unbounded sides, and an infinite bound (a bound, not unbounded).
  const multirange<std::int64_t> open_ends{{range<std::int64_t>(std::nullopt, -5), range<std::int64_t>(10, std::nullopt)}};
  EXPECT_EQ(this->d_.template one<std::string>("select $1::text", open_ends), "{(,-5),[10,)}");
  EXPECT_EQ(this->d_.template one<multirange<std::int64_t>>("select $1", open_ends), open_ends);
  const multirange<tstz> until_forever{{range<tstz>(tstz(sys_days(2024y / 5 / 6)), tstz::max(), "[]")}};
  auto back = this->d_.run("select $1, upper($1) = 'infinity', upper_inf($1)", until_forever);
  EXPECT_EQ(back[0].template get<multirange<tstz>>(0), until_forever);
  EXPECT_TRUE(back[0].template get<bool>(1));
  EXPECT_FALSE(back[0].template get<bool>(2));

  // numeric goes as text (typed nummultirange), the rest above in binary.
  const multirange<pgpipe::numeric> money{{range<pgpipe::numeric>(pgpipe::numeric("1.5"), pgpipe::numeric("2.5"), "(]"),
                                           range<pgpipe::numeric>(pgpipe::numeric("-3"), pgpipe::numeric("-2"))}};
  EXPECT_EQ(this->d_.template one<std::string>("select $1::text", money), "{[-3,-2),(1.5,2.5]}");
  // Read back in both formats: text (run), binary (a typed read of numeric asks for it).
  EXPECT_EQ(this->d_.run("select $1", money)[0].template get<multirange<pgpipe::numeric>>(0).ranges.size(), 2u);
  EXPECT_EQ(this->d_.template one<multirange<pgpipe::numeric>>("select $1", money).ranges[1],
            money.ranges[0]);
  // A multirange read as another subtype's is a type mismatch.
  EXPECT_EQ(pgpipe::test::thrown([&] { (void)this->d_.template one<multirange<sys_days>>("select $1", several); }).code(),
            errc::type_mismatch);
}

TYPED_TEST(ranges_arrays_domains, arrays_of_ranges_read_as_vectors) {
  using V = std::vector<range<int>>;
  const V sent{range<int>(1, 2), range<int>(), range<int>(std::nullopt, 0)};
  EXPECT_EQ(this->d_.template one<V>("select $1::int4range[]", sent), (V{range<int>(1, 2), range<int>(), range<int>(std::nullopt, 0)}));
}

TYPED_TEST(ranges_arrays_domains, multiranges_read_as_vectors) {
  if (pgpipe::devcluster::cluster::server_major() < 14) GTEST_SKIP() << "multiranges came with PostgreSQL 14";
  using V = std::vector<range<int>>;
  EXPECT_EQ(this->d_.template one<V>("select '{[1,3), [2,5), [8,9]}'::int4multirange"),
            (V{range<int>(1, 5), range<int>(8, 10)}));
  EXPECT_EQ(this->d_.template one<V>("select '{}'::int4multirange"), V{});
  const V sent{range<int>(1, 2), range<int>(), range<int>(std::nullopt, 0)};
  EXPECT_EQ(this->d_.template one<V>("select range_agg(r) from unnest($1::int4range[]) r", sent),
            (V{range<int>(std::nullopt, 0), range<int>(1, 2)}));
  auto dates = this->d_.template one<std::vector<range<sys_days>>>(
      "select datemultirange(daterange('2024-01-01', '2024-01-05'), daterange('2024-02-01', null))");
  ASSERT_EQ(dates.size(), 2u);
  EXPECT_TRUE(dates[1].upper_unbounded());
}

TYPED_TEST(ranges_arrays_domains, n_dimensional_arrays_keep_shape_nulls_and_lower_bounds) {
  using opt_array = pgpipe::array<std::optional<int>>;
  auto a = this->d_.template one<opt_array>("select '[0:1][-1:0]={{1,NULL},{3,4}}'::int[]");
  EXPECT_EQ(a, opt_array({2, 2}, {0, -1}, {1, std::nullopt, 3, 4}));
  EXPECT_EQ(a.at({1, -1}), 3);
  // Sent back, the server holds the same shape.
  EXPECT_EQ(this->d_.template one<std::string>("select array_dims($1::int[]) || ' ' || $1::int[]::text", a),
            "[0:1][-1:0] [0:1][-1:0]={{1,NULL},{3,4}}");
  EXPECT_EQ(this->d_.template one<opt_array>("select $1::int[]", a), a);
  auto words = this->d_.template one<pgpipe::array<std::string>>(
      "select array[array[array['a,b', 'c\"d'], array['{', 'NULL']]]");
  EXPECT_EQ(words.dims(), (std::vector<std::int32_t>{1, 2, 2}));
  EXPECT_EQ(words.elements(), (std::vector<std::string>{"a,b", "c\"d", "{", "NULL"}));
  EXPECT_EQ(this->d_.template one<opt_array>("select '{}'::int[]").ndim(), 0u);
}

TYPED_TEST(ranges_arrays_domains, rectangular_2d_arrays_as_vectors_of_vectors) {
  const grid g{{1, 2, 3}, {4, 5, 6}};
  EXPECT_EQ(this->d_.template one<grid>("select $1::int[]", g), g);
  EXPECT_EQ(this->d_.template one<int>("select ($1::int[])[2][3]", g), 6);
  EXPECT_EQ(this->d_.template one<grid>("select array[[1.5, 2], [3, 4]]::float8[]::int[]"), (grid{{2, 2}, {3, 4}}));
  const std::vector<std::vector<std::string>> text{{"x y", "\"q\""}, {"", "NULL"}};
  EXPECT_EQ((this->d_.template one<std::vector<std::vector<std::string>>>("select $1::text[]", text)), text);
  // The wrong number of dimensions names the problem.
  auto e = pgpipe::test::thrown([&] { (void)this->d_.template one<grid>("select '{1,2}'::int[]"); });
  EXPECT_EQ(e.code(), errc::dimensions_mismatch);
  EXPECT_NE(std::string(e.what()).find("number of dimensions"), std::string::npos) << e.what();
  auto e1 = pgpipe::test::thrown([&] { (void)this->d_.template one<std::vector<int>>("select '{{1},{2}}'::int[]"); });
  EXPECT_EQ(e1.code(), errc::dimensions_mismatch);
  // A ragged parameter is refused before anything is sent.
  auto ragged = pgpipe::test::thrown([&] { (void)this->d_.run("select $1::int[]", grid{{1, 2}, {3}}); });
  EXPECT_EQ(ragged.code(), errc::invalid_argument);
  EXPECT_NE(std::string(ragged.what()).find("must be rectangular: row 1 has 1 element(s), row 0 has 2"),
            std::string::npos)
      << ragged.what();
  EXPECT_EQ(this->d_.template one<int>("select 7"), 7);  // the connection is still fine
}

TYPED_TEST(ranges_arrays_domains, domains_read_as_their_base_type) {
  (void)this->d_.run(
      "do $$ begin "
      "create domain positive_int as int check (value > 0); "
      "create domain short_text as varchar(10); "
      "create domain int_pair as int[] check (cardinality(value) = 2); "
      "create domain stay as daterange; "
      "exception when duplicate_object then null; end $$");
  // The server describes a domain column by its base type: the typed read's
  // OID check needs no catalog query.
  auto row = this->d_.template one<std::tuple<int, std::string, std::vector<int>, range<sys_days>>>(
      "select 5::positive_int, 'abc'::short_text, '{1,2}'::int_pair, '[2024-01-01,2024-01-03)'::stay");
  EXPECT_EQ(std::get<0>(row), 5);
  EXPECT_EQ(std::get<1>(row), "abc");
  EXPECT_EQ(std::get<2>(row), (std::vector<int>{1, 2}));
  EXPECT_EQ(std::get<3>(row), range<sys_days>(sys_days(2024y / 1 / 1), sys_days(2024y / 1 / 3)));
  EXPECT_EQ(this->d_.run("select 5::positive_int")[0][0].type(), pgpipe::oids::int4);
  // Parameters of the base type go into a domain; its check is the server's.
  EXPECT_EQ(this->d_.template one<int>("select $1::positive_int", 9), 9);
  auto e = pgpipe::test::thrown([&] { (void)this->d_.run("select $1::positive_int", -1); });
  EXPECT_EQ(pgpipe::sqlstate_of(e.code()), "23514");
}

}  // namespace
