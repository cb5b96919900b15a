// The throwaway PostgreSQL every integration test stands on: SCRAM with a
// generated password, restart/stop/kill of backends, settings, TLS and a
// clean-up that leaves neither files nor processes behind.
#include "support/cluster_fixture.hpp"
#include "support/raw_connection.hpp"
#include "support/tls_certs.hpp"
#include "support/wait.hpp"

#include "devcluster/server_process.hpp"

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <poll.h>
#include <arpa/inet.h>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using namespace std::chrono_literals;
using pgpipe::test::fresh_cluster;
using pgpipe::test::shared_cluster;
using pgpipe::test::wait_until;

using pgpipe::test::raw_connect;

std::string scalar(PGconn* c, const char* sql) {
  std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(c, sql), &PQclear);
  if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) return "error: " + std::string(PQerrorMessage(c));
  return PQntuples(r.get()) > 0 ? PQgetvalue(r.get(), 0, 0) : "";
}

// Process state letter from /proc/<pid>/stat ('T' = stopped), or '?'.
char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return '?';
  auto p = line.rfind(')');
  return p == std::string::npos || p + 2 >= line.size() ? '?' : line[p + 2];
}

// Processes whose command line or working directory mentions `dir`.
std::vector<std::string> processes_using(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::error_code ec;
    auto cwd = std::filesystem::read_symlink(entry.path() / "cwd", ec).string();
    if (cmdline.find(dir) != std::string::npos || (!ec && cwd.rfind(dir, 0) == 0)) found.push_back(name);
  }
  return found;
}

// Unset libpq variables that could supply a password behind the test's back.
class devcluster_smoke : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    unsetenv("PGPASSWORD");
    setenv("PGPASSFILE", "/nonexistent/pgpipe-test-pgpass", 1);
    unsetenv("PGSERVICE");
  }
};

TEST_F(devcluster_smoke, connects_with_the_generated_password_over_scram) {
  auto& pg = shared_cluster();
  auto c = raw_connect(pg.conninfo());
  ASSERT_EQ(PQstatus(c.get()), CONNECTION_OK) << PQerrorMessage(c.get());
  EXPECT_EQ(scalar(c.get(), "SELECT current_user"), pg.user());
  EXPECT_EQ(scalar(c.get(), "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"), "t");
  // The stored secret is a SCRAM verifier, and hba asks for scram-sha-256.
  EXPECT_EQ(scalar(c.get(), "SELECT left(rolpassword, 14) FROM pg_authid WHERE rolname = current_user"),
            "SCRAM-SHA-256$");
  EXPECT_EQ(scalar(c.get(), "SELECT count(*) FROM pg_hba_file_rules WHERE auth_method <> 'scram-sha-256'"), "0");
  EXPECT_EQ(scalar(c.get(), "SHOW listen_addresses"), "127.0.0.1");
  EXPECT_EQ(PQport(c.get()), std::to_string(pg.port()));
  // The password is printable and safe unquoted in a conninfo string.
  ASSERT_GE(pg.password().size(), 16u);
  for (char ch : pg.password()) {
    EXPECT_TRUE(ch > ' ' && ch <= '~' && ch != '\'' && ch != '"' && ch != '\\') << int(ch);
  }
}

TEST_F(devcluster_smoke, unix_socket_connection_uses_the_private_directory) {
  auto& pg = shared_cluster();
  auto c = raw_connect(pg.socket_conninfo());
  ASSERT_EQ(PQstatus(c.get()), CONNECTION_OK) << PQerrorMessage(c.get());
  EXPECT_EQ(std::string(PQhost(c.get())), pg.socket_dir());
  EXPECT_TRUE(std::filesystem::exists(pg.socket_dir() + "/.s.PGSQL." + std::to_string(pg.port())));
}

