// The probe against a real PostgreSQL configured for trust, password, md5
// and scram-sha-256 in pg_hba.conf, with and without TLS (a certificate the
// test makes), and against scripted fake servers for what a real one will
// not do (stay silent, refuse TLS, ask for a huge iteration count, forge the
// server signature).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <cstring>
#include <fstream>
#include <functional>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include <memory>
#include <string>

#include <pgpipe/scram.hpp>
#include "support/cluster_fixture.hpp"
#include "support/tls_certs.hpp"

namespace scram = pgpipe::scram;
using scram::auth_method;
using scram::probe_outcome;

namespace {

constexpr const char* user_password = "probe pw \xC3\xA9";  // non-ASCII on purpose

struct server {
  std::unique_ptr<pgpipe::devcluster::cluster> pg;
  pgpipe::test::tls_files tls;
};

// One cluster for the binary: TLS on, one role per hba method. The
// superuser keeps the default scram-sha-256 lines so the fixture can still
// reload and query.
server& the_server() {
  static server* s = [] {
    auto* srv = new server;
    srv->pg = pgpipe::test::fresh_cluster();
    auto& pg = *srv->pg;
    srv->tls = pgpipe::test::enable_tls(pg, "127.0.0.1");
    const std::string pw = "'probe pw \xC3\xA9'";
    pg.exec("SET password_encryption = 'scram-sha-256';"
            "CREATE ROLE u_trust LOGIN; CREATE ROLE u_password LOGIN PASSWORD " + pw + ";"
            "CREATE ROLE u_scram LOGIN PASSWORD " + pw + "; CREATE ROLE u_md5_scram_stored LOGIN PASSWORD " + pw + ";"
            "CREATE ROLE u_tls LOGIN PASSWORD " + pw + "; CREATE ROLE u_reject LOGIN PASSWORD " + pw + ";"
            "SET password_encryption = 'md5'; CREATE ROLE u_md5 LOGIN PASSWORD " + pw + ";");
    pg.write_hba("hostnossl all u_trust            127.0.0.1/32 trust\n"
                 "hostnossl all u_password         127.0.0.1/32 password\n"
                 "hostnossl all u_md5              127.0.0.1/32 md5\n"
                 "hostnossl all u_md5_scram_stored 127.0.0.1/32 md5\n"
                 "host      all u_scram            127.0.0.1/32 scram-sha-256\n"
                 "hostssl   all u_tls              127.0.0.1/32 scram-sha-256\n"
                 "hostnossl all u_tls              127.0.0.1/32 reject\n"
                 "host      all u_reject           127.0.0.1/32 reject\n"
                 "local     all all                             scram-sha-256\n"
                 "host      all all                127.0.0.1/32 scram-sha-256\n");
    pg.reload();
    return srv;
  }();
  return *s;
}

// Stops the cluster after the last test (the static above is leaked on purpose).
class stop_server : public ::testing::Environment {
 public:
  void TearDown() override { the_server().pg.reset(); }
};
[[maybe_unused]] auto* const env = ::testing::AddGlobalTestEnvironment(new stop_server);

scram::probe_report run(const std::string& user, const std::string& options,
                        std::optional<std::string> password = std::nullopt, bool allow_cleartext = false) {
  auto& s = the_server();
  scram::probe_params p;
  p.conninfo = "host=127.0.0.1 port=" + std::to_string(s.pg->port()) + " dbname=postgres user=" + user + " " + options;
  p.password = std::move(password);
  p.allow_cleartext = allow_cleartext;
  auto r = scram::probe(p);
  // Whatever happened, the password is nowhere in the report.
  for (const auto* field : {&r.client_message, &r.server_message, &r.session_error}) {
    EXPECT_EQ(field->find("probe pw"), std::string::npos) << *field;
  }
  return r;
}

}  // namespace

TEST(scram_probe, Trust) {
  auto r = run("u_trust", "sslmode=disable");
  EXPECT_EQ(r.method, auth_method::trust) << r.client_message;
  EXPECT_EQ(r.outcome, probe_outcome::authenticated);
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_FALSE(r.tls);
}

