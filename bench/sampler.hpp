// What the bench observes from outside a run: threads and memory of a process
// tree from /proc, CPU time of the server's processes, and the number of
// client connections the server itself reports in pg_stat_activity.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace pgpipe::bench {

struct proc_status {
  std::size_t threads = 0;
  std::uint64_t rss_kb = 0;  ///< VmRSS
  std::uint64_t hwm_kb = 0;  ///< VmHWM (peak RSS)
};

/// /proc/<pid>/status; nullopt when the process is gone.
std::optional<proc_status> read_status(pid_t pid);
/// Sum over `root` and all its descendants (threads and RSS summed, HWM the
/// largest single one). nullopt when root is gone.
std::optional<proc_status> read_tree_status(pid_t root);
/// Descendants of `root` (children, grandchildren...), from /proc.
std::vector<pid_t> descendants(pid_t root);

/// CPU seconds (user + system) the server has used so far: the postmaster,
/// every live child (backends, walwriter...) and the children it has already
/// reaped (cutime + cstime), so backends that exit mid-run are not lost.
double server_cpu_seconds(pid_t postmaster);
/// CPU seconds (user + system) this process has used so far, from
/// /proc/self/stat: the clock every driver and peer reads at the start and
/// end of its measured window. Tick resolution (10 ms at 100 Hz).
double self_cpu_seconds();

struct machine_info {
  unsigned cpus = 0;
  std::uint64_t memory_mb = 0;
  std::string cpu_model;
  std::string kernel;
};
machine_info read_machine_info();

/// A libpq connection of the bench's own to the bench database, used for
/// pg_stat_activity samples. Not thread-safe.
class server_sampler {
 public:
  /// Throws std::runtime_error when it cannot connect.
  explicit server_sampler(const std::string& conninfo);
  ~server_sampler();
  server_sampler(const server_sampler&) = delete;
  server_sampler& operator=(const server_sampler&) = delete;

  /// Client backends connected to this database, not counting this one;
  /// -1 when the query failed.
  int client_connections();
  std::string server_version();
  /// The postmaster's pid when the server runs on this machine (our backend's
  /// parent in /proc is a postgres process), else nullopt.
  std::optional<pid_t> local_postmaster();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace pgpipe::bench
