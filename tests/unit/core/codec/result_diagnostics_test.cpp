// A result keeps its diagnostics apart (a pointer, only when a field is
// set), so that moving a successful result moves no strings. What a reader
// sees must not change: every field survives moves; a result without
// diagnostics shows empty ones; the writable form works on any result.
#include <pgpipe/result.hpp>

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace {

pgpipe::diagnostics every_field() {
  pgpipe::diagnostics d;
  d.severity = "ERROR";
  d.sqlstate = "23505";
  d.message = "duplicate key value violates unique constraint \"t_pkey\"";
  d.detail = "Key (id)=(1) already exists.";
  d.hint = "a hint";
  d.context = "a context";
  d.schema = "public";
  d.table = "t";
  d.column = "id";
  d.datatype = "integer";
  d.constraint = "t_pkey";
  d.position = 7;
  d.client_message = "pgpipe's words";
  return d;
}

void expect_every_field(const pgpipe::diagnostics& d) {
  const pgpipe::diagnostics want = every_field();
  EXPECT_EQ(d.severity, want.severity);
  EXPECT_EQ(d.sqlstate, want.sqlstate);
  EXPECT_EQ(d.message, want.message);
  EXPECT_EQ(d.detail, want.detail);
  EXPECT_EQ(d.hint, want.hint);
  EXPECT_EQ(d.context, want.context);
  EXPECT_EQ(d.schema, want.schema);
  EXPECT_EQ(d.table, want.table);
  EXPECT_EQ(d.column, want.column);
  EXPECT_EQ(d.datatype, want.datatype);
  EXPECT_EQ(d.constraint, want.constraint);
  EXPECT_EQ(d.position, want.position);
  EXPECT_EQ(d.client_message, want.client_message);
}

TEST(result_diagnostics, every_field_survives_moves_through_each_constructor) {
  std::vector<pgpipe::result> rs;
  rs.emplace_back(every_field());
  rs.emplace_back(nullptr, every_field());
  rs.emplace_back(pgpipe::make_sqlstate("23505"), every_field());
  for (auto& r : rs) {
    pgpipe::result moved(std::move(r));
    pgpipe::result assigned;
    assigned = std::move(moved);
    expect_every_field(std::as_const(assigned).diag());
  }
}

TEST(result_diagnostics, one_field_alone_is_kept) {
  pgpipe::diagnostics d;
  d.position = 3;
  const pgpipe::result by_position(std::move(d));
  EXPECT_EQ(by_position.diag().position, 3);
  pgpipe::diagnostics c;
  c.constraint = "only_this";
  const pgpipe::result by_constraint(std::move(c));
  EXPECT_EQ(by_constraint.diag().constraint, "only_this");
}

TEST(result_diagnostics, a_result_without_diagnostics_reads_as_empty_and_can_be_written) {
  pgpipe::result ok;
  const pgpipe::diagnostics& seen = std::as_const(ok).diag();
  EXPECT_TRUE(seen.sqlstate.empty());
  EXPECT_TRUE(seen.message.empty());
  EXPECT_TRUE(seen.client_message.empty());
  EXPECT_EQ(seen.position, 0);
  ok.diag().client_message = "written later";
  EXPECT_EQ(std::as_const(ok).diag().client_message, "written later");
  // Writing one result's diagnostics leaves every other result's alone.
  const pgpipe::result other;
  EXPECT_TRUE(other.diag().client_message.empty());
}

TEST(result_diagnostics, a_failed_result_throws_its_diagnostics) {
  const pgpipe::result r(pgpipe::make_sqlstate("23505"), every_field());
  try {
    r.throw_if_failed();
    ADD_FAILURE() << "no exception";
  } catch (const pgpipe::error& e) {
    expect_every_field(e.diag());
  }
}

}  // namespace