TEST_F(devcluster_smoke, wrong_password_fails_with_a_clear_error_that_hides_it) {
  auto& pg = shared_cluster();
  const std::string wrong = "Wr0ng-" + pg.password().substr(0, 8) + "-pw";
  auto c = raw_connect(pg.conninfo_without_password() + " password=" + wrong);
  ASSERT_EQ(PQstatus(c.get()), CONNECTION_BAD);
  const std::string msg = PQerrorMessage(c.get());
  EXPECT_NE(msg.find("password authentication failed"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(wrong), std::string::npos);
  EXPECT_EQ(msg.find(pg.password()), std::string::npos);
}

TEST_F(devcluster_smoke, missing_password_fails) {
  auto& pg = shared_cluster();
  auto c = raw_connect(pg.conninfo_without_password());
  ASSERT_EQ(PQstatus(c.get()), CONNECTION_BAD);
  EXPECT_NE(std::string(PQerrorMessage(c.get())).find("no password supplied"), std::string::npos)
      << PQerrorMessage(c.get());
}

TEST_F(devcluster_smoke, query_errors_carry_the_server_message_not_the_password) {
  auto& pg = shared_cluster();
  try {
    pg.exec("SELECT * FROM no_such_table_here");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("no_such_table_here"), std::string::npos) << msg;
    EXPECT_NE(msg.find("42P01"), std::string::npos) << msg;
    EXPECT_EQ(msg.find(pg.password()), std::string::npos);
  }
  auto rows = pg.query("SELECT g, NULL::text FROM generate_series(1, 3) g");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2][0], "3");
  EXPECT_EQ(rows[2][1], "");
}

TEST_F(devcluster_smoke, settings_from_params_are_applied) {
  pgpipe::devcluster::cluster_params params;
  params.max_connections = 37;
  params.shared_buffers = "16MB";
  params.settings["work_mem"] = "7MB";
  params.settings["cluster_name"] = "it's quoted";
  auto pg = fresh_cluster(params);
  EXPECT_EQ(pg->query_value("SHOW max_connections"), "37");
  EXPECT_EQ(pg->query_value("SHOW shared_buffers"), "16MB");
  EXPECT_EQ(pg->query_value("SHOW work_mem"), "7MB");
  EXPECT_EQ(pg->query_value("SHOW fsync"), "off");
  EXPECT_EQ(pg->query_value("SHOW password_encryption"), "scram-sha-256");
  EXPECT_EQ(pg->query_value("SHOW cluster_name"), "it's quoted");
}

TEST_F(devcluster_smoke, custom_hba_and_deferred_start_are_honoured) {
  pgpipe::devcluster::cluster_params params;
  params.hba = "host all all 127.0.0.1/32 scram-sha-256\n";  // no Unix-socket line
  params.start = false;
  auto pg = fresh_cluster(params);
  EXPECT_FALSE(pg->running());
  pg->start();
  auto tcp = raw_connect(pg->conninfo());
  EXPECT_EQ(PQstatus(tcp.get()), CONNECTION_OK) << PQerrorMessage(tcp.get());
  auto sock = raw_connect(pg->socket_conninfo());
  EXPECT_EQ(PQstatus(sock.get()), CONNECTION_BAD);
  EXPECT_NE(std::string(PQerrorMessage(sock.get())).find("no pg_hba.conf entry"), std::string::npos)
      << PQerrorMessage(sock.get());
}

TEST_F(devcluster_smoke, restart_keeps_port_and_data) {
  auto pg = fresh_cluster();
  const int port = pg->port();
  const pid_t old_postmaster = pg->postmaster_pid();
  pg->exec("CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)");
  pg->restart();
  EXPECT_EQ(pg->port(), port);
  EXPECT_NE(pg->postmaster_pid(), old_postmaster);
  EXPECT_EQ(pg->query_value("SELECT v FROM kept"), "42");
  auto c = raw_connect(pg->conninfo());
  EXPECT_EQ(PQstatus(c.get()), CONNECTION_OK) << PQerrorMessage(c.get());
}

TEST_F(devcluster_smoke, start_failure_reports_the_server_log) {
  auto pg = fresh_cluster();
  pg->stop();
  // Someone else takes the port while the server is down; restart keeps
  // the port, so start() must fail and say why.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(pg->port()));
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
  ASSERT_EQ(listen(fd, 1), 0);
  try {
    pg->start();
    ADD_FAILURE() << "start() succeeded on a taken port";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("could not bind"), std::string::npos) << msg;
    EXPECT_EQ(msg.find(pg->password()), std::string::npos);
  }
  EXPECT_FALSE(pg->running());
  close(fd);
  pg->start();
  EXPECT_EQ(pg->query_value("SELECT 1"), "1");
}

TEST_F(devcluster_smoke, stop_immediate_then_start_recovers) {
  auto pg = fresh_cluster();
  pg->exec("CREATE TABLE t (v int); INSERT INTO t VALUES (1), (2)");
  auto c = raw_connect(pg->conninfo());
  ASSERT_EQ(PQstatus(c.get()), CONNECTION_OK);
  pg->stop(pgpipe::devcluster::stop_mode::immediate);
  EXPECT_FALSE(pg->running());
  // The open connection learns that its server is gone.
  EXPECT_NE(scalar(c.get(), "SELECT 1"), "1");
  auto refused = raw_connect(pg->conninfo());
  EXPECT_EQ(PQstatus(refused.get()), CONNECTION_BAD);
  pg->start();
  EXPECT_TRUE(pg->running());
  EXPECT_EQ(pg->query_value("SELECT sum(v) FROM t"), "3");
}

