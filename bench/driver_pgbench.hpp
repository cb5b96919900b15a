// pgbench as the reference driver: the same statement, -M prepared (-M extended
// with --no-prepared), one client per connection (no pipelining). The parent runs it as the child
// process of the run and reads its per-transaction log afterwards, so its
// numbers cover the same measured window as the other drivers'.
#pragma once

#include "run_result.hpp"
#include "workload.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace pgpipe::bench {

/// pgbench on PATH, else in PostgreSQL's bindir; nullopt when neither.
std::optional<std::string> find_pgbench();

struct pgbench_command {
  std::vector<std::string> argv;
  /// PG* variables carrying the connection (PGPASSWORD among them): pgbench
  /// gets the conninfo through its environment, never its argv.
  std::vector<std::string> env;
  std::string log_prefix;
};

/// "VAR=value" for every conninfo keyword libpq also reads from an
/// environment variable (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE...):
/// how pgbench and the peer programs get the connection, never through argv.
/// Throws std::runtime_error when the conninfo cannot be parsed.
std::vector<std::string> libpq_environment(const std::string& conninfo);

/// Queries per pgbench transaction of the pgbench-pipeline driver.
inline constexpr std::size_t pgbench_pipeline_queries = 10;

/// Writes the script into `dir` and builds the command for one run.
/// pipeline > 1: the script runs that many queries between \startpipeline
/// and \endpipeline (one Sync for all of them); for tpcb (w.tpcb), the
/// transaction runs inside one pipeline.
/// Throws std::runtime_error when the conninfo cannot be parsed.
pgbench_command prepare_pgbench(const std::string& pgbench, const std::string& dir, const std::string& run_tag,
                                const workload& w, const std::string& conninfo, std::size_t pool,
                                double warmup_s, double duration_s, bool prepared = true, std::size_t pipeline = 1);

/// Reads the per-transaction logs of the pgbench process `pid` and fills
/// queries, qps, latency, errors and startup_ms of `r`. Times are
/// microseconds since the epoch: `spawned_us` when pgbench was started; the
/// window is [first completion + warmup, + duration), as for the other
/// drivers. Notes in r.failure when pgbench ended before the window did.
/// Removes the log files.
void read_pgbench_logs(const pgbench_command& cmd, pid_t pid, std::int64_t spawned_us, double warmup_s,
                       double duration_s, run_result& r);

/// From a progress line on pgbench's stderr ("progress: 3.0 s, 2345.6 tps,
/// lat ..."): the tps, else nullopt.
std::optional<double> parse_pgbench_progress(const std::string& line);

}  // namespace pgpipe::bench
