#include "devcluster/devcluster.hpp"

#include "devcluster/initdb_template.hpp"
#include "devcluster/libpq_session.hpp"
#include "devcluster/server_process.hpp"
#include "devcluster/server_version.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <poll.h>
#include <fstream>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace pgpipe::devcluster {
namespace {

using namespace std::chrono_literals;

constexpr auto start_timeout = 60s;
constexpr auto immediate_grace = 10s;
constexpr auto stop_grace = 60s;
constexpr int bind_retries = 8;

// postgresql.conf string literal.
std::string conf_literal(std::string_view v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\'') out.push_back('\'');
    out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

std::string default_hba() {
  return "# devcluster: scram-sha-256 everywhere\n"
         "local   all          all                     scram-sha-256\n"
         "host    all          all    127.0.0.1/32     scram-sha-256\n"
         "host    all          all    ::1/128          scram-sha-256\n"
         "local   replication  all                     scram-sha-256\n"
         "host    replication  all    127.0.0.1/32     scram-sha-256\n"
         "host    replication  all    ::1/128          scram-sha-256\n";
}

}  // namespace

struct cluster::state {
  cluster_params params;
  std::string bindir;
  std::string base;
  std::string data;
  std::string sock;
  std::string log;
  std::string password;
  int port = 0;
  pid_t creator = -1;
  bool port_fixed = false;  // after the first successful start, restart keeps it
  // Template copies still carry the template's password until first start.
  std::optional<std::string> pending_password_from;
  background_process postmaster;

  std::string tcp_conninfo(std::string_view dbname, bool with_password) const {
    std::string s = "host=127.0.0.1 port=" + std::to_string(port) + " user=" + quote_value(params.superuser);
    if (with_password) s += " password=" + quote_value(password);
    s += " dbname=" + quote_value(dbname);
    return s;
  }

  std::vector<std::vector<std::string>> query(std::string_view sql, std::string_view dbname,
                                              const std::vector<std::string>& params_ = {}) const {
    auto conn = connect_or_throw(tcp_conninfo(dbname, true) + " application_name=devcluster");
    return run_query(conn.get(), sql, params_);
  }

  void write_config() {
    std::string conf = "\n# --- devcluster settings ---\n";
    conf += "listen_addresses = '127.0.0.1'\n";
    conf += "unix_socket_directories = " + conf_literal(sock) + "\n";
    conf += "max_connections = " + std::to_string(params.max_connections) + "\n";
    conf += "shared_buffers = " + conf_literal(params.shared_buffers) + "\n";
    // Throwaway data: surviving an OS crash buys nothing and fsync costs
    // test time. synchronous_commit stays on: with fsync off a commit only
    // costs a write(2), and it keeps committed rows across stop(immediate),
    // which tests use to simulate a crash (off would lose the last ~200 ms).
    conf += "fsync = off\nsynchronous_commit = on\nfull_page_writes = off\n";
    conf += "password_encryption = 'scram-sha-256'\n";
    conf += "huge_pages = off\n";
    conf += "logging_collector = off\n";
    conf += "log_line_prefix = '%m [%p] %q%a '\n";
    for (const auto& [key, value] : params.settings) conf += key + " = " + conf_literal(value) + "\n";
    std::ofstream out(data + "/postgresql.conf", std::ios::app);
    out << conf;
    if (!out.flush()) throw std::runtime_error("devcluster: cannot write postgresql.conf");
  }

  void spawn_postmaster() {
    postmaster = background_process({bindir + "/postgres", "-D", data, "-p", std::to_string(port)}, base, log);
  }

  // Wait until the postmaster accepts connections. Returns false when it
  // exited because the port was taken (caller retries with another port).
  //
  // Readiness comes from our own postmaster.pid (its pid on line 1, "ready"
  // on line 8, as pg_ctl -w reads it), not from pinging the port: if another
  // server won the race for the port, a ping would be answered by it.
  bool wait_ready(std::size_t log_offset) {
    const auto deadline = std::chrono::steady_clock::now() + start_timeout;
    for (;;) {
      if (postmaster.wait_for_exit(0ms)) {
        std::string tail = log_since(log_offset);
        if (!port_fixed && (tail.find("could not bind") != std::string::npos ||
                            tail.find("Address already in use") != std::string::npos)) {
          return false;
        }
        throw std::runtime_error("devcluster: server failed to start (data " + data + "); log tail:\n" + tail);
      }
      if (postmaster_reports_ready()) return true;
      if (std::chrono::steady_clock::now() > deadline) {
        postmaster.stop(SIGQUIT, immediate_grace);
        throw std::runtime_error("devcluster: server did not accept connections within 60 s; log tail:\n" +
                                 log_since(log_offset));
      }
      // No event announces readiness: look again shortly, but wake at once
      // if the postmaster dies.
      postmaster.wait_for_exit(5ms);
    }
  }

