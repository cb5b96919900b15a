// pgpipe-bench: flags, the server (embedded devcluster or --conninfo), the
// A B B A schedule of driver x pool runs, and the reports.
#include "child.hpp"
#include "driver.hpp"
#include "driver_pgbench.hpp"
#include "options.hpp"
#include "preflight.hpp"
#include "report.hpp"
#include "runner.hpp"
#include "sampler.hpp"
#include "sweep_run.hpp"
#include "tpcb.hpp"
#include "workload.hpp"

#include "devcluster/devcluster.hpp"
#include "devcluster/server_process.hpp"
#include <pgpipe/error.hpp>

#include <libpq-fe.h>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

extern char** environ;

namespace {

using namespace pgpipe::bench;

std::string self_exe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("cannot find my own executable in /proc/self/exe");
  return std::string(buf, static_cast<std::size_t>(n));
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

// A peer is ready when its launcher says so (`DIR/<driver>/run --check`
// exits 0 once the program is built).
bool peer_built(const std::string& dir, const std::string& driver) {
  const std::string run = dir + "/" + driver + "/run";
  if (::access(run.c_str(), X_OK) != 0) return false;
  // The launcher writes only to stderr: stdout carries the report.
  std::string check = "--check";
  char* argv[] = {const_cast<char*>(run.c_str()), check.data(), nullptr};
  pid_t pid = -1;
  if (posix_spawn(&pid, run.c_str(), nullptr, nullptr, argv, environ) != 0) return false;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return false;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int run(const options& o) {
  install_signal_handlers();

  // Which requested drivers can run here.
  const auto built = in_process_drivers();
  const auto pgbench = find_pgbench();
  report_input report;
  report.opts = &o;
  for (const auto& d : o.drivers) {
    const bool is_pgbench = d == "pgbench" || d == "pgbench-pipeline";
    const bool available = is_pgbench      ? pgbench.has_value()
                           : is_peer_driver(d) ? peer_built(o.peers_dir, d)
                                               : std::find(built.begin(), built.end(), d) != built.end();
    if (available) {
      report.drivers.push_back(d);
      continue;
    }
    const std::string why = is_pgbench          ? "pgbench: not found on PATH nor in PostgreSQL's bindir"
                            : is_peer_driver(d) ? d + ": not built in " + o.peers_dir + " (run bench/peers/build)"
                                                : d + ": this build of pgpipe-bench does not include its driver";
    if (o.drivers_explicit) throw std::runtime_error(why);
    report.notes.push_back("skipped " + why);
    std::cerr << "pgpipe-bench: skipping " << why << "\n";
  }
  if (report.drivers.empty()) throw std::runtime_error("no driver can run");

  if (o.sql_file) check_sql_file(*o.sql_file);
  const workload work = o.tpcb ? tpcb_workload(o.scale) : o.sql_file ? load_workload_file(*o.sql_file) : builtin_workload();
  report.workload_name = work.builtin ? "built-in" : work.name;
  report.sql = work.sql;
  report.machine = read_machine_info();

  // The server: --conninfo, else libpq's environment, else our own.
  std::unique_ptr<pgpipe::devcluster::cluster> cluster;
  std::string conninfo;
  const std::size_t largest_pool = o.sweep ? o.sweep_max : *std::max_element(o.pools.begin(), o.pools.end());
  if (o.conninfo) {
    conninfo = *o.conninfo;
    report.server = "given: " + pgpipe::redact_conninfo(conninfo);
  } else if (std::getenv("PGHOST") || std::getenv("PGSERVICE")) {
    report.server = "from the environment (PGHOST/PGSERVICE)";
  } else {
    std::cerr << "pgpipe-bench: starting a throwaway PostgreSQL...\n";
    pgpipe::devcluster::cluster_params cp;
    // Every run's pool, the sampler, table loading and pgbench's own
    // connections must fit, with room for a person to look with psql.
    cp.max_connections = static_cast<int>(largest_pool) + 20;
    cp.shared_buffers = "128MB";
    // tpcb commits thousands of times a second: waiting for each WAL flush
    // would measure the disk, not the clients.
    if (o.tpcb) cp.settings["synchronous_commit"] = "off";
    cluster = std::make_unique<pgpipe::devcluster::cluster>(cp);
    cluster->exec("create database pgpipe_bench");
    conninfo = cluster->conninfo("pgpipe_bench");
    report.server = "embedded devcluster on 127.0.0.1 (scram-sha-256, max_connections " +
                    std::to_string(cp.max_connections) + ", shared_buffers 128MB" +
                    (o.tpcb ? ", synchronous_commit off" : "") + ")";
  }
  // One clear error before any run: an unreachable server or a statement
  // the server rejects would otherwise fail every run the same way.
  if (!cluster) check_server(conninfo);
  if (!o.prepared) report.server += "; unnamed statements (--no-prepared)";
  if (o.empty_observer) report.server += "; an empty query_observer (--observer empty)";
  std::cerr << "pgpipe-bench: server " << report.server << "\n";
  // With the user's own statement on the user's own server, san_pham may be
  // irrelevant: only create it for the built-in workload or our own server.
  if (work.tpcb) {
    std::cerr << "pgpipe-bench: checking pgbench's tables (scale " << o.scale << ")...\n";
    if (ensure_tpcb_tables(conninfo, o.scale)) std::cerr << "pgpipe-bench: created pgbench's tables\n";
  } else {
    if (work.builtin || cluster) {
      std::cerr << "pgpipe-bench: checking table san_pham...\n";
      if (ensure_table(conninfo)) std::cerr << "pgpipe-bench: loaded san_pham (100,000 rows)\n";
    }
    check_statement(conninfo, work);
  }

  server_sampler sampler(conninfo);
  report.server_version = sampler.server_version();
  report.runtime.libpq_version = PQlibVersion();
  run_context ctx;
  ctx.opts = &o;
  ctx.conninfo = conninfo;
  ctx.sampler = &sampler;
  ctx.work = &work;
  ctx.pgbench = pgbench;
  ctx.self_exe = self_exe();
  ctx.postmaster = cluster ? std::optional<pid_t>(cluster->postmaster_pid()) : sampler.local_postmaster();
  ctx.work_dir = pgpipe::devcluster::make_temp_dir("pgpipe-bench-");

  // A B B A: round r runs the drivers in reverse order when r is odd, so
  // neither driver always runs first (warm caches) or last (tired machine).
  std::size_t sweep_cores = 0;
  const std::size_t total = o.repeat * o.pools.size() * report.drivers.size();
  std::size_t index = 0;
  std::optional<sweep_outcome> sweep;
  if (o.sweep) {
    sweep_params sp;
    sp.max_pool = o.sweep_max;
    sweep = run_sweep(ctx, report, sp);
    report.opts = &sweep->shown;
    report.marks = sweep_marks(sweep->sweeps);
    sweep_cores = o.server_cores ? o.server_cores : ctx.postmaster ? report.machine.cpus : 0;
    report.reference_pool = sweep_cores ? rule_of_thumb_pool(sweep_cores) : 0;
  }
  for (std::size_t round = 1; !o.sweep && round <= o.repeat && !interrupted(); ++round) {
    std::vector<std::string> order = report.drivers;
    if (round % 2 == 0) std::reverse(order.begin(), order.end());
    for (std::size_t pool : o.pools) {
      for (const auto& d : order) {
        if (interrupted()) break;
        ++index;
        const std::string label = "[" + std::to_string(index) + "/" + std::to_string(total) + "] round " +
                                  std::to_string(round) + " " + d + " pool " + std::to_string(pool);
        std::optional<tpcb_books> before;
        if (work.tpcb) before = read_tpcb_books(conninfo);
        auto r = run_one(ctx, d, pool, round, label);
        if (before) {
          // Every committed transaction moved all four sums by its delta; a
          // run that left them apart lost or half-applied a transaction.
          const std::string wrong = tpcb_books_mismatch(*before, read_tpcb_books(conninfo));
          if (!wrong.empty()) {
            r.ok = false;
            r.failure = wrong + (r.failure.empty() ? "" : "; " + r.failure);
          }
        }
        std::cerr << label << ": " << (r.ok ? "" : "FAILED ") << with_commas(r.qps) << " q/s, p99 " << r.p99_ms
                  << " ms, " << r.errors << " errors, " << r.threads_max << " threads, peak RSS " << r.rss_peak_mb
                  << " MB, " << r.server_connections_max << " server conns"
                  << (r.failure.empty() ? "" : " (" + r.failure + ")") << "\n";
        report.runs.push_back(std::move(r));
      }
    }
  }
  pgpipe::devcluster::remove_tree(ctx.work_dir);
  if (interrupted()) report.notes.push_back("interrupted: the table covers the runs that finished");

  if (sweep && sweep->shown.pools.empty()) {
    std::cerr << "pgpipe-bench: interrupted before the sweep's first pool finished\n";
    return 130;
  }
  std::cout << markdown_report(report);
  if (sweep) std::cout << sweep_markdown(report, sweep->sweeps, sweep_cores, sweep_params{}.tolerance);
  std::cout << std::flush;
  if (o.json_file) write_file(*o.json_file, json_report(report));
  if (o.svg_file) write_file(*o.svg_file, svg_chart(report));
  bool all_ok = true;
  for (const auto& r : report.runs) all_ok = all_ok && r.ok;
  // A sweep ends on a failed run by design (say max_connections at the top
  // of the ladder): it succeeded when every driver got an answer.
  if (sweep) {
    all_ok = std::all_of(sweep->sweeps.begin(), sweep->sweeps.end(),
                         [](const driver_sweep& s) { return s.plan.answer().has_value(); });
  }
  if (interrupted()) return 130;
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  try {
    o = parse_options(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "pgpipe-bench: " << e.what() << "\n";
    return 2;
  }
  if (o.help) {
    std::cout << help_text();
    return 0;
  }
  if (o.child) return child_main(o);
  try {
    if (o.password_file) {
      // The environment, not argv or the conninfo: libpq reads PGPASSWORD in
      // this process, in every child run and in pgbench alike.
      if (::setenv("PGPASSWORD", read_password_file(*o.password_file).c_str(), 1) != 0)
        throw std::runtime_error("--password-file: cannot set PGPASSWORD");
    }
    if (o.conninfo && conninfo_has_password(*o.conninfo))
      std::cerr << "pgpipe-bench: warning: --conninfo holds a password, which every local user can read on the "
                   "command line; use PGPASSWORD or --password-file instead\n";
    return run(o);
  } catch (const std::exception& e) {
    // Messages from libpq and the server never carry the password; the
    // conninfo is only ever printed redacted.
    std::cerr << "pgpipe-bench: " << e.what() << "\n";
    return 1;
  }
}
