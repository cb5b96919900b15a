// The numbers one driver x pool run produces, and the one-line key=value form
// in which a child hands them to the parent over a pipe.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace pgpipe::bench {

struct run_result {
  std::string driver;
  std::size_t pool = 0;
  std::size_t concurrency = 0;
  std::size_t round = 0;
  double duration_s = 0;  ///< the measured window
  std::uint64_t queries = 0;
  double qps = 0;
  double p50_ms = 0, p95_ms = 0, p99_ms = 0, max_ms = 0;
  std::uint64_t errors = 0;
  std::map<std::string, std::uint64_t> errors_by_kind;
  double rss_peak_mb = 0;
  double rss_end_mb = 0;
  std::size_t threads_max = 0;
  /// Threads at the end of the window: the steady state, without the
  /// connector threads a pool may run while it opens its connections.
  std::size_t threads_end = 0;
  double client_cpu_s = 0;
  /// The client's CPU (user + system) over the measured window only, from
  /// /proc/self/stat at the window's start and end; -1: not measured (pgbench).
  double window_cpu_s = -1;
  int server_connections_max = 0;
  double startup_ms = -1;   ///< -1: no query succeeded
  double server_cpu_s = -1;  ///< -1: server not local
  bool ok = true;           ///< false when the run itself failed (see failure)
  std::string failure;
};

/// "key=value key=value ..." with values percent-encoded where needed.
std::string encode_result(const run_result& r);
/// Inverse of encode_result; unknown keys are ignored.
run_result decode_result(const std::string& line);

}  // namespace pgpipe::bench