  bool postmaster_reports_ready() const {
    std::ifstream in(data + "/postmaster.pid");
    std::vector<std::string> lines;
    for (std::string line; lines.size() < 8 && std::getline(in, line);) lines.push_back(line);
    if (lines.size() < 8 || lines[0] != std::to_string(postmaster.pid())) return false;
    const std::string status = trim(lines[7]);
    // "standby" is a standby that does not accept connections (hot_standby
    // off): as ready as it will get, like pg_ctl -w treats it.
    return status == "ready" || status == "standby";
  }

  std::size_t log_size() const {
    struct stat st {};
    return stat(log.c_str(), &st) == 0 ? static_cast<std::size_t>(st.st_size) : 0;
  }

  std::string log_since(std::size_t offset) const {
    std::string tail = file_tail(log, 8000);
    std::size_t size = log_size();
    if (size > offset && size - offset < tail.size()) tail = tail.substr(tail.size() - (size - offset));
    return tail;
  }

  // pg_basebackup of a running primary, set up as a streaming standby.
  void clone_from(const cluster& primary) {
    if (!primary.running()) throw std::runtime_error("devcluster: the primary of a standby must be running");
    const std::string app = "standby_" + std::filesystem::path(base).filename().string();
    const auto pg_basebackup = matching_tool(bindir, "pg_basebackup");
    if (!pg_basebackup) throw std::runtime_error("devcluster: a standby needs " + missing_tool(bindir, "pg_basebackup"));
    // The password goes through the environment, not the command line.
    auto r = run_as_server_user({*pg_basebackup, "-h", "127.0.0.1", "-p", std::to_string(primary.port()),
                                 "-U", primary.user(), "-D", data, "-X", "stream", "-c", "fast", "-R",
                                 "--no-sync", "-w"},
                                base, std::chrono::seconds(120), {"PGPASSWORD=" + primary.password()});
    if (r.exit_code != 0) {
      throw std::runtime_error("devcluster: pg_basebackup failed (exit " + std::to_string(r.exit_code) +
                               "): " + r.output);
    }
    // -R wrote a primary_conninfo; ours (appended, so it wins) names the
    // standby so the primary's pg_stat_replication can tell standbys apart.
    std::ofstream auto_conf(data + "/postgresql.auto.conf", std::ios::app);
    auto_conf << "primary_conninfo = "
              << conf_literal("host=127.0.0.1 port=" + std::to_string(primary.port()) + " user=" +
                              quote_value(primary.user()) + " password=" + quote_value(primary.password()) +
                              " application_name=" + app)
              << "\n";
    if (!auto_conf.flush()) throw std::runtime_error("devcluster: cannot write postgresql.auto.conf");
  }

  void replace_template_password() {
    if (!pending_password_from) return;
    // Over the private Unix socket with the template's password; send a
    // client-side SCRAM verifier so the new password never travels or logs.
    auto conn = connect_or_throw("host=" + quote_value(sock) + " port=" + std::to_string(port) +
                                 " user=" + quote_value(params.superuser) + " password=" +
                                 quote_value(*pending_password_from) + " dbname=postgres");
    char* verifier = PQencryptPasswordConn(conn.get(), password.c_str(), params.superuser.c_str(), "scram-sha-256");
    if (verifier == nullptr) throw std::runtime_error("devcluster: cannot compute the SCRAM verifier");
    std::string v(verifier);
    PQfreemem(verifier);
    char* ident = PQescapeIdentifier(conn.get(), params.superuser.c_str(), params.superuser.size());
    std::string quoted_user(ident ? ident : "");
    PQfreemem(ident);
    char* lit = PQescapeLiteral(conn.get(), v.c_str(), v.size());
    std::string quoted_verifier(lit ? lit : "");
    PQfreemem(lit);
    // Durable before start() returns, whatever synchronous_commit the
    // caller configured: an immediate stop must not bring back the old one.
    run_query(conn.get(), "SET synchronous_commit = on", {});
    run_query(conn.get(), "ALTER ROLE " + quoted_user + " PASSWORD " + quoted_verifier, {});
    pending_password_from.reset();
    // PQfinish returns before the backend has exited, and until it exits it
    // is in pg_stat_activity: a fresh cluster would count a client nobody
    // opened. Its pidfd becomes readable when it is gone (opened before
    // PQfinish, so the pid cannot have been reused).
    const int backend = pidfd_open_checked(PQbackendPID(conn.get()));
    conn.reset();
    if (backend >= 0) {
      pollfd p{backend, POLLIN, 0};
      while (poll(&p, 1, 10000) < 0 && errno == EINTR) {
      }
      close(backend);
    }
  }
};