TEST_F(devcluster_smoke, terminate_backend_kills_that_connection) {
  auto& pg = shared_cluster();
  auto victim = raw_connect(pg.conninfo() + " application_name=terminate_victim");
  auto bystander = raw_connect(pg.conninfo() + " application_name=terminate_bystander");
  ASSERT_EQ(PQstatus(victim.get()), CONNECTION_OK);
  ASSERT_EQ(PQstatus(bystander.get()), CONNECTION_OK);
  auto pids = pg.backend_pids("terminate_victim");
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_EQ(pids[0], PQbackendPID(victim.get()));
  EXPECT_TRUE(pg.terminate_backend(pids[0]));
  EXPECT_NE(scalar(victim.get(), "SELECT 1"), "1");
  EXPECT_EQ(PQstatus(victim.get()), CONNECTION_BAD);
  EXPECT_EQ(scalar(bystander.get(), "SELECT 1"), "1");
  EXPECT_TRUE(wait_until([&] { return pg.backend_pids("terminate_victim").empty(); }));
}

TEST_F(devcluster_smoke, connection_count_sees_client_connections) {
  auto pg = fresh_cluster();
  EXPECT_EQ(pg->connection_count(), 0);
  auto a = raw_connect(pg->conninfo("postgres"));
  auto b = raw_connect(pg->conninfo("template1"));
  ASSERT_EQ(PQstatus(a.get()), CONNECTION_OK);
  ASSERT_EQ(PQstatus(b.get()), CONNECTION_OK);
  EXPECT_EQ(pg->connection_count(), 2);
  EXPECT_EQ(pg->connection_count("template1"), 1);
  b.reset();
  EXPECT_TRUE(wait_until([&] { return pg->connection_count() == 1; }));
}

TEST_F(devcluster_smoke, sigstop_freezes_a_backend_and_sigcont_resumes_it) {
  auto& pg = shared_cluster();
  auto c = raw_connect(pg.conninfo() + " application_name=sigstop_victim");
  ASSERT_EQ(PQstatus(c.get()), CONNECTION_OK);
  const pid_t pid = PQbackendPID(c.get());
  pg.signal_backend(pid, SIGSTOP);
  ASSERT_TRUE(wait_until([&] { return process_state(pid) == 'T'; }));
  ASSERT_EQ(PQsendQuery(c.get(), "SELECT 7"), 1);
  // A stopped backend cannot answer, however long we give it.
  pollfd p{PQsocket(c.get()), POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 200), 0);
  pg.signal_backend(pid, SIGCONT);
  std::unique_ptr<PGresult, decltype(&PQclear)> r(PQgetResult(c.get()), &PQclear);
  ASSERT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK) << PQerrorMessage(c.get());
  EXPECT_EQ(std::string(PQgetvalue(r.get(), 0, 0)), "7");
  while (PGresult* rest = PQgetResult(c.get())) PQclear(rest);
}

TEST_F(devcluster_smoke, reload_applies_new_settings_and_hba) {
  auto pg = fresh_cluster();
  pg->append_conf("work_mem = '3MB'");
  pg->reload();
  EXPECT_EQ(pg->query_value("SHOW work_mem"), "3MB");
  // An hba that only lets the superuser in over the Unix socket.
  pg->write_hba("local all all scram-sha-256\n");
  pg->reload();
  auto tcp = raw_connect(pg->conninfo());
  EXPECT_EQ(PQstatus(tcp.get()), CONNECTION_BAD);
  EXPECT_NE(std::string(PQerrorMessage(tcp.get())).find("no pg_hba.conf entry"), std::string::npos)
      << PQerrorMessage(tcp.get());
  auto sock = raw_connect(pg->socket_conninfo());
  EXPECT_EQ(PQstatus(sock.get()), CONNECTION_OK) << PQerrorMessage(sock.get());
}

