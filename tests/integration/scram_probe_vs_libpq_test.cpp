// The probe against the libpq it imitates: the same connection strings go
// to PQconnectdb (the libpq this binary loaded: Debian's 15 in .ci/run,
// PostgreSQL 18's own in .ci/compat) and to scram::probe, against one
// server, and every accept/refuse must agree. Where libpq refuses for a
// requirement of the string (require_auth, sslnegotiation, an invalid
// value...), the probe must say it in libpq's words. Options that a libpq
// does not know are refused by both, which is the answer for libpq 15.
#include <gtest/gtest.h>

#include <libpq-fe.h>

#include <memory>
#include <string>
#include <vector>

#include <pgpipe/scram.hpp>
#include "support/cluster_fixture.hpp"
#include "support/tls_certs.hpp"

namespace scram = pgpipe::scram;

namespace {

constexpr const char* password = "side by side \xC3\xA9";

struct server {
  std::unique_ptr<pgpipe::devcluster::cluster> pg;
};

// TLS on; one role per hba method, each reachable with and without TLS.
server& the_server() {
  static server* s = [] {
    auto* srv = new server;
    srv->pg = pgpipe::test::fresh_cluster();
    auto& pg = *srv->pg;
    pgpipe::test::enable_tls(pg, "localhost");
    const std::string pw = std::string("'") + password + "'";
    pg.exec("SET password_encryption = 'scram-sha-256';"
            "CREATE ROLE v_trust LOGIN; CREATE ROLE v_password LOGIN PASSWORD " + pw + ";"
            "CREATE ROLE v_scram LOGIN PASSWORD " + pw + ";"
            "SET password_encryption = 'md5'; CREATE ROLE v_md5 LOGIN PASSWORD " + pw + ";");
    pg.write_hba("host  all v_trust    127.0.0.1/32 trust\n"
                 "host  all v_password 127.0.0.1/32 password\n"
                 "host  all v_md5      127.0.0.1/32 md5\n"
                 "host  all v_scram    127.0.0.1/32 scram-sha-256\n"
                 "local all all                     scram-sha-256\n"
                 "host  all all        127.0.0.1/32 scram-sha-256\n");
    pg.reload();
    return srv;
  }();
  return *s;
}

class stop_server : public ::testing::Environment {
 public:
  void TearDown() override { the_server().pg.reset(); }
};
[[maybe_unused]] auto* const env = ::testing::AddGlobalTestEnvironment(new stop_server);

struct verdict {
  bool accepted = false;
  std::string message;
};

std::string one_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (auto& c : s) c = c == '\n' ? ' ' : c;
  return s;
}

verdict libpq_verdict(const std::string& conninfo) {
  std::unique_ptr<PGconn, decltype(&PQfinish)> c(PQconnectdb(conninfo.c_str()), &PQfinish);
  verdict v;
  v.accepted = c && PQstatus(c.get()) == CONNECTION_OK;
  if (c) v.message = one_line(PQerrorMessage(c.get()));
  return v;
}

verdict probe_verdict(const std::string& conninfo, scram::probe_report& r) {
  scram::probe_params p;
  p.conninfo = conninfo;
  p.allow_cleartext = true;  // as libpq: the comparison is about what is refused, not about leaking
  r = scram::probe(p);
  verdict v;
  v.accepted = r.outcome == scram::probe_outcome::authenticated && r.session_error.empty();
  v.message = r.client_message.empty() ? r.sqlstate + " " + r.server_message : r.client_message;
  return v;
}

struct side_by_side_case {
  const char* user;
  const char* options;
  /// libpq's refusal is a requirement of the string: the probe's message
  /// must be libpq's (libpq prefixes it with the server it was connecting to).
  bool same_words = false;
};

