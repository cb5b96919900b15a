#include "sampler.hpp"

#include <libpq-fe.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <dirent.h>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace pgpipe::bench {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::uint64_t field_kb(const std::string& status, const std::string& key) {
  const auto pos = status.find("\n" + key + ":");
  if (pos == std::string::npos) return 0;
  std::istringstream in(status.substr(pos + key.size() + 2));
  std::uint64_t v = 0;
  in >> v;
  return v;
}

// Fields of /proc/<pid>/stat after the command name (which may hold spaces
// and parentheses, hence the search for the last ')'). Index 0 is "state".
std::vector<std::string> stat_fields(pid_t pid) {
  const std::string s = read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto close = s.rfind(')');
  std::vector<std::string> out;
  if (close == std::string::npos) return out;
  std::istringstream in(s.substr(close + 1));
  std::string f;
  while (in >> f) out.push_back(f);
  return out;
}

// pid -> ppid for every process.
std::multimap<pid_t, pid_t> children_map() {
  std::multimap<pid_t, pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    pid_t pid = 0;
    const char* end = e->d_name + std::char_traits<char>::length(e->d_name);
    auto [p, ec] = std::from_chars(e->d_name, end, pid);
    if (ec != std::errc{} || p != end) continue;
    const auto f = stat_fields(pid);
    if (f.size() > 1) out.emplace(static_cast<pid_t>(std::stol(f[1])), pid);
  }
  closedir(d);
  return out;
}

double ticks_to_seconds(std::uint64_t ticks) {
  static const long hz = sysconf(_SC_CLK_TCK);
  return static_cast<double>(ticks) / static_cast<double>(hz > 0 ? hz : 100);
}

}  // namespace

std::optional<proc_status> read_status(pid_t pid) {
  const std::string s = read_file("/proc/" + std::to_string(pid) + "/status");
  if (s.empty()) return std::nullopt;
  proc_status st;
  st.threads = field_kb(s, "Threads");
  st.rss_kb = field_kb(s, "VmRSS");
  st.hwm_kb = field_kb(s, "VmHWM");
  return st;
}

std::vector<pid_t> descendants(pid_t root) {
  const auto tree = children_map();
  std::vector<pid_t> out;
  std::vector<pid_t> todo{root};
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    auto [b, e] = tree.equal_range(p);
    for (auto it = b; it != e; ++it) {
      out.push_back(it->second);
      todo.push_back(it->second);
    }
  }
  return out;
}

std::optional<proc_status> read_tree_status(pid_t root) {
  auto total = read_status(root);
  if (!total) return std::nullopt;
  for (pid_t p : descendants(root)) {
    if (auto s = read_status(p)) {
      total->threads += s->threads;
      total->rss_kb += s->rss_kb;
      total->hwm_kb = std::max(total->hwm_kb, s->hwm_kb);
    }
  }
  return total;
}

namespace {
double server_cpu_once(pid_t postmaster) {
  // stat fields (0 = state): utime 11, stime 12, cutime 13, cstime 14.
  std::uint64_t ticks = 0;
  auto add = [&](pid_t pid, bool with_reaped) {
    const auto f = stat_fields(pid);
    if (f.size() < 15) return;
    ticks += std::stoull(f[11]) + std::stoull(f[12]);
    if (with_reaped) ticks += std::stoull(f[13]) + std::stoull(f[14]);
  };
  add(postmaster, true);
  for (pid_t p : descendants(postmaster)) add(p, false);
  return ticks_to_seconds(ticks);
}
}  // namespace

double self_cpu_seconds() {
  const auto f = stat_fields(getpid());
  if (f.size() < 13) return 0;
  return ticks_to_seconds(std::stoull(f[11]) + std::stoull(f[12]));
}

