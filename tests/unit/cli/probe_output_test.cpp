// pgpipe-scram probe --json: a server's error message is not ours to trust
// (its encoding is the server's, and libpq passes the bytes through), yet the
// output must stay one valid JSON object a script can parse.
#include "cli/probe_output.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <string>

namespace {

TEST(probe_output, server_message_with_invalid_utf8_still_gives_valid_json) {
  pgpipe::scram::probe_report r;
  r.host = "127.0.0.1";
  r.port = "5432";
  r.user = "app";
  r.method = pgpipe::scram::auth_method::sasl;
  r.mechanisms = {"SCRAM-SHA-256"};
  r.outcome = pgpipe::scram::probe_outcome::rejected;
  r.sqlstate = "28P01";
  // Latin-1 'é' and a truncated 3-byte sequence, as a misconfigured server sends them.
  r.server_message = "password authentication failed for user \"caf\xE9\" \xE2\x82";

  const std::string out = pgpipe::cli::render_json(r);
  boost::json::error_code ec;
  const boost::json::value doc = boost::json::parse(out, ec);
  ASSERT_FALSE(ec) << ec.message() << ": " << out;
  EXPECT_EQ(doc.at("server_message").as_string(),
            "password authentication failed for user \"caf\xEF\xBF\xBD\" \xEF\xBF\xBD");
  EXPECT_EQ(doc.at("sqlstate").as_string(), "28P01");
  EXPECT_EQ(doc.at("outcome").as_string(), pgpipe::scram::to_string(r.outcome));
  EXPECT_EQ(doc.at("exit_code").as_int64(), r.exit_code());
  EXPECT_EQ(out.back(), '\n');
  EXPECT_EQ(out.find('\n'), out.size() - 1);  // one line
}

}  // namespace
