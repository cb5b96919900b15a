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

TEST(probe_output, a_rejected_password_and_the_options_in_force_are_said) {
  pgpipe::scram::probe_report r;
  r.method = pgpipe::scram::auth_method::sasl;
  r.outcome = pgpipe::scram::probe_outcome::rejected;
  r.sqlstate = "08P01";
  r.server_message = "FATAL: SASL authentication failed";
  r.password_rejected = true;
  r.options_in_force = {"require_auth=scram-sha-256", "sslnegotiation=direct"};
  const std::string human = pgpipe::cli::render_human(r);
  EXPECT_NE(human.find("options set:     require_auth=scram-sha-256, sslnegotiation=direct\n"), std::string::npos) << human;
  EXPECT_NE(human.find("result:          password rejected by the server: 08P01 FATAL: SASL authentication failed"),
            std::string::npos)
      << human;
  const boost::json::value doc = boost::json::parse(pgpipe::cli::render_json(r));
  EXPECT_EQ(doc.at("password_rejected").as_bool(), true);
  EXPECT_EQ(doc.at("options_in_force").as_array().size(), 2u);

  r.options_in_force.clear();
  EXPECT_NE(pgpipe::cli::render_human(r).find("options set:     none (libpq's defaults)"), std::string::npos);
}

TEST(probe_output, a_refused_connection_string_exits_2) {
  pgpipe::scram::probe_report r;
  r.outcome = pgpipe::scram::probe_outcome::invalid_options;
  r.client_message = "invalid require_auth value: \"scram\"";
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_NE(pgpipe::cli::render_human(r).find("result:          connection string refused: invalid require_auth value"),
            std::string::npos);
}

}  // namespace