TEST(scram_probe, CleartextIsReportedNotAnswered) {
  auto none = run("u_password", "sslmode=disable");
  EXPECT_EQ(none.method, auth_method::cleartext);
  EXPECT_EQ(none.outcome, probe_outcome::method_reported);
  EXPECT_EQ(none.exit_code(), 0);

  auto refused = run("u_password", "sslmode=disable", user_password);
  EXPECT_EQ(refused.outcome, probe_outcome::cleartext_not_sent);
  EXPECT_EQ(refused.exit_code(), 4);
  EXPECT_NE(refused.client_message.find("--allow-cleartext"), std::string::npos);

  auto allowed = run("u_password", "sslmode=disable", user_password, true);
  EXPECT_EQ(allowed.outcome, probe_outcome::authenticated) << allowed.client_message << allowed.server_message;
  auto wrong = run("u_password", "sslmode=disable", "nope", true);
  EXPECT_EQ(wrong.outcome, probe_outcome::rejected);
  EXPECT_EQ(wrong.sqlstate, "28P01");
}

TEST(scram_probe, Md5) {
  auto none = run("u_md5", "sslmode=disable");
  EXPECT_EQ(none.method, auth_method::md5);
  EXPECT_EQ(none.outcome, probe_outcome::method_reported);
  auto refused = run("u_md5", "sslmode=disable", user_password);
  EXPECT_EQ(refused.outcome, probe_outcome::cleartext_not_sent);
  auto allowed = run("u_md5", "sslmode=disable", user_password, true);
  EXPECT_EQ(allowed.outcome, probe_outcome::authenticated) << allowed.client_message << allowed.server_message;
  auto wrong = run("u_md5", "sslmode=disable", "nope", true);
  EXPECT_EQ(wrong.sqlstate, "28P01");
}

TEST(scram_probe, Md5LineWithScramStoredPasswordUsesScram) {
  // PostgreSQL upgrades an md5 hba line to SCRAM when the stored password is
  // a SCRAM verifier: the fix for "md5 in pg_hba" is the stored password.
  auto r = run("u_md5_scram_stored", "sslmode=disable", user_password);
  EXPECT_EQ(r.method, auth_method::sasl);
  EXPECT_EQ(r.outcome, probe_outcome::authenticated) << r.client_message;
}

TEST(scram_probe, ScramWithoutPasswordReportsMechanismsIterationsAndSalt) {
  auto r = run("u_scram", "sslmode=disable");
  EXPECT_EQ(r.method, auth_method::sasl);
  EXPECT_EQ(r.mechanisms, std::vector<std::string>{"SCRAM-SHA-256"});  // no TLS: no -PLUS
  EXPECT_EQ(r.iterations, 4096);
  EXPECT_EQ(r.salt_length, 16u);
  EXPECT_FALSE(r.password_given);
  EXPECT_EQ(r.outcome, probe_outcome::method_reported);
  EXPECT_EQ(r.exit_code(), 0);
}

TEST(scram_probe, ScramWithPassword) {
  auto r = run("u_scram", "sslmode=disable", user_password);
  EXPECT_EQ(r.outcome, probe_outcome::authenticated) << r.client_message << r.server_message;
  EXPECT_TRUE(r.server_signature_verified);
  EXPECT_EQ(r.mechanism_used, "SCRAM-SHA-256");
  EXPECT_EQ(r.channel_binding, "none");
  EXPECT_EQ(r.exit_code(), 0);
}

TEST(scram_probe, WrongPasswordGives28P01) {
  auto r = run("u_scram", "sslmode=disable", "probe pw wrong");
  EXPECT_EQ(r.outcome, probe_outcome::rejected);
  EXPECT_EQ(r.sqlstate, "28P01");
  EXPECT_NE(r.server_message.find("password authentication failed"), std::string::npos) << r.server_message;
  EXPECT_FALSE(r.server_signature_verified);
  EXPECT_EQ(r.exit_code(), 1);
}