cluster::cluster(cluster_params params) : s_(std::make_unique<state>()) {
  s_->params = std::move(params);
  s_->bindir = bindir();
  s_->password = generate_password();
  // Once per process: clusters left by test binaries that were killed.
  static std::once_flag swept;
  std::call_once(swept, [] { sweep_stale_dirs("pgpipe-devcluster-", "data/postmaster.pid", SIGQUIT); });
  s_->creator = getpid();
  s_->base = make_temp_dir("pgpipe-devcluster-");
  try {
    write_owner_file(s_->base);
    s_->data = s_->base + "/data";
    s_->sock = s_->base + "/sock";
    s_->log = s_->base + "/server.log";
    if (mkdir(s_->sock.c_str(), 0700) != 0) throw std::runtime_error("devcluster: mkdir socket dir failed");
    chown_to_server_user(s_->sock);

    if (const cluster* primary = s_->params.standby_of) {
      s_->params.superuser = primary->user();
      s_->password = primary->password();
      // A hot standby refuses to start with fewer connection slots than
      // its primary.
      s_->params.max_connections =
          std::max(s_->params.max_connections, std::stoi(primary->query_value("SHOW max_connections")));
      s_->clone_from(*primary);
    } else if (auto tmpl = cached_initdb_template(s_->bindir, s_->params.superuser)) {
      auto r = run_as_server_user({"/bin/cp", "-a", tmpl->data_dir, s_->data}, s_->base);
      if (r.exit_code == 0) {
        s_->pending_password_from = tmpl->password;
      } else {
        // Someone removed the cache under us: initdb is slower but fine.
        remove_tree(s_->data);
        run_initdb(s_->bindir, s_->data, s_->params.superuser, s_->password);
      }
    } else {
      run_initdb(s_->bindir, s_->data, s_->params.superuser, s_->password);
    }
    s_->write_config();
    const bool from_template = s_->pending_password_from.has_value();
    if (from_template) {
      // A template copy still has the template's password. Swap it now,
      // under the default hba (a caller's hba may not let the superuser in
      // over the socket), so that every later start() is an ordinary one.
      write_hba(default_hba());
      start();
      s_->replace_template_password();
      if (s_->params.hba || !s_->params.start) stop(stop_mode::fast);
    }
    if (s_->params.hba) write_hba(*s_->params.hba);
    else if (!from_template) write_hba(default_hba());
    if (s_->params.start) start();
  } catch (...) {
    s_->postmaster.stop(SIGQUIT, immediate_grace);
    remove_tree(s_->base);
    throw;
  }
}

cluster::~cluster() {
  // In a fork()ed child the server and directory belong to the parent.
  if (!s_ || s_->creator != getpid()) return;
  s_->postmaster.stop(SIGQUIT, immediate_grace);
  if (const char* keep = std::getenv("PGPIPE_DEVCLUSTER_KEEP"); !(keep && *keep && std::string(keep) != "0")) {
    remove_tree(s_->base);
  }
}

std::string cluster::conninfo(std::string_view dbname) const { return s_->tcp_conninfo(dbname, true); }

std::string cluster::conninfo_without_password(std::string_view dbname) const {
  return s_->tcp_conninfo(dbname, false);
}

std::string cluster::socket_conninfo(std::string_view dbname) const {
  return "host=" + quote_value(s_->sock) + " port=" + std::to_string(s_->port) + " user=" +
         quote_value(s_->params.superuser) + " password=" + quote_value(s_->password) +
         " dbname=" + quote_value(dbname);
}

const std::string& cluster::user() const noexcept { return s_->params.superuser; }
const std::string& cluster::password() const noexcept { return s_->password; }
int cluster::port() const noexcept { return s_->port; }
const std::string& cluster::socket_dir() const noexcept { return s_->sock; }
const std::string& cluster::data_dir() const noexcept { return s_->data; }
const std::string& cluster::base_dir() const noexcept { return s_->base; }

void cluster::start() {
  if (running()) return;
  for (int attempt = 0;; ++attempt) {
    if (!s_->port_fixed) s_->port = find_free_port();
    const std::size_t offset = s_->log_size();
    s_->spawn_postmaster();
    if (s_->wait_ready(offset)) break;
    if (attempt + 1 >= bind_retries) {
      throw std::runtime_error("devcluster: no free port after " + std::to_string(bind_retries) +
                               " attempts; log tail:\n" + s_->log_since(offset));
    }
  }
  s_->port_fixed = true;
}

void cluster::stop(stop_mode mode) {
  int signo = mode == stop_mode::smart ? SIGTERM : mode == stop_mode::fast ? SIGINT : SIGQUIT;
  s_->postmaster.stop(signo, mode == stop_mode::immediate ? immediate_grace : stop_grace);
}

void cluster::restart(stop_mode mode) {
  stop(mode);
  start();
}

bool cluster::running() const noexcept { return s_->postmaster.running(); }

