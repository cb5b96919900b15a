// Medians over rounds: a single run on a shared machine is noise; the
// median of an A B B A series is what the report shows.
#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace pgpipe::bench {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::string fixed_digits(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string with_commas(double v) {
  // Built forwards: std::string::insert here trips g++ 12's -Wrestrict
  // false positive in optimised builds.
  const long long n = std::llround(v);
  const std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  if (n < 0) out.push_back('-');
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::vector<summary_row> summarize(const report_input& in) {
  std::vector<summary_row> rows;
  for (std::size_t pool : in.opts->pools) {
    for (const auto& d : in.drivers) {
      summary_row s;
      s.driver = d;
      s.pool = pool;
      std::map<std::string, std::vector<double>> f;
      for (const auto& r : in.runs) {
        if (r.driver != d || r.pool != pool) continue;
        ++s.rounds;
        s.concurrency = r.concurrency;
        for (const auto& [k, n] : r.errors_by_kind) s.errors_by_kind[k] += n;
        if (!r.ok) {
          ++s.failed;
          s.failures.push_back(r.failure);
          continue;
        }
        f["qps"].push_back(r.qps);
        f["p50"].push_back(r.p50_ms);
        f["p95"].push_back(r.p95_ms);
        f["p99"].push_back(r.p99_ms);
        f["max"].push_back(r.max_ms);
        f["errors"].push_back(static_cast<double>(r.errors));
        f["rss_peak"].push_back(r.rss_peak_mb);
        f["rss_end"].push_back(r.rss_end_mb);
        f["threads"].push_back(static_cast<double>(r.threads_max));
        f["threads_end"].push_back(static_cast<double>(r.threads_end));
        f["cpu"].push_back(r.client_cpu_s);
        f["conns"].push_back(r.server_connections_max);
        f["startup"].push_back(r.startup_ms);
        if (r.server_cpu_s >= 0) f["server_cpu"].push_back(r.server_cpu_s);
        if (r.window_cpu_s >= 0 && r.queries > 0) {
          f["cpu_per_query"].push_back(r.window_cpu_s * 1e6 / static_cast<double>(r.queries));
        }
      }
      if (s.rounds == 0) continue;
      s.qps = median(f["qps"]);
      s.p50_ms = median(f["p50"]);
      s.p95_ms = median(f["p95"]);
      s.p99_ms = median(f["p99"]);
      s.max_ms = median(f["max"]);
      s.errors = median(f["errors"]);
      s.rss_peak_mb = median(f["rss_peak"]);
      s.rss_end_mb = median(f["rss_end"]);
      s.threads_max = median(f["threads"]);
      s.threads_end = median(f["threads_end"]);
      s.client_cpu_s = median(f["cpu"]);
      s.server_connections_max = median(f["conns"]);
      s.startup_ms = median(f["startup"]);
      if (!f["server_cpu"].empty()) s.server_cpu_s = median(f["server_cpu"]);
      if (!f["cpu_per_query"].empty()) s.cpu_us_per_query = median(f["cpu_per_query"]);
      rows.push_back(std::move(s));
    }
  }
  return rows;
}

}  // namespace pgpipe::bench