TEST(scram_probe, PasswordFromTheConninfoIsUsed) {
  auto r = run("u_scram", "sslmode=disable password='probe pw \xC3\xA9'");
  EXPECT_TRUE(r.password_given);
  EXPECT_EQ(r.outcome, probe_outcome::authenticated) << r.client_message << r.server_message;
}

TEST(scram_probe, HbaRejectIsReported) {
  auto r = run("u_reject", "sslmode=disable", user_password);
  EXPECT_EQ(r.outcome, probe_outcome::rejected);
  EXPECT_EQ(r.sqlstate, "28000");
}

TEST(scram_probe, UnknownDatabaseAfterAuthenticationIsReported) {
  auto& s = the_server();
  scram::probe_params p;
  p.conninfo = "host=127.0.0.1 sslmode=disable port=" + std::to_string(s.pg->port()) + " user=u_scram dbname=no_such_db";
  p.password = user_password;
  auto r = scram::probe(p);
  EXPECT_EQ(r.outcome, probe_outcome::authenticated);
  EXPECT_NE(r.session_error.find("3D000"), std::string::npos) << r.session_error;
}

TEST(scram_probe, TlsOffersAndUsesScramPlus) {
  auto r = run("u_tls", "sslmode=require", user_password);
  EXPECT_TRUE(r.tls) << r.client_message;
  EXPECT_FALSE(r.tls_version.empty());
  EXPECT_EQ(r.mechanisms, (std::vector<std::string>{"SCRAM-SHA-256-PLUS", "SCRAM-SHA-256"}));
  EXPECT_EQ(r.mechanism_used, "SCRAM-SHA-256-PLUS");
  EXPECT_EQ(r.channel_binding, "tls-server-end-point");
  EXPECT_EQ(r.outcome, probe_outcome::authenticated) << r.client_message << r.server_message;
  EXPECT_TRUE(r.server_signature_verified);
}

TEST(scram_probe, TlsVerifyFullWithTheTestCa) {
  const auto& ca = the_server().tls.ca_cert_path;
  auto r = run("u_tls", "sslmode=verify-full sslrootcert=" + ca + " channel_binding=require", user_password);
  EXPECT_TRUE(r.tls) << r.client_message;
  EXPECT_EQ(r.mechanism_used, "SCRAM-SHA-256-PLUS");
  EXPECT_EQ(r.outcome, probe_outcome::authenticated) << r.client_message << r.server_message;
}

TEST(scram_probe, TlsVerifyFullRejectsAnotherCa) {
  // A CA that did not sign the server certificate.
  auto other = pgpipe::test::make_tls_files("127.0.0.1");
  const std::string path = the_server().pg->base_dir() + "/other-ca.crt";
  {
    std::ofstream out(path);
    out << other.ca_cert_pem;
  }
  auto r = run("u_tls", "sslmode=verify-full sslrootcert=" + path, user_password);
  EXPECT_EQ(r.outcome, probe_outcome::client_error);
  EXPECT_NE(r.client_message.find("certificate"), std::string::npos) << r.client_message;
}

TEST(scram_probe, TlsWithChannelBindingDisabledUsesPlainScram) {
  auto r = run("u_tls", "sslmode=require channel_binding=disable", user_password);
  EXPECT_TRUE(r.tls);
  EXPECT_EQ(r.mechanism_used, "SCRAM-SHA-256");
  EXPECT_EQ(r.channel_binding, "none");
  EXPECT_EQ(r.outcome, probe_outcome::authenticated) << r.client_message << r.server_message;
}

TEST(scram_probe, TlsWrongPasswordGives28P01) {
  auto r = run("u_tls", "sslmode=require", "probe pw wrong");
  EXPECT_EQ(r.mechanism_used, "SCRAM-SHA-256-PLUS");
  EXPECT_EQ(r.sqlstate, "28P01");
}

