#include "support/pgbouncer.hpp"

#include "devcluster/server_process.hpp"

#include <libpq-fe.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace pgpipe::test {
namespace {

using namespace std::chrono_literals;
namespace dc = pgpipe::devcluster;

// auth_file and ini values are double-quoted with "" for a quote.
std::string quoted(const std::string& v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  return out + "\"";
}

std::size_t file_size(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<std::size_t>(st.st_size) : 0;
}

// "PgBouncer 1.25.2\nlibevent ..." -> {1, 25, 2}.
pgbouncer_version ask_version(const std::string& binary) {
  const std::string cmd = "'" + binary + "' --version 2>&1";
  std::string text;
  if (FILE* f = popen(cmd.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, f) != nullptr) text += buf;
    if (pclose(f) != 0) text = "exit status non-zero: " + text;
  }
  pgbouncer_version v;
  if (std::sscanf(text.c_str(), "PgBouncer %d.%d.%d", &v.major, &v.minor, &v.patch) < 2) {
    throw std::runtime_error("pgbouncer_instance: `" + binary + " --version` gave no version: " + text);
  }
  return v;
}

}  // namespace

std::string pgbouncer_version::to_string() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string pgbouncer_instance::binary_path() {
  const char* env = std::getenv("PGPIPE_PGBOUNCER_BIN");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string("/usr/sbin/pgbouncer");
}

pgbouncer_version pgbouncer_instance::version() {
  static const pgbouncer_version v = ask_version(binary_path());
  return v;
}

struct pgbouncer_instance::state {
  const dc::cluster* server = nullptr;
  pgbouncer_params params;
  std::string dir;
  std::string log;
  int port = 0;
  dc::background_process process;

  std::string conninfo(std::string_view dbname) const {
    return "host=127.0.0.1 port=" + std::to_string(port) + " user=" + server->user() +
           " password=" + server->password() + " dbname=" + std::string(dbname);
  }

  void write_config() {
    const std::string verifier =
        server->query_value("SELECT rolpassword FROM pg_authid WHERE rolname = current_user");
    if (verifier.rfind("SCRAM-SHA-256$", 0) != 0) {
      throw std::runtime_error("pgbouncer_instance: the superuser has no SCRAM verifier");
    }
    std::string users = quoted(server->user()) + " " + quoted(verifier) + "\n";
    for (const auto& [name, secret] : params.users) users += quoted(name) + " " + quoted(secret) + "\n";
    dc::write_file_for_server(dir + "/userlist.txt", users, 0600);
    std::string ini = "[databases]\n* = host=127.0.0.1 port=" + std::to_string(server->port()) + "\n\n[pgbouncer]\n";
    ini += "listen_addr = 127.0.0.1\nlisten_port = " + std::to_string(port) + "\n";
    ini += "unix_socket_dir = " + dir + "\n";
    ini += "auth_type = scram-sha-256\nauth_file = " + dir + "/userlist.txt\n";
    ini += "admin_users = " + server->user() + "\n";
    ini += "pool_mode = " + params.pool_mode + "\n";
    ini += "default_pool_size = " + std::to_string(params.default_pool_size) + "\n";
    ini += "max_client_conn = " + std::to_string(params.max_client_conn) + "\n";
    ini += "pidfile = " + dir + "/pgbouncer.pid\n";
    // libpq-based drivers commonly send these; PgBouncer rejects unknown
    // startup parameters otherwise.
    ini += "ignore_startup_parameters = extra_float_digits,options\n";
    for (const auto& [key, value] : params.settings) ini += key + " = " + value + "\n";
    dc::write_file_for_server(dir + "/pgbouncer.ini", ini, 0600);
  }

