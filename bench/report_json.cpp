// --json: one object per run with the keys docs/benchmarks.md lists under
// `--json FILE` (tools read them by name, so they stay fixed), plus
// errors_by_kind and server_cpu_s per run. Written through the project's one
// JSON writer (src/json_output): valid UTF-8 whatever a server's message
// holds, and numbers that read back exactly.
#include "report.hpp"

#include "json_output/json_output.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

namespace pgpipe::bench {
namespace {

// -1 in run_result means "not measured".
boost::json::value measured(double v) { return v >= 0 ? boost::json::value(v) : boost::json::value(nullptr); }

boost::json::object run_object(const run_result& r) {
  boost::json::object errors_by_kind;
  for (const auto& [kind, n] : r.errors_by_kind) errors_by_kind[kind] = n;
  boost::json::object o{
      {"driver", r.driver},
      {"pool", r.pool},
      {"concurrency", r.concurrency},
      {"duration_s", r.duration_s},
      {"queries", r.queries},
      {"qps", r.qps},
      {"p50_ms", r.p50_ms},
      {"p95_ms", r.p95_ms},
      {"p99_ms", r.p99_ms},
      {"max_ms", r.max_ms},
      {"errors", r.errors},
      {"rss_peak_mb", r.rss_peak_mb},
      {"rss_end_mb", r.rss_end_mb},
      {"threads_max", r.threads_max},
      {"client_cpu_s", r.client_cpu_s},
      {"window_cpu_s", measured(r.window_cpu_s)},
      {"server_connections_max", r.server_connections_max},
      {"startup_ms", measured(r.startup_ms)},
      {"round", r.round},
      {"server_cpu_s", measured(r.server_cpu_s)},
      {"threads_end", r.threads_end},
      {"ok", r.ok},
  };
  if (!r.failure.empty()) o["failure"] = r.failure;
  o["errors_by_kind"] = std::move(errors_by_kind);
  return o;
}

}  // namespace

std::string json_report(const report_input& in) {
  const options& o = *in.opts;
  boost::json::array drivers(in.drivers.begin(), in.drivers.end());
  boost::json::array pools(o.pools.begin(), o.pools.end());
  boost::json::array runs;
  for (const auto& r : in.runs) runs.push_back(run_object(r));
  const boost::json::object doc{
      {"version", 1},
      {"server_version", in.server_version},
      {"machine", {{"cpus", in.machine.cpus}, {"memory_mb", in.machine.memory_mb}}},
      {"params",
       {{"drivers", std::move(drivers)},
        {"pools", std::move(pools)},
        {"concurrency", o.concurrency},
        {"duration_s", o.duration_s},
        {"warmup_s", o.warmup_s},
        {"repeat", o.repeat},
        {"loops", o.loops},
        {"workload", in.workload_name},
        {"sql", in.sql},
        {"server", in.server}}},
      {"runs", std::move(runs)},
  };
  // Top-level keys and each run on its own line: readable, and diffable run by run.
  return json_output::write(doc, {.expand_depth = 2});
}

}  // namespace pgpipe::bench