TEST(scram_probe, HostsslLineRefusesPlaintext) {
  auto r = run("u_tls", "sslmode=disable", user_password);
  EXPECT_EQ(r.outcome, probe_outcome::rejected);
  EXPECT_EQ(r.sqlstate, "28000");  // pg_hba.conf rejects the connection
  // PostgreSQL 13 words it "SSL off".
  const char* plaintext = pgpipe::devcluster::cluster::server_major() >= 14 ? "no encryption" : "SSL off";
  EXPECT_NE(r.server_message.find(plaintext), std::string::npos) << r.server_message;
}

TEST(scram_probe, ServerIterationCountAboveTheCapIsRefused) {
  auto& s = the_server();
  scram::probe_params p;
  p.conninfo = "host=127.0.0.1 sslmode=disable dbname=postgres user=u_scram port=" + std::to_string(s.pg->port());
  p.password = user_password;
  p.iteration_cap = 4095;
  auto r = scram::probe(p);
  EXPECT_EQ(r.outcome, probe_outcome::client_error);
  EXPECT_NE(r.client_message.find("above the cap"), std::string::npos) << r.client_message;
}

TEST(scram_probe, BadConninfo) {
  scram::probe_params p;
  p.conninfo = "host=127.0.0.1 nonsense_key=1";
  auto r = scram::probe(p);
  EXPECT_EQ(r.outcome, probe_outcome::invalid_options);
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_NE(r.client_message.find("nonsense_key"), std::string::npos) << r.client_message;
  p.conninfo = "host=127.0.0.1 user=x sslmode=sometimes";
  EXPECT_NE(scram::probe(p).client_message.find("sslmode"), std::string::npos);
  // libpq quotes a broken URI whole, and a bad percent-escape in the
  // password: the message keeps libpq's reason and loses the password.
  for (const char* broken : {"postgresql://u:hunter2@[::1/db", "postgresql://u:hun%zzter2@h/db"}) {
    p.conninfo = broken;
    auto b = scram::probe(p);
    EXPECT_EQ(b.outcome, probe_outcome::invalid_options);
    EXPECT_NE(b.client_message.find("invalid connection string"), std::string::npos) << b.client_message;
    EXPECT_EQ(b.client_message.find("hunter2"), std::string::npos) << b.client_message;
    EXPECT_EQ(b.client_message.find("zzter2"), std::string::npos) << b.client_message;
  }
}

// ---- scripted fake servers ---------------------------------------------------

namespace {

class fake_server {
 public:
  explicit fake_server(std::function<void(int)> script) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 4), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this, script = std::move(script)] {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      script(c);
      // Hold the connection until the client goes away.
      char buf[256];
      while (::recv(c, buf, sizeof buf, 0) > 0) {
      }
      ::close(c);
    });
  }
  ~fake_server() {
    ::shutdown(fd_, SHUT_RDWR);  // wakes accept() if nobody connected
    thread_.join();
    ::close(fd_);
  }
  std::string conninfo(const std::string& extra = "sslmode=disable") const {
    return "host=127.0.0.1 port=" + std::to_string(port_) + " user=u dbname=d " + extra;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

std::string read_n(int fd, std::size_t n) {
  std::string s(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::recv(fd, s.data() + got, n - got, 0);
    if (r <= 0) return {};
    got += static_cast<std::size_t>(r);
  }
  return s;
}

std::uint32_t be32(const std::string& s, std::size_t at) {
  std::uint32_t v;
  std::memcpy(&v, s.data() + at, 4);
  return ntohl(v);
}

void send_auth(int fd, std::int32_t code, const std::string& data) {
  std::string m = "R";
  const std::uint32_t len = htonl(static_cast<std::uint32_t>(8 + data.size()));
  const std::uint32_t c = htonl(static_cast<std::uint32_t>(code));
  m.append(reinterpret_cast<const char*>(&len), 4);
  m.append(reinterpret_cast<const char*>(&c), 4);
  m += data;
  ::send(fd, m.data(), m.size(), MSG_NOSIGNAL);
}

// Reads the StartupMessage, offers SCRAM-SHA-256, returns the client nonce
// from the SASLInitialResponse.
std::string start_scram(int fd) {
  const std::string len = read_n(fd, 4);
  if (len.empty()) return {};
  read_n(fd, be32(len, 0) - 4);
  send_auth(fd, 10, std::string("SCRAM-SHA-256\0\0", 15));
  const std::string header = read_n(fd, 5);
  if (header.empty()) return {};
  const std::string body = read_n(fd, be32(header, 1) - 4);
  return body.substr(body.find("r=") + 2);
}

}  // namespace

