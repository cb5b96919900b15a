// The bench's outputs: a Markdown table with verdict lines (stdout), JSON
// (--json) and an SVG chart (--svg), all from the same runs.
#pragma once

#include "options.hpp"
#include "run_result.hpp"
#include "sampler.hpp"

#include <pgpipe/stats.hpp>

#include <map>
#include <string>
#include <vector>

namespace pgpipe::bench {

/// A point ringed on the throughput chart (--sweep's answer per driver).
struct chart_mark {
  std::string driver;
  std::size_t pool = 0;
};

struct report_input {
  const options* opts = nullptr;
  std::vector<std::string> drivers;  ///< the drivers that ran, in listed order
  std::string server_version;
  runtime_info runtime;  ///< the libpq loaded at run time (pool_stats' runtime_info)
  std::string server;  ///< "embedded devcluster (...)" or the redacted conninfo
  std::string workload_name;
  std::string sql;
  machine_info machine;
  std::vector<run_result> runs;
  std::vector<std::string> notes;  ///< skipped drivers and the like
  std::vector<chart_mark> marks;    ///< --sweep: ringed on the throughput chart
  std::size_t reference_pool = 0;   ///< --sweep: the rule of thumb's pool, a dashed line (0: none)
};

/// Medians over the rounds of one driver x pool (failed runs left out).
struct summary_row {
  std::string driver;
  std::size_t pool = 0;
  std::size_t concurrency = 0;
  std::size_t rounds = 0, failed = 0;
  double qps = 0, p50_ms = 0, p95_ms = 0, p99_ms = 0, max_ms = 0;
  double errors = 0, rss_peak_mb = 0, rss_end_mb = 0, threads_max = 0, threads_end = 0, client_cpu_s = 0;
  double server_connections_max = 0, startup_ms = 0, server_cpu_s = -1;
  /// The client's CPU over the measured window per query in it, µs (-1: not
  /// measured, pgbench).
  double cpu_us_per_query = -1;
  std::map<std::string, std::uint64_t> errors_by_kind;  ///< summed over rounds
  std::vector<std::string> failures;
};

std::vector<summary_row> summarize(const report_input& in);
/// "12,345"
std::string with_commas(double v);
/// "3.14" for (3.14159, 2): `digits` after the point.
std::string fixed_digits(double v, int digits);

std::string markdown_report(const report_input& in);
std::string json_report(const report_input& in);
std::string svg_chart(const report_input& in);

}  // namespace pgpipe::bench