// Authentication and TLS negotiation options, as users combine them.
const side_by_side_case cases[] = {
    {"v_scram", "sslmode=disable"},
    {"v_scram", "sslmode=require"},
    {"v_scram", "sslmode=require channel_binding=require"},
    {"v_scram", "sslmode=disable channel_binding=require"},
    {"v_trust", "sslmode=require channel_binding=require", true},
    {"v_md5", "sslmode=disable channel_binding=require", true},
    {"v_scram", "sslmode=disable password=wrong"},
    // require_auth (libpq 16+): single methods, lists, negations, none.
    {"v_scram", "sslmode=require require_auth=scram-sha-256"},
    {"v_scram", "sslmode=disable require_auth=scram-sha-256"},
    {"v_scram", "sslmode=require require_auth=password", true},
    {"v_scram", "sslmode=require require_auth=md5,password", true},
    {"v_scram", "sslmode=require require_auth=!scram-sha-256", true},
    {"v_scram", "sslmode=require require_auth=none", true},
    {"v_scram", "sslmode=require require_auth=gss", true},
    {"v_scram", "sslmode=require require_auth=sspi", true},
    {"v_scram", "sslmode=require require_auth=oauth", true},
    {"v_scram", "sslmode=require require_auth=!password,!md5"},
    {"v_scram", "sslmode=require require_auth=none,scram-sha-256"},
    {"v_md5", "sslmode=disable require_auth=md5"},
    {"v_md5", "sslmode=disable require_auth=scram-sha-256", true},
    {"v_md5", "sslmode=disable require_auth=!md5", true},
    {"v_password", "sslmode=disable require_auth=password"},
    {"v_password", "sslmode=disable require_auth=!password", true},
    {"v_password", "sslmode=disable require_auth=md5,scram-sha-256", true},
    {"v_trust", "sslmode=disable require_auth=none"},
    {"v_trust", "sslmode=disable require_auth=scram-sha-256", true},
    {"v_trust", "sslmode=disable require_auth=!none", true},
    {"v_trust", "sslmode=disable require_auth=!password"},
    {"v_trust", "sslmode=disable require_auth=scram-sha-256,none"},
    {"v_scram", "sslmode=require require_auth=scram", true},
    {"v_scram", "sslmode=require require_auth=md5,md5", true},
    {"v_scram", "sslmode=require require_auth=!md5,password", true},
    {"v_scram", "sslmode=require require_auth=md5,!password", true},
    // sslnegotiation (libpq 17+): direct TLS needs PostgreSQL 17+.
    {"v_scram", "sslmode=require sslnegotiation=postgres"},
    {"v_scram", "sslmode=require sslnegotiation=direct"},
    {"v_scram", "sslmode=verify-ca sslnegotiation=direct"},
    {"v_scram", "sslmode=prefer sslnegotiation=direct", true},
    {"v_scram", "sslmode=disable sslnegotiation=direct", true},
    {"v_scram", "sslmode=require sslnegotiation=sometimes", true},
    // Protocol versions (libpq 18+): PostgreSQL 18 speaks 3.2.
    {"v_scram", "sslmode=disable max_protocol_version=3.2"},
    {"v_scram", "sslmode=disable max_protocol_version=latest"},
    {"v_scram", "sslmode=disable max_protocol_version=3.0"},
    {"v_scram", "sslmode=disable min_protocol_version=3.2", true},
    {"v_scram", "sslmode=disable min_protocol_version=3.0 max_protocol_version=3.2"},
    {"v_scram", "sslmode=disable min_protocol_version=3.2 max_protocol_version=3.0", true},
    {"v_scram", "sslmode=disable max_protocol_version=3.1", true},
    // sslcertmode (libpq 16+): the probe never has a client certificate.
    {"v_scram", "sslmode=require sslcertmode=require", true},
    {"v_scram", "sslmode=require sslcertmode=disable"},
    {"v_scram", "sslmode=require sslcertmode=allow"},
    {"v_scram", "sslmode=disable sslcertmode=require", true},
    {"v_scram", "sslmode=require sslcertmode=maybe", true},
    // TLS versions and SNI.
    {"v_scram", "sslmode=require ssl_min_protocol_version=TLSv1.3"},
    {"v_scram", "sslmode=require ssl_max_protocol_version=TLSv1.2"},
    {"v_scram", "sslmode=require ssl_min_protocol_version=TLSv1.3 ssl_max_protocol_version=TLSv1.2", true},
    {"v_scram", "sslmode=require ssl_min_protocol_version=TLSv9", true},
    {"v_scram", "sslmode=require sslsni=0"},
    // Strings libpq refuses whatever the server.
    {"v_scram", "sslmode=sometimes", true},
    {"v_scram", "channel_binding=maybe", true},
};

std::string conninfo_of(const side_by_side_case& c) {
  const auto& pg = *the_server().pg;
  // host=localhost: SNI is sent (sslsni), and hostaddr keeps it on IPv4.
  return "host=localhost hostaddr=127.0.0.1 port=" + std::to_string(pg.port()) +
         " dbname=postgres connect_timeout=10 user=" + c.user + " password='" + password + "' " + c.options;
}

}  // namespace