TEST(scram_probe_fake, SilentServerTimesOut) {
  fake_server silent([](int) {});
  scram::probe_params p;
  p.conninfo = silent.conninfo();
  p.timeout = std::chrono::milliseconds(300);
  auto r = scram::probe(p);
  EXPECT_EQ(r.outcome, probe_outcome::client_error);
  EXPECT_NE(r.client_message.find("timed out"), std::string::npos) << r.client_message;
  EXPECT_NE(r.client_message.find("pooler"), std::string::npos) << r.client_message;
}

TEST(scram_probe_fake, SilenceAfterTheProofSaysAPoolerMayStillBeLoggingIn) {
  // PgBouncer answers the client's proof only after its own login to the
  // server, which 1.25 reports as failed only after about 15 s.
  fake_server pooler([](int fd) {
    const std::string nonce = start_scram(fd);
    send_auth(fd, 11, "r=" + nonce + "server,s=QUJDREVGR0hJSktMTU5PUA==,i=4096");
  });
  scram::probe_params p;
  p.conninfo = pooler.conninfo();
  p.password = "pw";
  p.timeout = std::chrono::milliseconds(300);
  auto r = scram::probe(p);
  EXPECT_EQ(r.outcome, probe_outcome::client_error);
  EXPECT_EQ(r.iterations, 4096);  // the proof was sent: the wait is for the verdict
  EXPECT_NE(r.client_message.find("timed out"), std::string::npos) << r.client_message;
  EXPECT_NE(r.client_message.find("a connection pooler such as PgBouncer may still be waiting on its own login"),
            std::string::npos)
      << r.client_message;
}

TEST(scram_probe_fake, ServerWithoutTlsFailsSslmodeRequire) {
  fake_server no_tls([](int fd) {
    read_n(fd, 8);
    ::send(fd, "N", 1, MSG_NOSIGNAL);
  });
  scram::probe_params p;
  p.conninfo = no_tls.conninfo("sslmode=require");
  auto r = scram::probe(p);
  EXPECT_EQ(r.outcome, probe_outcome::client_error);
  EXPECT_NE(r.client_message.find("does not support TLS"), std::string::npos) << r.client_message;
}

TEST(scram_probe_fake, HugeIterationCountIsRefusedByTheCap) {
  fake_server hostile([](int fd) {
    const std::string nonce = start_scram(fd);
    send_auth(fd, 11, "r=" + nonce + "evil,s=QUJDREVGR0g=,i=2147483647");
  });
  scram::probe_params p;
  p.conninfo = hostile.conninfo();
  p.password = "secret";
  auto r = scram::probe(p);
  EXPECT_EQ(r.outcome, probe_outcome::client_error);
  EXPECT_NE(r.client_message.find("above the cap"), std::string::npos) << r.client_message;
}

TEST(scram_probe_fake, ForgedServerSignatureIsNotAuthenticated) {
  // A server that does not know the password accepts any proof and sends
  // AuthenticationOk: the probe must still say no.
  fake_server forger([](int fd) {
    const std::string nonce = start_scram(fd);
    send_auth(fd, 11, "r=" + nonce + "srv,s=QUJDREVGR0g=,i=4096");
    const std::string header = read_n(fd, 5);
    if (header.empty()) return;
    read_n(fd, be32(header, 1) - 4);
    send_auth(fd, 12, "v=" + std::string(43, 'A') + "=");
    send_auth(fd, 0, "");
  });
  scram::probe_params p;
  p.conninfo = forger.conninfo();
  p.password = "secret";
  auto r = scram::probe(p);
  EXPECT_EQ(r.outcome, probe_outcome::client_error);
  EXPECT_FALSE(r.server_signature_verified);
  EXPECT_NE(r.client_message.find("signature"), std::string::npos) << r.client_message;
  EXPECT_EQ(r.exit_code(), 3);
}

