// result::one() and result::opt(): the reads of a query that must return
// exactly one / at most one row, on PGresults built client-side with libpq's
// PQmakeEmptyPGresult/PQsetvalue: no server needed.
#include <pgpipe/result.hpp>

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <string>

namespace {

// A one-column (int4, text format) result with the values 1..rows.
pgpipe::result rows_of(int rows) {
  PGresult* r = PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK);
  std::string name = "n";
  PGresAttDesc attr{name.data(), 0, 0, 0, pgpipe::oids::int4, 4, -1};
  PQsetResultAttrs(r, 1, &attr);
  for (int i = 0; i < rows; ++i) {
    std::string v = std::to_string(i + 1);
    PQsetvalue(r, i, 0, v.data(), static_cast<int>(v.size()));
  }
  return pgpipe::result(r);
}

// The message of the pgpipe::error `read` throws, checking its code.
template <class Read>
std::string out_of_range_message(Read read) {
  try {
    read();
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::errc::out_of_range) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "did not throw";
  return {};
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

}  // namespace

TEST(ResultRowCount, OneGivesTheOnlyRow) {
  const auto r = rows_of(1);
  EXPECT_EQ(r.one().get<int>(0), 1);
}

TEST(ResultRowCount, OneRefusesNoRowAndSeveralNamingTheCount) {
  const auto none = rows_of(0);
  const std::string zero = out_of_range_message([&] { (void)none.one(); });
  EXPECT_TRUE(contains(zero, "exactly one row")) << zero;
  EXPECT_TRUE(contains(zero, "returned 0")) << zero;
  const auto three = rows_of(3);
  const std::string several = out_of_range_message([&] { (void)three.one(); });
  EXPECT_TRUE(contains(several, "returned 3")) << several;
}

TEST(ResultRowCount, OptGivesNothingOrTheRowAndRefusesSeveral) {
  EXPECT_FALSE(rows_of(0).opt().has_value());
  const auto r = rows_of(1);
  const auto row = r.opt();
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->get<int>(0), 1);
  const auto two = rows_of(2);
  const std::string several = out_of_range_message([&] { (void)two.opt(); });
  EXPECT_TRUE(contains(several, "at most one row")) << several;
  EXPECT_TRUE(contains(several, "returned 2")) << several;
}

TEST(ResultRowCount, AFailedQueryThrowsItsOwnErrorNotTheCount) {
  pgpipe::diagnostics d;
  d.sqlstate = "42P01";
  d.message = "relation \"missing\" does not exist";
  const pgpipe::result failed(pgpipe::make_sqlstate("42P01"), d);
  for (int which = 0; which < 2; ++which) {
    try {
      if (which == 0) (void)failed.one();
      else (void)failed.opt();
      ADD_FAILURE() << "a failed result's " << (which == 0 ? "one()" : "opt()") << " did not throw";
    } catch (const pgpipe::error& e) {
      EXPECT_EQ(pgpipe::sqlstate_of(e.code()), "42P01") << e.what();
    }
  }
}