TEST(scram_probe_vs_libpq, every_option_is_accepted_or_refused_alike) {
  std::printf("libpq %d, PostgreSQL %d\n", PQlibVersion(), pgpipe::devcluster::cluster::server_major());
  int accepted = 0, refused = 0;
  for (const auto& c : cases) {
    const std::string conninfo = conninfo_of(c);
    scram::probe_report report;
    const verdict libpq = libpq_verdict(conninfo);
    const verdict probe = probe_verdict(conninfo, report);
    SCOPED_TRACE(std::string(c.user) + " " + c.options);
    EXPECT_EQ(probe.accepted, libpq.accepted) << "libpq: " << (libpq.accepted ? "connected" : libpq.message)
                                              << "\nprobe: " << (probe.accepted ? "authenticated" : probe.message);
    (libpq.accepted ? accepted : refused) += 1;
    if (!libpq.accepted && c.same_words && !probe.accepted) {
      // A string this libpq does not parse: both name the option.
      if (libpq.message.find("invalid connection option") != std::string::npos) {
        EXPECT_EQ(report.outcome, scram::probe_outcome::invalid_options) << probe.message;
      } else {
        EXPECT_NE(libpq.message.find(probe.message), std::string::npos)
            << "libpq: " << libpq.message << "\nprobe: " << probe.message;
      }
    }
    if (probe.accepted) {
      // What the probe honoured is in its report.
      const std::string options = c.options;
      for (const auto& o : report.options_in_force) {
        EXPECT_NE(options.find(o), std::string::npos) << o;
      }
    }
  }
  // Not a vacuous agreement: both verdicts occur (libpq 15 refuses the
  // options of 16-18 it does not know, so fewer strings connect there).
  EXPECT_GE(accepted, 5);
  EXPECT_GE(refused, 10);
}

TEST(scram_probe_vs_libpq, the_protocol_version_is_the_one_negotiated) {
  scram::probe_report r;
  (void)probe_verdict(conninfo_of({"v_scram", "sslmode=disable"}), r);
  EXPECT_EQ(r.protocol_version, "3.0") << r.client_message;  // every libpq's default
  (void)probe_verdict(conninfo_of({"v_scram", "sslmode=disable max_protocol_version=latest"}), r);
  if (PQlibVersion() < 180000) {
    // A libpq without the option refuses the string, and so does the probe.
    EXPECT_EQ(r.outcome, scram::probe_outcome::invalid_options);
    EXPECT_NE(r.client_message.find("max_protocol_version"), std::string::npos) << r.client_message;
    return;
  }
  EXPECT_EQ(r.outcome, scram::probe_outcome::authenticated) << r.client_message;
  EXPECT_EQ(r.protocol_version, pgpipe::devcluster::cluster::server_major() >= 18 ? "3.2" : "3.0");
  EXPECT_EQ(r.options_in_force, (std::vector<std::string>{"sslmode=disable", "max_protocol_version=latest"}));
}

TEST(scram_probe_vs_libpq, options_the_probe_does_not_speak_are_refused_by_name) {
  // Each changes what libpq would do to authenticate; an answer that
  // ignored it would be about another client. (Those this libpq does not
  // know are refused by its parser, which names them too.)
  for (const char* option : {"sslcert=/nonexistent/client.crt", "sslkey=/nonexistent/client.key",
                             "sslcrl=/nonexistent/crl.pem", "requirepeer=postgres", "gssencmode=require",
                             "krbsrvname=other", "service=nonexistent", "scram_client_key=AAAA",
                             "scram_server_key=AAAA"}) {
    // The password as stdin gives it: known even when libpq cannot parse the string.
    scram::probe_params p;
    p.conninfo = "host=127.0.0.1 user=v_scram port=" + std::to_string(the_server().pg->port()) + " " + option;
    p.password = password;
    const auto r = scram::probe(p);
    const std::string key = std::string(option).substr(0, std::string(option).find('='));
    EXPECT_EQ(r.outcome, scram::probe_outcome::invalid_options) << option << ": " << r.client_message;
    EXPECT_EQ(r.exit_code(), 2) << option;
    EXPECT_NE(r.client_message.find(key), std::string::npos) << r.client_message;
    EXPECT_TRUE(r.password_given) << option;
    EXPECT_EQ(r.client_message.find("AAAA"), std::string::npos) << r.client_message;
  }
}

TEST(scram_probe_vs_libpq, a_password_file_is_refused_only_when_libpq_would_read_it) {
  // libpq reads passfile (or PGPASSFILE) only when it has no password.
  scram::probe_params p;
  p.conninfo = "host=127.0.0.1 sslmode=disable dbname=postgres user=v_scram passfile=/nonexistent/pgpass port=" +
               std::to_string(the_server().pg->port());
  auto r = scram::probe(p);
  EXPECT_EQ(r.outcome, scram::probe_outcome::invalid_options) << r.client_message;
  EXPECT_NE(r.client_message.find("passfile"), std::string::npos) << r.client_message;
  p.password = password;
  r = scram::probe(p);
  EXPECT_EQ(r.outcome, scram::probe_outcome::authenticated) << r.client_message;
  p.password = std::string();  // explicitly none: the method is reported
  r = scram::probe(p);
  EXPECT_EQ(r.outcome, scram::probe_outcome::method_reported) << r.client_message;
}
