// connect_error: which errors mean "no connection could be opened" (both
// pools give those the last connect attempt's message), which of them no
// retry can fix (pool_core fails waiting callers at once), and the message's words.
#include "core/pool/connect_error.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

namespace {

using pgpipe::errc;
using pgpipe::make_error_code;

TEST(connect_error, connect_codes_and_server_refusals_are_connect_errors) {
  for (auto e : {errc::connect_failed, errc::auth_failed, errc::server_unreachable, errc::bad_conninfo})
    EXPECT_TRUE(pgpipe::detail::is_connect_error(make_error_code(e))) << make_error_code(e).message();
  EXPECT_TRUE(pgpipe::detail::is_connect_error(pgpipe::make_sqlstate("53300")));
  for (auto e : {errc::pool_timeout, errc::queue_full, errc::closed, errc::connection_lost, errc::not_sent})
    EXPECT_FALSE(pgpipe::detail::is_connect_error(make_error_code(e))) << make_error_code(e).message();
  EXPECT_FALSE(pgpipe::detail::is_connect_error({}));
}

TEST(connect_error, permanent_errors_are_those_a_retry_cannot_fix) {
  using pgpipe::detail::connect_failure_kind;
  using pgpipe::detail::kind_of_connect_error;
  constexpr auto permanent = connect_failure_kind::permanent;
  constexpr auto transient = connect_failure_kind::transient;
  EXPECT_EQ(kind_of_connect_error(make_error_code(errc::auth_failed), false), permanent);
  EXPECT_EQ(kind_of_connect_error(make_error_code(errc::bad_conninfo), false), permanent);
  EXPECT_EQ(kind_of_connect_error(pgpipe::make_sqlstate("28P01"), false), permanent) << "wrong password";
  EXPECT_EQ(kind_of_connect_error(pgpipe::make_sqlstate("28000"), false), permanent) << "no such role, pg_hba";
  EXPECT_EQ(kind_of_connect_error(pgpipe::make_sqlstate("3D000"), false), permanent) << "no such database";
  // The resolver's final answer: the name does not exist (the code is the
  // one a refused port gets; only the fact tells them apart).
  EXPECT_EQ(kind_of_connect_error(make_error_code(errc::server_unreachable), true), permanent);
  EXPECT_EQ(kind_of_connect_error(make_error_code(errc::server_unreachable), false), transient)
      << "refused, timed out, unreachable";
  EXPECT_EQ(kind_of_connect_error(pgpipe::make_sqlstate("53300"), false), transient) << "too many connections";
  EXPECT_EQ(kind_of_connect_error(pgpipe::make_sqlstate("57P03"), false), transient) << "starting up";
  EXPECT_EQ(kind_of_connect_error(make_error_code(errc::connect_failed), false), transient);
  EXPECT_EQ(kind_of_connect_error({}, false), transient);
}

TEST(connect_error, the_text_names_the_attempts_reason) {
  EXPECT_EQ(pgpipe::detail::connect_error_text("connection refused"), "could not connect: connection refused");
}

}  // namespace