// A server that was sent the password in clear text (--allow-cleartext) and
// echoes it in its ErrorResponse, and one that plants it in a malformed
// server-first-message: no part of the report carries it.
TEST(scram_probe_fake, HostileServerEchoingThePasswordIsScrubbed) {
  const std::string secret = "hunter2-Secret";
  fake_server echo([&](int fd) {
    const std::string len = read_n(fd, 4);
    if (len.empty()) return;
    read_n(fd, be32(len, 0) - 4);
    send_auth(fd, 3, "");  // AuthenticationCleartextPassword
    const std::string header = read_n(fd, 5);
    if (header.empty()) return;
    const std::string password = read_n(fd, be32(header, 1) - 4);
    std::string fields = std::string("SFATAL") + '\0' + "C28P01" + '\0' + "Mbad password: " +
                         password.substr(0, password.find('\0')) + '\0' + '\0';
    std::string e = "E";
    const std::uint32_t n = htonl(static_cast<std::uint32_t>(4 + fields.size()));
    e.append(reinterpret_cast<const char*>(&n), 4);
    e += fields;
    ::send(fd, e.data(), e.size(), MSG_NOSIGNAL);
  });
  scram::probe_params p;
  p.conninfo = echo.conninfo();
  p.password = secret;
  p.allow_cleartext = true;
  auto r = scram::probe(p);
  EXPECT_EQ(r.outcome, probe_outcome::rejected);
  EXPECT_EQ(r.sqlstate, "28P01");
  EXPECT_NE(r.server_message.find("bad password"), std::string::npos) << r.server_message;
  EXPECT_EQ(r.server_message.find(secret), std::string::npos) << r.server_message;

  fake_server planter([&](int fd) {
    const std::string nonce = start_scram(fd);
    send_auth(fd, 11, "r=" + nonce + "srv,s=QUJDREVGR0g=,i=4096" + secret);
  });
  p.conninfo = planter.conninfo();
  p.allow_cleartext = false;
  auto planted = scram::probe(p);
  EXPECT_EQ(planted.outcome, probe_outcome::client_error);
  EXPECT_NE(planted.client_message.find("iteration count"), std::string::npos) << planted.client_message;
  EXPECT_EQ(planted.client_message.find("hunter2"), std::string::npos) << planted.client_message;
}

TEST(scram_probe_fake, NotPostgresIsAProtocolError) {
  fake_server http([](int fd) {
    read_n(fd, 8);
    const std::string junk = "HTTP/1.1 400 Bad Request\r\n\r\n";
    ::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
  });
  scram::probe_params p;
  p.conninfo = http.conninfo("sslmode=prefer");
  auto r = scram::probe(p);
  EXPECT_EQ(r.outcome, probe_outcome::client_error);
  EXPECT_NE(r.client_message.find("not a PostgreSQL server"), std::string::npos) << r.client_message;
}

TEST(scram_probe, UnixSocketIgnoresSslmodeAsLibpqDoes) {
  auto& s = the_server();
  scram::probe_params p;
  p.conninfo = "host=" + s.pg->socket_dir() + " port=" + std::to_string(s.pg->port()) +
               " user=u_scram dbname=postgres sslmode=require";
  p.password = user_password;
  auto r = scram::probe(p);
  EXPECT_EQ(r.outcome, probe_outcome::authenticated) << r.client_message << r.server_message;
  EXPECT_FALSE(r.tls);
  EXPECT_EQ(r.mechanisms, std::vector<std::string>{"SCRAM-SHA-256"});
  EXPECT_NE(r.sslmode.find("ignored on a Unix socket"), std::string::npos) << r.sslmode;
}
