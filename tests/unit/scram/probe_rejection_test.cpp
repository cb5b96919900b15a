// How the probe reads an ErrorResponse during authentication: a wrong
// password from PostgreSQL (28P01) and from PgBouncer (08P01, its code for
// any failed client login) are both a rejected password; other refusals
// are not.
#include <gtest/gtest.h>

#include <string>

#include "scram/probe_wire.hpp"

namespace {

using pgpipe::scram::detail::parse_error_fields;
using pgpipe::scram::detail::rejects_password;

// An ErrorResponse body as a server sends it: (type, text NUL)*, NUL.
std::string error_body(const std::string& sqlstate, const std::string& message) {
  std::string b;
  for (const auto& [type, text] : {std::pair<char, std::string>{'S', "FATAL"}, {'V', "FATAL"}, {'C', sqlstate},
                                   {'M', message}}) {
    b += type;
    b += text;
    b += '\0';
  }
  b += '\0';
  return b;
}

bool rejected(const std::string& sqlstate, const std::string& message) {
  return rejects_password(parse_error_fields(error_body(sqlstate, message)));
}

TEST(probe_rejection, postgresqls_28p01_is_a_rejected_password) {
  EXPECT_TRUE(rejected("28P01", "password authentication failed for user \"app\""));
}

TEST(probe_rejection, pgbouncers_08p01_for_a_failed_login_is_a_rejected_password) {
  // PgBouncer 1.18 and 1.25, SCRAM and cleartext/md5 client logins.
  EXPECT_TRUE(rejected("08P01", "SASL authentication failed"));
  EXPECT_TRUE(rejected("08P01", "password authentication failed"));
}

TEST(probe_rejection, other_refusals_are_not_a_password_verdict) {
  EXPECT_FALSE(rejected("08P01", "invalid SCRAM response"));
  EXPECT_FALSE(rejected("08P01", "bind message supplies 1 parameters, but prepared statement requires 2"));
  EXPECT_FALSE(rejected("28000", "no pg_hba.conf entry for host \"127.0.0.1\""));
  EXPECT_FALSE(rejected("28000", "pg_hba.conf rejects connection for host \"127.0.0.1\""));
  EXPECT_FALSE(rejected("3D000", "database \"nope\" does not exist"));
  EXPECT_FALSE(rejected("", "SASL authentication failed"));
}

}  // namespace
