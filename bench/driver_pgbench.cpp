#include "driver_pgbench.hpp"

#include "latency.hpp"
#include "tpcb.hpp"

#include <pgpipe/error.hpp>

#include <libpq-fe.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "devcluster/devcluster.hpp"

namespace pgpipe::bench {

std::optional<std::string> find_pgbench() {
  if (const char* path = std::getenv("PATH")) {
    std::istringstream dirs(path);
    std::string d;
    while (std::getline(dirs, d, ':')) {
      if (d.empty()) continue;
      const std::string candidate = d + "/pgbench";
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  std::vector<std::string> dirs;
  try {
    dirs.push_back(pgpipe::devcluster::cluster::bindir());
  } catch (const std::exception&) {
    // No server installed: fall through to the usual place.
  }
  dirs.push_back("/usr/lib/postgresql/15/bin");
  for (const auto& d : dirs) {
    const std::string candidate = d + "/pgbench";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

std::vector<std::string> libpq_environment(const std::string& conninfo) {
  std::vector<std::string> env;
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
  if (!opts) {
    std::string msg = err ? err : "out of memory";
    PQfreemem(err);
    throw std::runtime_error("cannot parse the conninfo: " + pgpipe::redact_conninfo(msg));
  }
  for (auto* o = opts; o->keyword; ++o) {
    if (o->val && *o->val && o->envvar) env.push_back(std::string(o->envvar) + "=" + o->val);
  }
  PQconninfoFree(opts);
  return env;
}

pgbench_command prepare_pgbench(const std::string& pgbench, const std::string& dir, const std::string& run_tag,
                                const workload& w, const std::string& conninfo, std::size_t pool,
                                double warmup_s, double duration_s, bool prepared, std::size_t pipeline) {
  pgbench_command c;
  const std::string script_path = dir + "/" + run_tag + ".sql";
  {
    std::ofstream out(script_path);
    if (w.tpcb) {
      out << pgbench_tpcb_script(w.scale, pipeline > 1);
    } else if (pipeline > 1) {
      // Each query draws its own parameters (\\set) inside the pipeline.
      out << "\\startpipeline\n";
      for (std::size_t i = 0; i < pipeline; ++i) out << pgbench_script(w);
      out << "\\endpipeline\n";
    } else {
      out << pgbench_script(w);
    }
    if (!out) throw std::runtime_error("cannot write the pgbench script in " + dir);
  }
  c.log_prefix = dir + "/" + run_tag + "_log";
  // pgbench's -T clock includes connecting, which takes seconds for 200
  // clients. So -T is only a bound: the parent ends the run with SIGALRM
  // (pgbench's own -T signal: it finishes cleanly and writes its logs) once
  // the window has passed, and the window is cut from the log.
  const auto total = static_cast<long>(std::ceil(warmup_s + duration_s)) + 120;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t jobs = std::min<std::size_t>(pool, cores);
  c.argv = {pgbench, "-n", "-M", prepared ? "prepared" : "extended", "-c", std::to_string(pool), "-j", std::to_string(jobs),
            "-T", std::to_string(total), "-P", "1", "-l", "--log-prefix=" + c.log_prefix,
            "-f", script_path};

  c.env = libpq_environment(conninfo);
  c.env.push_back("PGAPPNAME=pgpipe-bench-pgbench");
  return c;
}

void read_pgbench_logs(const pgbench_command& cmd, pid_t pid, std::int64_t spawned_us, double warmup_s,
                       double duration_s, run_result& r) {
  namespace fs = std::filesystem;
  struct entry {
    std::int64_t at;       // completion, µs since the epoch
    std::int64_t latency;  // µs, -1 for a failed transaction
  };
  std::vector<entry> all;
  const fs::path prefix(cmd.log_prefix);
  const std::string stem = prefix.filename().string() + "." + std::to_string(pid);
  std::error_code ec;
  for (const auto& file : fs::directory_iterator(prefix.parent_path(), ec)) {
    const std::string name = file.path().filename().string();
    // pgbench_log.<pid> for the main thread, pgbench_log.<pid>.<n> for others.
    if (name != stem && name.rfind(stem + ".", 0) != 0) continue;
    std::ifstream in(file.path());
    std::string line;
    while (std::getline(in, line)) {
      // client_id transaction_no time script_no time_epoch time_us
      std::istringstream f(line);
      std::string client, txn, time, script;
      std::int64_t sec = 0, usec = 0;
      if (!(f >> client >> txn >> time >> script >> sec >> usec)) continue;
      const bool ok = !time.empty() && std::isdigit(static_cast<unsigned char>(time[0]));
      // "failed", "serialization", "deadlock" or "skipped" instead of a time.
      all.push_back({sec * 1'000'000 + usec, ok ? std::stoll(time) : -1});
    }
    in.close();
    fs::remove(file.path(), ec);
  }
  r.duration_s = duration_s;
  r.startup_ms = -1;
  if (all.empty()) return;
  std::int64_t first = all.front().at, last = all.front().at;
  for (const auto& e : all) {
    first = std::min(first, e.at);
    last = std::max(last, e.at);
    if (e.latency >= 0 && (r.startup_ms < 0 || e.at - spawned_us < r.startup_ms * 1000)) {
      r.startup_ms = static_cast<double>(e.at - spawned_us) / 1000.0;
    }
  }
  const std::int64_t begin = first + static_cast<std::int64_t>(warmup_s * 1e6);
  const std::int64_t end = begin + static_cast<std::int64_t>(duration_s * 1e6);
  latency_histogram h;
  std::uint64_t failed = 0;
  for (const auto& e : all) {
    if (e.at < begin || e.at >= end) continue;
    if (e.latency >= 0) {
      h.record(static_cast<std::uint64_t>(e.latency));
    } else {
      ++failed;
    }
  }
  r.queries = h.count();
  r.qps = static_cast<double>(r.queries) / duration_s;
  r.p50_ms = static_cast<double>(h.percentile(0.50)) / 1000.0;
  r.p95_ms = static_cast<double>(h.percentile(0.95)) / 1000.0;
  r.p99_ms = static_cast<double>(h.percentile(0.99)) / 1000.0;
  r.max_ms = static_cast<double>(h.max()) / 1000.0;
  if (failed) {
    r.errors += failed;
    r.errors_by_kind["pgbench_failed"] += failed;
  }
  // A run cut short (pgbench's clients all failed, or -T passed) leaves the
  // window partly empty: q/s would understate, so say so.
  if (last < end - 200'000) {
    r.failure = "pgbench stopped " + std::to_string((end - last) / 1000) + " ms before the window ended";
  }
}

std::optional<double> parse_pgbench_progress(const std::string& line) {
  if (line.rfind("progress:", 0) != 0) return std::nullopt;
  const auto comma = line.find(", ");
  if (comma == std::string::npos) return std::nullopt;
  try {
    return std::stod(line.substr(comma + 2));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace pgpipe::bench
