// The probe through PgBouncer 1.18 (tests/support/pgbouncer): PgBouncer
// answers a wrong SCRAM password with 08P01 "SASL authentication failed",
// not PostgreSQL's 28P01, and the probe must still read it as a rejected
// password.
#include <gtest/gtest.h>

#include <string>

#include <pgpipe/scram.hpp>
#include "support/cluster_fixture.hpp"
#include "support/pgbouncer.hpp"

namespace scram = pgpipe::scram;

TEST(scram_probe_pgbouncer, a_wrong_password_is_a_rejected_password) {
  auto& pg = pgpipe::test::shared_cluster();
  pgpipe::test::pgbouncer_instance bouncer(pg);
  scram::probe_params p;
  p.conninfo = "host=127.0.0.1 sslmode=disable dbname=postgres port=" + std::to_string(bouncer.port()) +
               " user=" + pg.user();
  p.password = "not the password";
  const auto wrong = scram::probe(p);
  EXPECT_EQ(wrong.outcome, scram::probe_outcome::rejected) << wrong.client_message;
  EXPECT_EQ(wrong.sqlstate, "08P01") << wrong.server_message;
  EXPECT_TRUE(wrong.password_rejected) << wrong.sqlstate << " " << wrong.server_message;
  EXPECT_EQ(wrong.exit_code(), 1);

  p.password = pg.password();
  const auto right = scram::probe(p);
  EXPECT_EQ(right.outcome, scram::probe_outcome::authenticated) << right.client_message << right.server_message;
  EXPECT_FALSE(right.password_rejected);
  EXPECT_TRUE(right.server_signature_verified);
}
