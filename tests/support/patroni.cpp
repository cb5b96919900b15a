#include "support/patroni.hpp"

#include "devcluster/server_process.hpp"

#include <boost/json.hpp>

#include <csignal>
#include <fstream>
#include <mutex>
#include <unistd.h>
#include <stdexcept>
#include <thread>

namespace pgpipe::test {
namespace {

using namespace std::chrono_literals;
namespace dc = pgpipe::devcluster;
namespace json = boost::json;

struct node {
  std::string name;
  int pg_port = 0;
  int api_port = 0;
  std::string yml;
  std::string log;
  dc::background_process process;
};

}  // namespace

struct patroni_cluster::state {
  std::string dir;
  std::string password = "patroni-" + std::to_string(::getpid());
  int etcd_port = 0;
  dc::background_process etcd;
  std::vector<node> nodes;

  const node& find(const std::string& name) const {
    for (const auto& n : nodes)
      if (n.name == name) return n;
    throw std::runtime_error("patroni_cluster: no member " + name);
  }

  std::string node_yml(const node& n) const {
    const std::string data = dir + "/" + n.name;
    // ttl 10 s, loop_wait 1 s: a frozen leader's key expires in about 10 s,
    // the shortest etcd and Patroni allow with retry_timeout below ttl.
    return "scope: pgpipe\nnamespace: /pgpipe-test/\nname: " + n.name + "\n" +
           "restapi: {listen: 127.0.0.1:" + std::to_string(n.api_port) +
           ", connect_address: 127.0.0.1:" + std::to_string(n.api_port) + "}\n" +
           // etcd's v2 API: Patroni 3.0.2 (Debian 12) renews the leader key
           // there by compare-and-swap on its own name. Its etcd3 backend puts
           // the key unconditionally once its lease expired (fixed upstream in
           // 3.0.3), so a leader thawed after a hang took the key back from the
           // node promoted meanwhile, and 345 writes acknowledged there were
           // lost (docs/scaling.md).
           "etcd: {hosts: 127.0.0.1:" + std::to_string(etcd_port) + "}\n" +
           "bootstrap:\n"
           "  dcs:\n"
           "    ttl: 10\n    loop_wait: 1\n    retry_timeout: 4\n"
           "    maximum_lag_on_failover: 1048576\n"
           // A COMMIT returns once a standby has the WAL, and only that
           // standby may be promoted. Strict: a leader with no synchronous
           // standby (one just promoted) holds COMMITs instead of going
           // asynchronous, so an acknowledged write is never on one node
           // only (docs/scaling.md: without it, writes were lost).
           "    synchronous_mode: true\n"
           "    synchronous_mode_strict: true\n"
           // A node whose timeline is behind the cluster's stays out of the
           // leader race (a thawed former leader on timeline N against the
           // node promoted meanwhile on N + 1).
           "    check_timeline: true\n"
           "    postgresql:\n"
           // A standby that streamed past the new leader's fork point cannot
           // follow it; rewound, it can (without: a stuck standby left the
           // new leader with no synchronous one, and strict mode held every
           // COMMIT). pg_rewind needs wal_log_hints.
           "      use_pg_rewind: true\n"
           "      parameters: {wal_level: replica, hot_standby: 'on', max_wal_senders: 10, "
           "max_replication_slots: 10, wal_keep_size: 64MB, "
           // A hung peer is given up after 5 s, not the default 60 s.
           "wal_sender_timeout: 5s, wal_receiver_timeout: 5s, wal_log_hints: 'on'}\n"
           "  initdb: [{encoding: UTF8}, {auth: scram-sha-256}]\n"
           "  pg_hba: ['host all all 127.0.0.1/32 scram-sha-256', "
           "'host replication rep 127.0.0.1/32 scram-sha-256', 'local all all trust']\n"
           "postgresql:\n"
           "  listen: 127.0.0.1:" + std::to_string(n.pg_port) + "\n" +
           "  connect_address: 127.0.0.1:" + std::to_string(n.pg_port) + "\n" +
           "  data_dir: " + data + "\n" +
           "  bin_dir: /usr/lib/postgresql/15/bin\n"
           "  pgpass: " + dir + "/pgpass-" + n.name + "\n" +
           "  parameters: {unix_socket_directories: '" + dir + "', max_connections: 60, shared_buffers: 32MB}\n" +
           "  authentication:\n"
           "    superuser: {username: postgres, password: '" + password + "'}\n" +
           "    replication: {username: rep, password: '" + password + "'}\n";
  }

