// What a failed statement tells its caller on the blocking driver: the
// server's fields in the diagnostics, and what() saying each thing once.
#include <pgpipe/blocking_pool.hpp>

#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace std::chrono_literals;

namespace {

using namespace pgpipe::test;  // the shared kit (tests/support)

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

std::size_t count(std::string_view hay, std::string_view needle) {
  std::size_t n = 0;
  for (auto p = hay.find(needle); p != std::string_view::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// The error `sql` fails with.
pgpipe::error failure_of(pgpipe::blocking_pool& pool, const std::string& sql) {
  try {
    (void)pool.exec(sql);
  } catch (const pgpipe::error& e) {
    return e;
  }
  ADD_FAILURE() << sql << ": no error";
  return pgpipe::error(pgpipe::errc::protocol_error, "no error");
}

}  // namespace

TEST(blocking_errors, unique_violation_names_its_constraint_and_says_its_message_once) {
  pgpipe::blocking_pool pool(params_for(shared_cluster().conninfo(), 1));
  (void)pool.exec("drop table if exists berrs_uniq");
  (void)pool.exec("create table berrs_uniq (id int primary key)");
  (void)pool.exec("insert into berrs_uniq values (1)");
  const pgpipe::error e = failure_of(pool, "insert into berrs_uniq values (1)");
  EXPECT_EQ(e.code(), pgpipe::make_sqlstate("23505")) << e.what();
  EXPECT_EQ(e.diag().constraint, "berrs_uniq_pkey") << e.what();
  EXPECT_EQ(e.diag().table, "berrs_uniq") << e.what();
  EXPECT_EQ(e.diag().schema, "public") << e.what();
  EXPECT_TRUE(contains(e.diag().detail, "Key (id)=(1) already exists")) << e.what();
  EXPECT_EQ(count(e.what(), "duplicate key value violates unique constraint"), 1u) << e.what();
  EXPECT_EQ(count(e.what(), "23505"), 1u) << e.what();
}

TEST(blocking_errors, check_violation_gives_the_constraint_and_column) {
  pgpipe::blocking_pool pool(params_for(shared_cluster().conninfo(), 1));
  (void)pool.exec("drop table if exists berrs_check");
  (void)pool.exec("create table berrs_check (n int not null constraint n_positive check (n > 0))");
  const pgpipe::error e = failure_of(pool, "insert into berrs_check values (-1)");
  EXPECT_EQ(e.code(), pgpipe::make_sqlstate("23514")) << e.what();
  EXPECT_TRUE(contains(e.code().message(), "check_violation")) << e.code().message();
  EXPECT_EQ(e.diag().constraint, "n_positive") << e.what();
  const pgpipe::error n = failure_of(pool, "insert into berrs_check values (null)");
  EXPECT_EQ(n.code(), pgpipe::make_sqlstate("23502")) << n.what();
  EXPECT_EQ(n.diag().column, "n") << n.what();
}

TEST(blocking_errors, wrong_password_is_28P01) {
  auto& pg = shared_cluster();
  const std::string secret = "not-the-pw-errs";
  auto p = params_for(pg.conninfo_without_password() + " password=" + secret, 1);
  p.acquire_timeout = 5s;
  pgpipe::blocking_pool pool(p);
  const pgpipe::error e = failure_of(pool, "select 1");
  EXPECT_EQ(pgpipe::sqlstate_of(e.code()), "28P01") << e.what();
  EXPECT_EQ(e.code(), pgpipe::errc_condition::auth_error) << e.what();
  EXPECT_EQ(e.diag().sqlstate, "28P01") << e.what();
  EXPECT_EQ(count(e.what(), "password authentication failed"), 1u) << e.what();
  EXPECT_FALSE(contains(e.what(), secret)) << e.what();
}
