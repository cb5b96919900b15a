// What a failed operation tells its caller on the async driver: a failed
// query's result keeps its SQLSTATE and message, and the server's fields
// reach the diagnostics.
#include <pgpipe/pgpipe.hpp>

#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"

#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <string>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

using namespace pgpipe::test;  // the shared kit (tests/support)

pgpipe::pool_params errors_params() { return params_for(shared_cluster().conninfo(), 2); }

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

}  // namespace

TEST(async_errors, reading_a_failed_querys_result_throws_its_sqlstate_and_message) {
  pgpipe::async_client client(errors_params());
  auto [ec, r] = client.async_query("selec 1", asio::use_future).get();
  ASSERT_EQ(ec, pgpipe::make_sqlstate("42601")) << ec.message();
  try {
    (void)r.value<int>();
    ADD_FAILURE() << "value<int>() on a failed query did not throw";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(pgpipe::sqlstate_of(e.code()), "42601") << e.what();
    EXPECT_EQ(e.diag().sqlstate, "42601") << e.what();
    EXPECT_TRUE(contains(e.what(), "syntax error at or near \"selec\"")) << e.what();
  }
  try {
    (void)r.empty();
    ADD_FAILURE() << "empty() on a failed query read as " << (r.native_handle() ? "a result" : "nothing");
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(pgpipe::sqlstate_of(e.code()), "42601") << e.what();
  }
}

namespace {

// Runs `sql` on the shared path and returns what came back.
std::pair<std::error_code, pgpipe::result> run(pgpipe::async_client& c, const std::string& sql) {
  auto [ec, r] = c.async_query(sql, asio::use_future).get();
  return {ec, std::move(r)};
}

void setup(pgpipe::async_client& c, const std::string& sql) {
  auto [ec, r] = run(c, sql);
  ASSERT_FALSE(ec) << sql << ": " << r.diag().to_string();
}

}  // namespace

TEST(async_errors, unique_violation_names_its_constraint_table_and_schema) {
  pgpipe::async_client client(errors_params());
  setup(client, "drop table if exists errs_uniq");
  setup(client, "create table errs_uniq (id int primary key)");
  setup(client, "insert into errs_uniq values (1)");
  auto [ec, r] = run(client, "insert into errs_uniq values (1)");
  ASSERT_EQ(ec, pgpipe::make_sqlstate("23505")) << ec.message();
  const pgpipe::diagnostics& d = r.diag();
  EXPECT_EQ(d.constraint, "errs_uniq_pkey") << d.to_string();
  EXPECT_EQ(d.table, "errs_uniq") << d.to_string();
  EXPECT_EQ(d.schema, "public") << d.to_string();
  EXPECT_TRUE(contains(d.detail, "Key (id)=(1) already exists")) << d.detail;
}

TEST(async_errors, check_violation_is_named_in_the_message_with_its_constraint) {
  pgpipe::async_client client(errors_params());
  setup(client, "drop table if exists errs_check");
  setup(client, "create table errs_check (n int not null constraint n_positive check (n > 0))");
  auto [ec, r] = run(client, "insert into errs_check values (-1)");
  ASSERT_EQ(ec, pgpipe::make_sqlstate("23514")) << ec.message();
  EXPECT_TRUE(contains(ec.message(), "23514")) << ec.message();
  EXPECT_TRUE(contains(ec.message(), "check_violation")) << ec.message();
  EXPECT_EQ(r.diag().constraint, "n_positive") << r.diag().to_string();
  EXPECT_EQ(r.diag().table, "errs_check") << r.diag().to_string();

  auto [nec, nr] = run(client, "insert into errs_check values (null)");
  ASSERT_EQ(nec, pgpipe::make_sqlstate("23502")) << nec.message();
  EXPECT_EQ(nr.diag().column, "n") << nr.diag().to_string();
  EXPECT_EQ(nr.diag().table, "errs_check") << nr.diag().to_string();
}

TEST(async_errors, domain_violation_names_the_datatype_and_syntax_errors_the_position) {
  pgpipe::async_client client(errors_params());
  setup(client, "drop domain if exists errs_positive");
  setup(client, "create domain errs_positive as int check (value > 0)");
  auto [ec, r] = run(client, "select (-1)::errs_positive");
  ASSERT_EQ(ec, pgpipe::make_sqlstate("23514")) << ec.message();
  EXPECT_EQ(r.diag().datatype, "errs_positive") << r.diag().to_string();
  EXPECT_EQ(r.diag().schema, "public") << r.diag().to_string();

  auto [sec, sr] = run(client, "select 1 from errs_no_such_table");
  ASSERT_EQ(sec, pgpipe::make_sqlstate("42P01")) << sec.message();
  EXPECT_EQ(sr.diag().position, 15) << sr.diag().to_string();  // 1-based, in characters
  auto [pec, pr] = run(client, "selec 1");
  ASSERT_EQ(pec, pgpipe::make_sqlstate("42601"));
  EXPECT_EQ(pr.diag().position, 1) << pr.diag().to_string();
}

TEST(async_errors, wrong_password_is_28P01_on_acquire_and_on_the_first_query) {
  auto& pg = shared_cluster();
  const std::string secret = "Wr0ng-S3cret-errs";
  auto params = params_for(pg.conninfo_without_password() + " password=" + secret, 1);
  params.acquire_timeout = 5s;
  pgpipe::async_client client(params);

  auto [aec, l] = client.async_acquire(asio::use_future).get();
  EXPECT_EQ(pgpipe::sqlstate_of(aec), "28P01") << aec.message();
  EXPECT_EQ(aec, pgpipe::errc_condition::connect_error) << aec.message();
  EXPECT_EQ(aec, pgpipe::errc_condition::auth_error) << aec.message();
  EXPECT_FALSE(l.valid());
  EXPECT_EQ(l.diag().sqlstate, "28P01") << l.diag().to_string();
  EXPECT_TRUE(contains(l.diag().message, "password authentication failed")) << l.diag().to_string();
  EXPECT_FALSE(contains(l.diag().to_string(), secret)) << l.diag().to_string();

  auto [qec, r] = client.async_query("select 1", asio::use_future).get();
  EXPECT_EQ(pgpipe::sqlstate_of(qec), "28P01") << qec.message();
  EXPECT_EQ(r.diag().sqlstate, "28P01") << r.diag().to_string();
  EXPECT_TRUE(contains(r.diag().message, "password authentication failed")) << r.diag().to_string();
  EXPECT_FALSE(contains(r.diag().to_string(), secret)) << r.diag().to_string();
}
