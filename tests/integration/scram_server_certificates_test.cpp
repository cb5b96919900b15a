// SCRAM channel binding (tls-server-end-point, RFC 5929 4.1) against the
// certificates servers use: a server per kind of certificate (RSA with
// SHA-256, RSA-PSS with SHA-512, ECDSA P-256 and P-384, Ed25519), and for
// each, pgpipe-scram's probe beside libpq's own connect with the same
// options. A user relies on: the probe binds wherever libpq binds (the
// server checks the binding, so authenticating with channel_binding=require
// proves the hash was right), and where nobody can bind (Ed25519: RFC 5929
// names no hash for it) the probe says so and what to do, instead of
// sending a choice the server rejects as a negotiation error.
#include <pgpipe/scram.hpp>

#include "support/cluster_fixture.hpp"
#include "support/tls_certs.hpp"

#include <gtest/gtest.h>

#include <libpq-fe.h>

#include <map>
#include <memory>
#include <string>

namespace {

namespace scram = pgpipe::scram;
using pgpipe::test::cert_kind;
using scram::probe_outcome;

// One server per kind, started on first use, stopped after the last test.
std::map<cert_kind, std::unique_ptr<pgpipe::devcluster::cluster>> servers;

class stop_servers : public ::testing::Environment {
 public:
  void TearDown() override { servers.clear(); }
};
[[maybe_unused]] auto* const env = ::testing::AddGlobalTestEnvironment(new stop_servers);

pgpipe::devcluster::cluster& server_with(cert_kind kind) {
  auto& s = servers[kind];
  if (!s) {
    s = pgpipe::test::fresh_cluster();
    pgpipe::test::enable_tls(*s, "127.0.0.1", kind);
    // A restart rather than the reload: the next connection is certain to
    // see the new certificate.
    s->restart();
  }
  return *s;
}

std::string conninfo_of(const pgpipe::devcluster::cluster& pg, const std::string& channel_binding) {
  return "host=127.0.0.1 port=" + std::to_string(pg.port()) + " dbname=postgres user=" + pg.user() +
         " sslmode=require channel_binding=" + channel_binding;
}

// libpq's own verdict: "" when it authenticated, else its message.
std::string libpq_result(const pgpipe::devcluster::cluster& pg, const std::string& channel_binding) {
  const std::string ci = conninfo_of(pg, channel_binding) + " password=" + pg.password();
  std::unique_ptr<PGconn, decltype(&PQfinish)> c(PQconnectdb(ci.c_str()), &PQfinish);
  if (PQstatus(c.get()) == CONNECTION_OK) return "";
  const std::string m = PQerrorMessage(c.get());
  return m.empty() ? "failed without a message" : m;
}

scram::probe_report probe_of(const pgpipe::devcluster::cluster& pg, const std::string& channel_binding) {
  scram::probe_params p;
  p.conninfo = conninfo_of(pg, channel_binding);
  p.password = pg.password();
  scram::probe_report r = scram::probe(p);
  for (const auto* field : {&r.client_message, &r.server_message, &r.session_error})
    EXPECT_EQ(field->find(pg.password()), std::string::npos) << *field;
  return r;
}

class scram_server_certificates : public ::testing::TestWithParam<cert_kind> {
 protected:
  static void SetUpTestSuite() {
    unsetenv("PGPASSWORD");
    setenv("PGPASSFILE", "/nonexistent/pgpipe-test-pgpass", 1);
  }
};

// RSA, RSA-PSS and ECDSA name their digest: both bind, with
// channel_binding=require and by default (prefer).
class scram_server_certificates_binding : public scram_server_certificates {};

TEST_P(scram_server_certificates_binding, the_probe_binds_where_libpq_binds) {
  auto& pg = server_with(GetParam());
  for (const std::string cb : {"require", "prefer"}) {
    SCOPED_TRACE("channel_binding=" + cb);
    EXPECT_EQ(libpq_result(pg, cb), "") << "libpq itself";
    const auto r = probe_of(pg, cb);
    EXPECT_EQ(r.outcome, probe_outcome::authenticated) << r.client_message << " | " << r.server_message;
    EXPECT_TRUE(r.tls);
    EXPECT_EQ(r.mechanism_used, "SCRAM-SHA-256-PLUS");
    EXPECT_EQ(r.channel_binding, "tls-server-end-point");
    EXPECT_TRUE(r.server_signature_verified);
  }
}

INSTANTIATE_TEST_SUITE_P(kinds, scram_server_certificates_binding,
                         ::testing::Values(cert_kind::rsa_sha256, cert_kind::rsa_pss_sha512,
                                           cert_kind::ecdsa_p384_sha384, cert_kind::ecdsa_p256_sha256),
                         [](const auto& info) { return std::string(pgpipe::test::name_of(info.param)); });

// Ed25519: the server offers SCRAM-SHA-256-PLUS (it has TLS), but nobody
// can compute the binding. libpq fails whenever it would bind; the probe
// must fail the same way, saying why and what to do, and never send "y"
// (the server would take it for a downgrade and refuse: 28000 "SCRAM
// channel binding negotiation error").
TEST(scram_server_certificates_ed25519, nobody_can_bind_and_the_probe_says_why_and_what_to_do) {
  auto& pg = server_with(cert_kind::ed25519);
  for (const std::string cb : {"require", "prefer"}) {
    SCOPED_TRACE("channel_binding=" + cb);
    const std::string libpq = libpq_result(pg, cb);
    EXPECT_NE(libpq.find("could not find digest for NID UNDEF"), std::string::npos) << "libpq itself: " << libpq;
    const auto r = probe_of(pg, cb);
    EXPECT_EQ(r.outcome, probe_outcome::client_error) << r.client_message << " | " << r.server_message;
    EXPECT_TRUE(r.sqlstate.empty()) << "nothing the server could refuse was sent: " << r.server_message;
    EXPECT_NE(r.client_message.find("ED25519"), std::string::npos) << r.client_message;
    EXPECT_NE(r.client_message.find("RFC 5929"), std::string::npos) << r.client_message;
    EXPECT_NE(r.client_message.find("could not find digest for NID UNDEF"), std::string::npos) << r.client_message;
    EXPECT_NE(r.client_message.find("channel_binding=disable"), std::string::npos) << r.client_message;
    EXPECT_EQ(r.client_message.find("negotiation"), std::string::npos) << r.client_message;
  }
  // Without binding both authenticate.
  EXPECT_EQ(libpq_result(pg, "disable"), "");
  const auto plain = probe_of(pg, "disable");
  EXPECT_EQ(plain.outcome, probe_outcome::authenticated) << plain.client_message << " | " << plain.server_message;
  EXPECT_EQ(plain.mechanism_used, "SCRAM-SHA-256");
  EXPECT_EQ(plain.channel_binding, "none");
}

}  // namespace
