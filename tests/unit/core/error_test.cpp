// The error model: categories, SQLSTATE round trips, conditions, redaction.
#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

namespace {

using pgpipe::errc;
using pgpipe::errc_condition;

TEST(error, client_codes_carry_their_category_and_message) {
  std::error_code ec = errc::pool_timeout;
  EXPECT_EQ(ec.category(), pgpipe::client_category());
  EXPECT_STREQ(ec.category().name(), "pgpipe");
  EXPECT_NE(ec.message().find("acquire timeout"), std::string::npos);
}

TEST(error, sqlstate_round_trips_and_names_known_codes) {
  auto ec = pgpipe::make_sqlstate("22012");
  EXPECT_EQ(pgpipe::sqlstate_of(ec), "22012");
  EXPECT_EQ(ec, pgpipe::make_sqlstate("22012"));
  EXPECT_NE(ec, pgpipe::make_sqlstate("22003"));
  EXPECT_EQ(ec.message(), "SQLSTATE 22012 (division_by_zero)");
  EXPECT_EQ(pgpipe::sqlstate_of(pgpipe::make_sqlstate("08P01")), "08P01");
  EXPECT_EQ(pgpipe::make_sqlstate("ZZZZZ").message(), "SQLSTATE ZZZZZ");
}

TEST(error, malformed_sqlstate_maps_to_internal_error) {
  EXPECT_EQ(pgpipe::sqlstate_of(pgpipe::make_sqlstate("2201")), "XX000");
  EXPECT_EQ(pgpipe::sqlstate_of(pgpipe::make_sqlstate("22o12")), "XX000");
  EXPECT_EQ(pgpipe::sqlstate_of(errc::closed), "");
}

TEST(error, conditions_classify_codes) {
  EXPECT_EQ(std::error_code(errc::not_sent), errc_condition::connection_lost);
  EXPECT_EQ(std::error_code(errc::connection_lost), errc_condition::connection_lost);
  EXPECT_NE(std::error_code(errc::closed), errc_condition::connection_lost);
  EXPECT_EQ(std::error_code(errc::pool_timeout), errc_condition::timeout);
  EXPECT_EQ(pgpipe::make_sqlstate("42P01"), errc_condition::server_error);
  EXPECT_EQ(std::error_code(errc::auth_failed), errc_condition::connect_error);
  EXPECT_NE(std::error_code(errc::pool_timeout), errc_condition::connect_error);
}

TEST(error, every_sqlstate_postgresql_defines_is_named_and_others_by_class) {
  EXPECT_EQ(pgpipe::make_sqlstate("23514").message(), "SQLSTATE 23514 (check_violation)");
  EXPECT_EQ(pgpipe::make_sqlstate("2BP01").message(), "SQLSTATE 2BP01 (dependent_objects_still_exist)");
  EXPECT_EQ(pgpipe::make_sqlstate("P0001").message(), "SQLSTATE P0001 (raise_exception)");
  // A code the server may add later: its class still says what kind it is.
  EXPECT_EQ(pgpipe::make_sqlstate("23Z99").message(), "SQLSTATE 23Z99 (class 23: Integrity Constraint Violation)");
}

TEST(error, authorization_sqlstates_are_auth_and_connect_errors) {
  for (const char* s : {"28P01", "28000"}) {
    const auto ec = pgpipe::make_sqlstate(s);
    EXPECT_EQ(ec, errc_condition::auth_error) << s;
    EXPECT_EQ(ec, errc_condition::connect_error) << s;
    EXPECT_EQ(ec, errc_condition::server_error) << s;
  }
  EXPECT_EQ(std::error_code(errc::auth_failed), errc_condition::auth_error);
  EXPECT_EQ(pgpipe::make_sqlstate("3D000"), errc_condition::connect_error);
  EXPECT_NE(pgpipe::make_sqlstate("3D000"), errc_condition::auth_error);
  EXPECT_NE(pgpipe::make_sqlstate("23505"), errc_condition::connect_error);
  EXPECT_NE(std::error_code(errc::server_unreachable), errc_condition::auth_error);
}

TEST(error, what_says_the_message_and_the_code_once) {
  pgpipe::diagnostics d;
  d.severity = "ERROR";
  d.sqlstate = "23505";
  d.message = "duplicate key value violates unique constraint \"t_pkey\"";
  d.detail = "Key (id)=(1) already exists.";
  const pgpipe::error e(pgpipe::make_sqlstate("23505"), d);
  const std::string w = e.what();
  EXPECT_EQ(w, "ERROR 23505: duplicate key value violates unique constraint \"t_pkey\" "
               "(detail: Key (id)=(1) already exists.)");
}

TEST(error, may_have_executed_distinguishes_written_from_not_sent) {
  EXPECT_TRUE(pgpipe::may_have_executed(errc::connection_lost));
  EXPECT_TRUE(pgpipe::may_have_executed(errc::query_timeout));
  EXPECT_FALSE(pgpipe::may_have_executed(errc::not_sent));
  EXPECT_FALSE(pgpipe::may_have_executed(errc::pool_timeout));
  EXPECT_TRUE(pgpipe::is_connection_lost(errc::not_sent));
  EXPECT_FALSE(pgpipe::is_connection_lost(errc::query_timeout));
}

TEST(error, exception_keeps_server_fields_apart_from_client_message) {
  pgpipe::diagnostics d;
  d.severity = "ERROR";
  d.sqlstate = "22012";
  d.message = "division by zero";
  pgpipe::error e(pgpipe::make_sqlstate(d.sqlstate), d);
  EXPECT_EQ(e.code(), pgpipe::make_sqlstate("22012"));
  EXPECT_EQ(e.diag().message, "division by zero");
  EXPECT_TRUE(e.diag().client_message.empty());
  EXPECT_NE(std::string(e.what()).find("ERROR 22012: division by zero"), std::string::npos);

  pgpipe::error c(errc::pool_timeout, "waited 200 ms");
  EXPECT_FALSE(c.diag().has_server_error());
  EXPECT_NE(std::string(c.what()).find("waited 200 ms"), std::string::npos);
}

TEST(redact, keyword_value_passwords_are_masked) {
  EXPECT_EQ(pgpipe::redact_conninfo("host=db password=hunter2 user=app"), "host=db password=******** user=app");
  EXPECT_EQ(pgpipe::redact_conninfo("password = 'it\\'s a secret' dbname=x"),
            "password = ******** dbname=x")
      << "quoted values with escapes are masked whole";
  EXPECT_EQ(pgpipe::redact_conninfo("host=db"), "host=db");
  EXPECT_EQ(pgpipe::redact_conninfo("passwordx=keep password=drop"), "passwordx=keep password=********");
}

TEST(redact, uri_passwords_are_masked) {
  EXPECT_EQ(pgpipe::redact_conninfo("postgresql://app:hunter2@db:5432/x?sslmode=require"),
            "postgresql://app:********@db:5432/x?sslmode=require");
  EXPECT_EQ(pgpipe::redact_conninfo("postgres://db/x?user=app&password=hunter2&sslmode=disable"),
            "postgres://db/x?user=app&password=********&sslmode=disable");
  EXPECT_EQ(pgpipe::redact_conninfo("postgresql://app@db/x"), "postgresql://app@db/x");
}

TEST(redact, secret_is_scrubbed_from_any_text) {
  EXPECT_EQ(pgpipe::redact_secret("FATAL: password s3cret wrong; s3cret", "s3cret"),
            "FATAL: password ******** wrong; ********");
  EXPECT_EQ(pgpipe::redact_secret("nothing here", ""), "nothing here");
}

}  // namespace
