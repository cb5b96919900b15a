// --json: exactly the keys issue 5 lists (plus errors_by_kind and
// server_cpu_s per run), written by hand: the format is small and fixed.
#include "report.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace pgpipe::bench {
namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);  // UTF-8 passes through unchanged
        }
    }
  }
  return out + "\"";
}

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

std::string json_report(const report_input& in) {
  const options& o = *in.opts;
  std::ostringstream j;
  j << "{\n  \"version\": 1,\n  \"server_version\": " << quote(in.server_version) << ",\n";
  j << "  \"machine\": {\"cpus\": " << in.machine.cpus << ", \"memory_mb\": " << in.machine.memory_mb << "},\n";
  j << "  \"params\": {\"drivers\": [";
  for (std::size_t i = 0; i < in.drivers.size(); ++i) j << (i ? ", " : "") << quote(in.drivers[i]);
  j << "], \"pools\": [";
  for (std::size_t i = 0; i < o.pools.size(); ++i) j << (i ? ", " : "") << o.pools[i];
  j << "], \"concurrency\": " << o.concurrency << ", \"duration_s\": " << num(o.duration_s)
    << ", \"warmup_s\": " << num(o.warmup_s) << ", \"repeat\": " << o.repeat << ", \"loops\": " << o.loops
    << ", \"workload\": " << quote(in.workload_name) << ", \"sql\": " << quote(in.sql)
    << ", \"server\": " << quote(in.server) << "},\n";
  j << "  \"runs\": [";
  for (std::size_t i = 0; i < in.runs.size(); ++i) {
    const auto& r = in.runs[i];
    j << (i ? ",\n" : "\n") << "    {\"driver\": " << quote(r.driver) << ", \"pool\": " << r.pool
      << ", \"concurrency\": " << r.concurrency << ", \"duration_s\": " << num(r.duration_s)
      << ", \"queries\": " << r.queries << ", \"qps\": " << num(r.qps) << ", \"p50_ms\": " << num(r.p50_ms)
      << ", \"p95_ms\": " << num(r.p95_ms) << ", \"p99_ms\": " << num(r.p99_ms) << ", \"max_ms\": " << num(r.max_ms)
      << ", \"errors\": " << r.errors << ", \"rss_peak_mb\": " << num(r.rss_peak_mb)
      << ", \"rss_end_mb\": " << num(r.rss_end_mb) << ", \"threads_max\": " << r.threads_max
      << ", \"client_cpu_s\": " << num(r.client_cpu_s) << ", \"server_connections_max\": " << r.server_connections_max
      << ", \"startup_ms\": " << (r.startup_ms >= 0 ? num(r.startup_ms) : "null") << ", \"round\": " << r.round
      << ", \"server_cpu_s\": " << (r.server_cpu_s >= 0 ? num(r.server_cpu_s) : "null")
      << ", \"threads_end\": " << r.threads_end << ", \"ok\": " << (r.ok ? "true" : "false");
    if (!r.failure.empty()) j << ", \"failure\": " << quote(r.failure);
    j << ", \"errors_by_kind\": {";
    bool first = true;
    for (const auto& [k, n] : r.errors_by_kind) {
      j << (first ? "" : ", ") << quote(k) << ": " << n;
      first = false;
    }
    j << "}}";
  }
  j << "\n  ]\n}\n";
  return j.str();
}

}  // namespace pgpipe::bench
