// pgpipe's verifiers against a real PostgreSQL 15, both ways: what the
// server stores verifies with pgpipe (and pgpipe rebuilds it byte for byte
// from its salt), and what pgpipe makes lets libpq log in.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <string>
#include <vector>

#include <pgpipe/scram.hpp>
#include "support/cluster_fixture.hpp"

namespace scram = pgpipe::scram;

namespace {

struct password_case {
  const char* name;
  std::string password;
  scram::saslprep_status expected;
};

// Passwords that stay, that SASLprep changes, and that it rejects (hashed raw).
const std::vector<password_case>& cases() {
  static const std::vector<password_case> c = {
      {"ascii", "correct horse battery staple", scram::saslprep_status::unchanged_ascii},
      {"soft_hyphen", "I\xC2\xADX", scram::saslprep_status::prepared},              // -> "IX"
      {"roman_nine", "\xE2\x85\xA8-nine", scram::saslprep_status::prepared},         // U+2168 -> "IX"
      {"nbsp", "two\xC2\xA0words", scram::saslprep_status::prepared},                 // U+00A0 -> space
      {"decomposed", "caf" "e\xCC\x81", scram::saslprep_status::prepared},            // NFKC composes
      {"unassigned", "a\xC2\xAD\xC8\xA1", scram::saslprep_status::prohibited},        // U+0221: raw
      {"bidi", "\xD7\x90" "abc", scram::saslprep_status::prohibited},                 // RandAL + L: raw
      {"control", "\xC3\xA9\x07x", scram::saslprep_status::prohibited},               // U+0007: raw
      {"only_mapped", "\xC2\xAD\xC2\xAD", scram::saslprep_status::prohibited},        // maps to "": raw
  };
  return c;
}

std::string sql_literal(const std::string& s) {
  std::string out = "'";
  for (char ch : s) {
    if (ch == '\'') out += '\'';
    out += ch;
  }
  return out + "'";
}

bool libpq_login(const pgpipe::devcluster::cluster& pg, const std::string& user, const std::string& password) {
  const std::string port = std::to_string(pg.port());
  const char* keys[] = {"host", "port", "user", "password", "dbname", "sslmode", "connect_timeout", nullptr};
  const char* values[] = {"127.0.0.1", port.c_str(), user.c_str(), password.c_str(), "postgres", "disable", "10",
                          nullptr};
  PGconn* c = PQconnectdbParams(keys, values, 0);
  const bool ok = PQstatus(c) == CONNECTION_OK;
  PQfinish(c);
  return ok;
}

class scram_server : public ::testing::TestWithParam<password_case> {};

}  // namespace

TEST_P(scram_server, ServerMadeVerifierVerifiesWithPgpipe) {
  const auto& c = GetParam();
  auto& pg = pgpipe::test::shared_cluster();
  const std::string role = std::string("srv_") + c.name;
  ASSERT_EQ(scram::saslprep(c.password)->status, c.expected);
  pg.exec("DROP ROLE IF EXISTS " + role);
  pg.exec("SET password_encryption = 'scram-sha-256'; CREATE ROLE " + role + " LOGIN PASSWORD " +
          sql_literal(c.password));
  const std::string stored = pg.query_value("SELECT rolpassword FROM pg_authid WHERE rolname = '" + role + "'");
  auto v = scram::parse_verifier(stored);
  ASSERT_TRUE(v.has_value()) << v.error().message;
  EXPECT_TRUE(*scram::verify_password(c.password, *v));
  EXPECT_FALSE(*scram::verify_password(c.password + "x", *v));
  // Same salt and iterations give the same bytes the server stored.
  auto mine = scram::make_verifier(c.password, v->iterations, v->salt);
  ASSERT_TRUE(mine.has_value());
  EXPECT_EQ(mine->to_string(), stored);
  pg.exec("DROP ROLE " + role);
}

TEST_P(scram_server, PgpipeMadeVerifierLetsLibpqLogIn) {
  const auto& c = GetParam();
  auto& pg = pgpipe::test::shared_cluster();
  const std::string role = std::string("mine_") + c.name;
  auto v = scram::make_verifier(c.password);
  ASSERT_TRUE(v.has_value()) << v.error().message;
  pg.exec("DROP ROLE IF EXISTS " + role);
  pg.exec("CREATE ROLE " + role + " LOGIN PASSWORD " + sql_literal(v->to_string()));
  // The server keeps a verifier it is given as is.
  EXPECT_EQ(pg.query_value("SELECT rolpassword FROM pg_authid WHERE rolname = '" + role + "'"), v->to_string());
  EXPECT_TRUE(libpq_login(pg, role, c.password));
  EXPECT_FALSE(libpq_login(pg, role, c.password + "x"));
  pg.exec("DROP ROLE " + role);
}

INSTANTIATE_TEST_SUITE_P(Passwords, scram_server, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(scram_server_equivalence, SaslprepEquivalentPasswordsLogIn) {
  // Stored as "I<soft hyphen>X" by pgpipe; libpq logs in with U+2168 and
  // with plain "IX" because all three prepare to "IX".
  auto& pg = pgpipe::test::shared_cluster();
  auto v = scram::make_verifier("I\xC2\xADX");
  ASSERT_TRUE(v.has_value());
  pg.exec("DROP ROLE IF EXISTS equiv_role");
  pg.exec("CREATE ROLE equiv_role LOGIN PASSWORD " + sql_literal(v->to_string()));
  EXPECT_TRUE(libpq_login(pg, "equiv_role", "\xE2\x85\xA8"));
  EXPECT_TRUE(libpq_login(pg, "equiv_role", "IX"));
  EXPECT_FALSE(libpq_login(pg, "equiv_role", "I-X"));
  pg.exec("DROP ROLE equiv_role");
}

TEST(scram_server_equivalence, CustomIterationCountIsAcceptedAndUsed) {
  auto& pg = pgpipe::test::shared_cluster();
  auto v = scram::make_verifier("iterations please", 10000);
  ASSERT_TRUE(v.has_value());
  pg.exec("DROP ROLE IF EXISTS iter_role");
  pg.exec("CREATE ROLE iter_role LOGIN PASSWORD " + sql_literal(v->to_string()));
  EXPECT_TRUE(libpq_login(pg, "iter_role", "iterations please"));
  // The probe sees the count the verifier carries.
  scram::probe_params p;
  p.conninfo = "host=127.0.0.1 port=" + std::to_string(pg.port()) + " user=iter_role dbname=postgres sslmode=disable";
  auto r = scram::probe(p);
  EXPECT_EQ(r.iterations, 10000) << r.client_message;
  EXPECT_EQ(r.salt_length, scram::default_salt_length);
  pg.exec("DROP ROLE iter_role");
}