  dc::command_result patronictl(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{"/usr/bin/patronictl", "-c", nodes.front().yml};
    argv.insert(argv.end(), args.begin(), args.end());
    return dc::run_as_server_user(argv, dir, 30s);
  }
};

patroni_cluster::patroni_cluster() : s_(std::make_unique<state>()) {
  for (const char* bin : {"/usr/bin/patroni", "/usr/bin/patronictl", "/usr/bin/etcd"}) {
    if (access(bin, X_OK) != 0) {
      throw std::runtime_error(std::string("patroni_cluster: no ") + bin + " (apt-get install patroni etcd-server)");
    }
  }
  static std::once_flag swept;
  std::call_once(swept, [] { dc::sweep_stale_dirs("pgpipe-patroni-", "etcd.pid", SIGKILL); });
  s_->dir = dc::make_temp_dir("pgpipe-patroni-");
  try {
    dc::write_owner_file(s_->dir);
    s_->etcd_port = dc::find_free_port();
    const int peer_port = dc::find_free_port();
    const std::string client_url = "http://127.0.0.1:" + std::to_string(s_->etcd_port);
    const std::string peer_url = "http://127.0.0.1:" + std::to_string(peer_port);
    s_->etcd = dc::background_process({"/usr/bin/etcd", "--name", "e1", "--data-dir", s_->dir + "/etcd",
                                       "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
                                       "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
                                       "--initial-cluster", "e1=" + peer_url, "--enable-v2=true"},
                                      s_->dir, s_->dir + "/etcd.log");
    dc::write_file_for_server(s_->dir + "/etcd.pid", std::to_string(s_->etcd.pid()), 0600);
    for (int i = 1; i <= 3; ++i) {
      node n;
      n.name = "n" + std::to_string(i);
      n.pg_port = dc::find_free_port();
      n.api_port = dc::find_free_port();
      n.yml = s_->dir + "/" + n.name + ".yml";
      n.log = s_->dir + "/" + n.name + ".log";
      s_->nodes.push_back(std::move(n));
    }
    for (auto& n : s_->nodes) {
      dc::write_file_for_server(n.yml, s_->node_yml(n), 0600);
      n.process = dc::background_process({"/usr/bin/patroni", n.yml}, s_->dir, n.log);
    }
    wait_for_healthy("", 90s);
  } catch (...) {
    for (auto& n : s_->nodes) n.process.stop(SIGKILL, 0ms);
    s_->etcd.stop(SIGKILL, 0ms);
    dc::remove_tree(s_->dir);
    throw;
  }
}

patroni_cluster::~patroni_cluster() {
  for (auto& n : s_->nodes) {
    freeze(n.name, false);
    n.process.stop(SIGTERM, 20s);
  }
  // Patroni stops its PostgreSQL on SIGTERM; one left by a killed Patroni is
  // stopped through its pid file.
  for (auto& n : s_->nodes) {
    if (pid_t pm = postmaster_pid(n.name); pm > 0) ::kill(pm, SIGQUIT);
  }
  s_->etcd.stop(SIGTERM, 10s);
  dc::remove_tree(s_->dir);
}

std::string patroni_cluster::conninfo(std::string_view attrs) const {
  std::string hosts, ports;
  for (const auto& n : s_->nodes) {
    hosts += (hosts.empty() ? "" : ",") + std::string("127.0.0.1");
    ports += (ports.empty() ? "" : ",") + std::to_string(n.pg_port);
  }
  return "host=" + hosts + " port=" + ports + " user=postgres password=" + s_->password +
         " dbname=postgres target_session_attrs=" + std::string(attrs);
}

std::string patroni_cluster::node_conninfo(const std::string& name) const {
  return "host=127.0.0.1 port=" + std::to_string(s_->find(name).pg_port) + " user=postgres password=" + s_->password +
         " dbname=postgres";
}

const std::string& patroni_cluster::password() const { return s_->password; }

std::vector<patroni_member> patroni_cluster::members() const {
  auto r = s_->patronictl({"list", "-f", "json"});
  if (r.exit_code != 0) throw std::runtime_error("patroni_cluster: patronictl list failed: " + r.output);
  std::vector<patroni_member> out;
  // The JSON is the last line (patronictl may warn before it).
  const auto start = r.output.find('[');
  if (start == std::string::npos) throw std::runtime_error("patroni_cluster: patronictl list: " + r.output);
  const json::value list = json::parse(r.output.substr(start));
  for (const auto& v : list.as_array()) {
    const auto& o = v.as_object();
    patroni_member m;
    m.name = std::string(o.at("Member").as_string());
    m.role = std::string(o.at("Role").as_string());
    m.state = std::string(o.at("State").as_string());
    if (const auto* tl = o.if_contains("TL"); tl != nullptr && tl->is_int64()) m.timeline = static_cast<int>(tl->as_int64());
    out.push_back(std::move(m));
  }
  return out;
}

std::string patroni_cluster::leader() const {
  for (const auto& m : members())
    if (m.role == "Leader" && m.state == "running") return m.name;
  return "";
}

std::string patroni_cluster::wait_for_healthy(const std::string& not_this, std::chrono::seconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::string lead;
    int replicas = 0;
    bool sync = false;
    try {
      for (const auto& m : members()) {
        if (m.role == "Leader" && m.state == "running") lead = m.name;
        if (m.role != "Leader" && (m.state == "running" || m.state == "streaming")) ++replicas;
        sync = sync || (m.role == "Sync Standby" && (m.state == "running" || m.state == "streaming"));
      }
    } catch (const std::exception&) {
      // etcd or Patroni still starting: asked again below.
    }
    if (!lead.empty() && lead != not_this && sync && replicas == static_cast<int>(s_->nodes.size()) - 1) return lead;
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("patroni_cluster: no healthy cluster after " + std::to_string(timeout.count()) +
                               " s\n" + describe());
    }
    // Patroni's own loop_wait is 1 s: asking more often only loads etcd.
    s_->etcd.wait_for_exit(250ms);
  }
}