TEST_F(devcluster_smoke, two_clusters_run_side_by_side_on_different_ports) {
  auto a = fresh_cluster();
  auto b = fresh_cluster();
  EXPECT_NE(a->port(), b->port());
  EXPECT_NE(a->data_dir(), b->data_dir());
  EXPECT_NE(a->password(), b->password());
  a->exec("CREATE TABLE only_in_a (v int)");
  EXPECT_EQ(a->query_value("SELECT count(*) FROM pg_class WHERE relname = 'only_in_a'"), "1");
  EXPECT_EQ(b->query_value("SELECT count(*) FROM pg_class WHERE relname = 'only_in_a'"), "0");
  // Each password opens only its own cluster.
  auto cross = raw_connect(a->conninfo_without_password() + " password=" + b->password());
  EXPECT_EQ(PQstatus(cross.get()), CONNECTION_BAD);
}

TEST_F(devcluster_smoke, destructor_removes_directory_and_processes_even_with_a_stopped_backend) {
  auto pg = fresh_cluster();
  const std::string base = pg->base_dir();
  const pid_t postmaster = pg->postmaster_pid();
  auto c = raw_connect(pg->conninfo());
  ASSERT_EQ(PQstatus(c.get()), CONNECTION_OK);
  const pid_t backend = PQbackendPID(c.get());
  pg->signal_backend(backend, SIGSTOP);
  ASSERT_TRUE(wait_until([&] { return process_state(backend) == 'T'; }));
  ASSERT_FALSE(processes_using(base).empty());  // the check below can see them
  pg.reset();
  EXPECT_FALSE(std::filesystem::exists(base));
  EXPECT_TRUE(processes_using(base).empty());
  EXPECT_EQ(kill(postmaster, 0), -1);
  EXPECT_EQ(kill(backend, 0), -1);
}

TEST_F(devcluster_smoke, a_killed_test_process_leaves_nothing_after_the_next_sweep) {
  // A test binary killed by a ctest timeout runs no destructor: its server
  // keeps running and its directory stays until the next sweep.
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(report[0]);
    try {
      auto* leaked = new pgpipe::devcluster::cluster();
      std::string line = leaked->base_dir() + "\n";
      ssize_t n = write(report[1], line.data(), line.size());
      (void)n;
    } catch (...) {
    }
    raise(SIGKILL);
  }
  close(report[1]);
  std::string base;
  char ch;
  while (read(report[0], &ch, 1) == 1 && ch != '\n') base.push_back(ch);
  close(report[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_FALSE(base.empty()) << "the child could not start a cluster";
  ASSERT_TRUE(std::filesystem::exists(base));
  ASSERT_FALSE(processes_using(base).empty());  // the orphaned server is still up

  pgpipe::devcluster::sweep_stale_dirs("pgpipe-devcluster-", "data/postmaster.pid", SIGQUIT);
  EXPECT_FALSE(std::filesystem::exists(base));
  EXPECT_TRUE(wait_until([&] { return processes_using(base).empty(); }));
}

TEST_F(devcluster_smoke, runs_the_server_unprivileged) {
  auto& pg = shared_cluster();
  struct stat st {};
  ASSERT_EQ(stat(pg.data_dir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u);  // PostgreSQL insists on a private data directory
  std::ifstream status("/proc/" + std::to_string(pg.postmaster_pid()) + "/status");
  std::string line;
  long uid = -1;
  while (std::getline(status, line)) {
    if (line.rfind("Uid:", 0) == 0) uid = std::stol(line.substr(4));
  }
  EXPECT_NE(uid, 0);
  EXPECT_EQ(static_cast<uid_t>(uid), st.st_uid);
}

TEST_F(devcluster_smoke, tls_with_a_generated_ca_verifies_the_host_name) {
  auto pg = fresh_cluster();
  auto files = pgpipe::test::enable_tls(*pg, "localhost");
  const std::string base = "hostaddr=127.0.0.1 port=" + std::to_string(pg->port()) + " user=" + pg->user() +
                           " password=" + pg->password() + " dbname=postgres sslrootcert=" + files.ca_cert_path;
  auto good = raw_connect(base + " host=localhost sslmode=verify-full");
  ASSERT_EQ(PQstatus(good.get()), CONNECTION_OK) << PQerrorMessage(good.get());
  EXPECT_EQ(scalar(good.get(), "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"), "t");
  auto wrong_name = raw_connect(base + " host=not-the-server.example sslmode=verify-full");
  EXPECT_EQ(PQstatus(wrong_name.get()), CONNECTION_BAD);
  EXPECT_NE(std::string(PQerrorMessage(wrong_name.get())).find("does not match host name"), std::string::npos)
      << PQerrorMessage(wrong_name.get());
}

}  // namespace