double server_cpu_seconds(pid_t postmaster) {
  // A backend reaped between reading the postmaster (its cutime) and listing
  // its children is in neither, and one reaped the other way round is in
  // both. Two equal readings in a row mean no reap fell inside; between runs
  // the server is idle, so this settles at once.
  double last = server_cpu_once(postmaster);
  for (int i = 0; i < 20; ++i) {
    const double now = server_cpu_once(postmaster);
    if (std::abs(now - last) < 0.005) return now;
    last = now;
  }
  return last;
}

machine_info read_machine_info() {
  machine_info m;
  m.cpus = std::thread::hardware_concurrency();
  const std::string meminfo = read_file("/proc/meminfo");
  if (auto pos = meminfo.find("MemTotal:"); pos != std::string::npos) {
    std::istringstream in(meminfo.substr(pos + 9));
    std::uint64_t kb = 0;
    in >> kb;
    m.memory_mb = kb / 1024;
  }
  const std::string cpuinfo = read_file("/proc/cpuinfo");
  if (auto pos = cpuinfo.find("model name"); pos != std::string::npos) {
    const auto colon = cpuinfo.find(':', pos);
    const auto eol = cpuinfo.find('\n', pos);
    if (colon != std::string::npos && colon < eol) m.cpu_model = cpuinfo.substr(colon + 2, eol - colon - 2);
  }
  utsname u{};
  if (uname(&u) == 0) m.kernel = std::string(u.sysname) + " " + u.release;
  return m;
}

struct server_sampler::impl {
  PGconn* conn = nullptr;
  std::string scalar(const char* sql) {
    PGresult* r = PQexec(conn, sql);
    std::string out;
    bool ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0;
    if (ok) out = PQgetvalue(r, 0, 0);
    PQclear(r);
    if (!ok) throw std::runtime_error(PQerrorMessage(conn));
    return out;
  }
};

server_sampler::server_sampler(const std::string& conninfo) : impl_(std::make_unique<impl>()) {
  // Named so it can be told apart in pg_stat_activity by a person too; the
  // count query excludes it by pid.
  const char* keys[] = {"dbname", "application_name", nullptr};
  const char* values[] = {conninfo.c_str(), "pgpipe-bench-sampler", nullptr};
  impl_->conn = PQconnectdbParams(keys, values, 1);
  if (PQstatus(impl_->conn) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(impl_->conn);
    PQfinish(impl_->conn);
    impl_->conn = nullptr;
    throw std::runtime_error("cannot connect to the server: " + msg);
  }
}

server_sampler::~server_sampler() {
  if (impl_ && impl_->conn) PQfinish(impl_->conn);
}

int server_sampler::client_connections() {
  try {
    return std::stoi(impl_->scalar(
        "select count(*) from pg_stat_activity where datname = current_database() "
        "and backend_type = 'client backend' and pid <> pg_backend_pid()"));
  } catch (const std::exception&) {
    if (PQstatus(impl_->conn) == CONNECTION_BAD) PQreset(impl_->conn);
    return -1;
  }
}

std::string server_sampler::server_version() {
  try {
    return impl_->scalar("show server_version");
  } catch (const std::exception&) {
    return "unknown";
  }
}

std::optional<pid_t> server_sampler::local_postmaster() {
  const pid_t backend = PQbackendPID(impl_->conn);
  const auto f = stat_fields(backend);
  if (f.size() < 2) return std::nullopt;  // not on this machine (or another pid namespace)
  const pid_t parent = static_cast<pid_t>(std::stol(f[1]));
  // The same pid could belong to an unrelated local process when the server
  // is remote: require both to be postgres processes.
  auto comm = [](pid_t p) {
    std::string c = read_file("/proc/" + std::to_string(p) + "/comm");
    while (!c.empty() && c.back() == '\n') c.pop_back();
    return c;
  };
  if (comm(backend).rfind("postgres", 0) != 0 || comm(parent).rfind("postgres", 0) != 0) return std::nullopt;
  return parent;
}

}  // namespace pgpipe::bench