void patroni_cluster::switchover(const std::string& leader, const std::string& candidate) const {
  auto r = s_->patronictl({"switchover", "--leader", leader, "--candidate", candidate, "--force"});
  // patronictl exits 0 when Patroni refuses the switchover: read what it said.
  if (r.exit_code != 0 || r.output.find("Successfully switched over") == std::string::npos)
    throw std::runtime_error("patroni_cluster: switchover failed: " + r.output);
}

pid_t patroni_cluster::postmaster_pid(const std::string& name) const {
  std::ifstream f(s_->dir + "/" + s_->find(name).name + "/postmaster.pid");
  pid_t pid = -1;
  if (!(f >> pid)) return -1;
  return pid;
}

void patroni_cluster::freeze(const std::string& name, bool stop) {
  const int sig = stop ? SIGSTOP : SIGCONT;
  const node& n = s_->find(name);
  if (n.process.pid() > 0) ::kill(n.process.pid(), sig);
  if (pid_t pm = postmaster_pid(name); pm > 0) {
    ::kill(pm, sig);
    for (pid_t c : dc::child_pids(pm)) ::kill(c, sig);
  }
}

std::string patroni_cluster::describe() const {
  std::string s;
  try {
    for (const auto& m : members()) s += m.name + " " + m.role + " " + m.state + " TL " + std::to_string(m.timeline) + "\n";
  } catch (const std::exception& e) {
    s += std::string("(no member list: ") + e.what() + ")\n";
  }
  for (const auto& n : s_->nodes) s += "--- " + n.log + ":\n" + dc::file_tail(n.log, 1500) + "\n";
  s += "--- etcd:\n" + dc::file_tail(s_->dir + "/etcd.log", 800) + "\n";
  return s;
}

}  // namespace pgpipe::test
