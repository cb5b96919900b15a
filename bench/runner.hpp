// The parent side of one run: start the child (pgpipe-bench --child, or
// pgbench), sample it from outside every 100 ms (threads and RSS from /proc,
// client connections from pg_stat_activity), print progress, collect its
// result, and never leave it behind (timeout, Ctrl-C, parent death).
#pragma once

#include "options.hpp"
#include "run_result.hpp"
#include "sampler.hpp"
#include "workload.hpp"

#include <csignal>
#include <optional>
#include <string>
#include <sys/types.h>

namespace pgpipe::bench {

struct run_context {
  const options* opts = nullptr;
  std::string conninfo;               ///< full (with password): only ever passed through the environment
  std::optional<pid_t> postmaster;    ///< local server: for its CPU time
  server_sampler* sampler = nullptr;
  const workload* work = nullptr;
  std::optional<std::string> pgbench;  ///< path
  std::string work_dir;                ///< scratch (pgbench scripts and logs)
  std::string self_exe;
};

/// Set by SIGINT/SIGTERM; runs end early and the bench stops cleanly.
bool interrupted() noexcept;
void install_signal_handlers();

/// Runs one driver x pool. `label` prefixes the progress lines. Never throws
/// for a failed run: the result says ok=false and why.
run_result run_one(run_context& ctx, const std::string& driver, std::size_t pool, std::size_t round,
                   const std::string& label);

}  // namespace pgpipe::bench
