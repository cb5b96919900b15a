// connect_error: which errors mean "no connection could be opened" (both
// pools give those the last connect attempt's message) and that message's words.
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

TEST(connect_error, the_text_names_the_attempts_reason) {
  EXPECT_EQ(pgpipe::detail::connect_error_text("connection refused"), "could not connect: connection refused");
}

}  // namespace