void cluster::reload() {
  if (!running()) return;
  // pg_conf_load_time() changes once the postmaster has re-read the files;
  // a new connection is forked from the postmaster, so it sees the new value
  // and the new pg_hba.conf together.
  const char* sql = "SELECT extract(epoch from pg_conf_load_time())::text";
  std::optional<std::string> before;
  try {
    before = query_value(sql);
  } catch (const std::exception&) {
    // Already locked out by the current hba: cannot observe, fall through.
  }
  s_->postmaster.signal(SIGHUP);
  if (!before) return;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    try {
      if (query_value(sql) != *before) return;
    } catch (const std::exception&) {
      // The new hba refuses us: it was applied.
      return;
    }
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("devcluster: reload not observed in 10 s");
    // No event announces a finished reload; poll with a deadline.
    s_->postmaster.wait_for_exit(5ms);
  }
}

void cluster::write_hba(const std::string& contents) {
  write_file_for_server(s_->data + "/pg_hba.conf", contents, 0600);
}

void cluster::append_conf(const std::string& lines) {
  std::ofstream out(s_->data + "/postgresql.conf", std::ios::app);
  out << '\n' << lines << '\n';
  if (!out.flush()) throw std::runtime_error("devcluster: cannot append to postgresql.conf");
}

void cluster::write_data_file(const std::string& name, const std::string& contents, unsigned mode) {
  write_file_for_server(s_->data + "/" + name, contents, mode);
}

std::vector<std::vector<std::string>> cluster::query(std::string_view sql, std::string_view dbname) const {
  return s_->query(sql, dbname);
}

std::string cluster::query_value(std::string_view sql, std::string_view dbname) const {
  auto rows = s_->query(sql, dbname);
  if (rows.empty() || rows[0].empty()) return {};
  return rows[0][0];
}

void cluster::exec(std::string_view sql, std::string_view dbname) const { s_->query(sql, dbname); }

pid_t cluster::postmaster_pid() const {
  if (!s_->postmaster.running()) throw std::runtime_error("devcluster: server is not running");
  return s_->postmaster.pid();
}

std::vector<pid_t> cluster::backend_pids(std::string_view application_name) const {
  std::string sql =
      "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()";
  std::vector<std::string> params;
  if (!application_name.empty()) {
    sql += " AND application_name = $1";
    params.emplace_back(application_name);
  }
  sql += " ORDER BY backend_start";
  std::vector<pid_t> pids;
  for (const auto& row : s_->query(sql, "postgres", params)) pids.push_back(static_cast<pid_t>(std::stol(row.at(0))));
  return pids;
}

bool cluster::terminate_backend(pid_t pid) const {
  return s_->query("SELECT pg_terminate_backend($1::int)", "postgres", {std::to_string(pid)}).at(0).at(0) == "t";
}

void cluster::signal_backend(pid_t pid, int signo) const {
  if (pid <= 0) throw std::invalid_argument("devcluster: bad pid");
  if (::kill(pid, signo) != 0) {
    throw std::runtime_error("devcluster: kill(" + std::to_string(pid) + ", " + std::to_string(signo) +
                             "): " + std::strerror(errno));
  }
}

int cluster::connection_count(std::string_view dbname) const {
  std::string sql =
      "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()";
  std::vector<std::string> params;
  if (!dbname.empty()) {
    sql += " AND datname = $1";
    params.emplace_back(dbname);
  }
  return std::stoi(s_->query(sql, "postgres", params).at(0).at(0));
}

std::string cluster::log_path() const { return s_->log; }

void cluster::promote() { exec("SELECT pg_promote(true, 60)"); }

int cluster::server_major() { return devcluster::server_major(bindir()); }

std::optional<std::string> cluster::standby_unsupported() {
  const std::string dir = bindir();
  if (matching_tool(dir, "pg_basebackup")) return std::nullopt;
  return "no standby of PostgreSQL " + std::to_string(devcluster::server_major(dir)) + " here: " +
         missing_tool(dir, "pg_basebackup");
}

std::string cluster::bindir() {
  if (const char* env = std::getenv("PGPIPE_PG_BINDIR"); env && *env) {
    // ctest runs each test in its own directory: a relative path would
    // name a different place in each.
    if (env[0] != '/') {
      throw std::runtime_error(std::string("devcluster: PGPIPE_PG_BINDIR must be an absolute path, not '") + env + "'");
    }
    return env;
  }
  for (const char* v : {"15", "16", "17", "14", "13"}) {
    std::string dir = std::string("/usr/lib/postgresql/") + v + "/bin";
    if (access((dir + "/postgres").c_str(), X_OK) == 0) return dir;
  }
  throw std::runtime_error(
      "devcluster: no PostgreSQL server found under /usr/lib/postgresql/*/bin (install postgresql-15 or set "
      "PGPIPE_PG_BINDIR)");
}

}  // namespace pgpipe::devcluster