  // Started and accepting: PQping says OK once PgBouncer answers the startup
  // packet (it asks for a password, which is enough).
  bool wait_ready(std::size_t log_offset) {
    // Ping through the Unix socket in our private directory: only our
    // PgBouncer can answer there, while a TCP ping could reach whoever won
    // a race for the port. It answers only after all listeners (TCP too)
    // are set up, and a failed TCP bind is fatal at setup.
    const std::string ping = "host=" + dir + " port=" + std::to_string(port) + " user=" + server->user() +
                             " dbname=pgbouncer connect_timeout=2";
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    for (;;) {
      if (process.wait_for_exit(0ms)) {
        std::string tail = dc::file_tail(log);
        if (tail.size() > file_size(log) - log_offset) tail = tail.substr(tail.size() - (file_size(log) - log_offset));
        if (tail.find("Address already in use") != std::string::npos) return false;
        throw std::runtime_error("pgbouncer_instance: pgbouncer exited at start; log tail:\n" + tail);
      }
      if (PQping(ping.c_str()) == PQPING_OK) return true;
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("pgbouncer_instance: not accepting connections after 30 s; log tail:\n" +
                                 dc::file_tail(log));
      }
      process.wait_for_exit(10ms);  // wakes at once if it dies
    }
  }
};

pgbouncer_instance::pgbouncer_instance(const devcluster::cluster& server, pgbouncer_params params)
    : s_(std::make_unique<state>()) {
  const std::string binary = binary_path();
  if (access(binary.c_str(), X_OK) != 0) {
    throw std::runtime_error("pgbouncer_instance: no pgbouncer at " + binary +
                             " (apt-get install pgbouncer, or set PGPIPE_PGBOUNCER_BIN)");
  }
  s_->server = &server;
  s_->params = std::move(params);
  static std::once_flag swept;
  std::call_once(swept, [] { dc::sweep_stale_dirs("pgpipe-pgbouncer-", "pgbouncer.pid", SIGTERM); });
  s_->dir = dc::make_temp_dir("pgpipe-pgbouncer-");
  s_->log = s_->dir + "/pgbouncer.log";
  try {
    dc::write_owner_file(s_->dir);
    for (int attempt = 0;; ++attempt) {
      s_->port = dc::find_free_port();
      s_->write_config();
      const std::size_t offset = file_size(s_->log);
      s_->process = dc::background_process({binary, s_->dir + "/pgbouncer.ini"}, s_->dir, s_->log);
      if (s_->wait_ready(offset)) break;
      if (attempt >= 7) throw std::runtime_error("pgbouncer_instance: no free port after 8 attempts");
    }
  } catch (...) {
    s_->process.stop(SIGKILL, 0ms);
    dc::remove_tree(s_->dir);
    throw;
  }
}

pgbouncer_instance::~pgbouncer_instance() {
  stop();
  dc::remove_tree(s_->dir);
}

int pgbouncer_instance::port() const noexcept { return s_->port; }
pid_t pgbouncer_instance::pid() const noexcept { return s_->process.pid(); }
std::string pgbouncer_instance::conninfo(std::string_view dbname) const { return s_->conninfo(dbname); }
std::string pgbouncer_instance::log_path() const { return s_->log; }

// SIGTERM is PgBouncer's immediate shutdown (SIGINT would wait for clients).
void pgbouncer_instance::stop() { s_->process.stop(SIGTERM, 10s); }

std::vector<std::vector<std::string>> pgbouncer_instance::admin(const std::string& command) const {
  PGconn* conn = PQconnectdb(s_->conninfo("pgbouncer").c_str());
  std::vector<std::vector<std::string>> rows;
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(conn);
    PQfinish(conn);
    throw std::runtime_error("pgbouncer_instance: admin connect failed: " + msg);
  }
  // The admin console speaks only the simple query protocol.
  PGresult* res = PQexec(conn, command.c_str());
  auto status = PQresultStatus(res);
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    std::string msg = PQresultErrorMessage(res);
    PQclear(res);
    PQfinish(conn);
    throw std::runtime_error("pgbouncer_instance: admin command failed: " + msg);
  }
  for (int r = 0; r < PQntuples(res); ++r) {
    std::vector<std::string> row;
    for (int c = 0; c < PQnfields(res); ++c) row.emplace_back(PQgetisnull(res, r, c) ? "" : PQgetvalue(res, r, c));
    rows.push_back(std::move(row));
  }
  PQclear(res);
  PQfinish(conn);
  return rows;
}

}  // namespace pgpipe::test
