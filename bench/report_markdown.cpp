#include "report.hpp"

#include "pq/libpq_version.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

namespace pgpipe::bench {
namespace {

std::string ms(double v) { return fixed_digits(v, v < 10 ? 2 : 1); }

const summary_row* find(const std::vector<summary_row>& rows, const std::string& d, std::size_t pool) {
  for (const auto& r : rows) {
    if (r.driver == d && r.pool == pool && r.failed < r.rounds) return &r;
  }
  return nullptr;
}

std::string ratio(double a, double b) { return b > 0 ? fixed_digits(a / b, 2) + "x" : "n/a"; }

}  // namespace

std::string markdown_report(const report_input& in) {
  const options& o = *in.opts;
  const auto rows = summarize(in);
  std::ostringstream out;
  out << "## pgpipe-bench\n\n";
  if (o.tpcb) out << "- q/s below is transactions per second (tps); books balanced after every run not listed as failed\n";
  out << "- workload: " << in.workload_name << ": `" << in.sql << "`\n";
  out << "- " << (o.tpcb && !o.concurrency_explicit ? std::string("one logical client per connection")
                                                    : std::to_string(o.concurrency) + " logical clients")
      << " in a closed loop (pgbench: one per connection), "
      << fixed_digits(o.duration_s, o.duration_s == std::floor(o.duration_s) ? 0 : 1) << " s measured after "
      << fixed_digits(o.warmup_s, o.warmup_s == std::floor(o.warmup_s) ? 0 : 1) << " s warm-up, " << o.repeat
      << (o.repeat == 1 ? " round" : " rounds (medians; drivers in alternating order)") << "\n";
  out << "- server: PostgreSQL " << in.server_version << ", " << in.server << "\n";
  out << "- client: " << pgpipe::detail::runtime_text(in.runtime) << "\n";
  out << "- machine: " << in.machine.cpus << " CPUs (" << in.machine.cpu_model << "), " << in.machine.memory_mb
      << " MB, " << in.machine.kernel << "\n\n";

  out << "| driver | pool | clients | q/s | p50 ms | p95 ms | p99 ms | max ms | errors | peak RSS MB | end RSS MB "
         "| threads max (end) | client CPU s | CPU µs/query (window) | server conns | server CPU s | startup ms |\n";
  out << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& r : rows) {
    out << "| " << r.driver << " | " << r.pool << " | " << r.concurrency << " | ";
    if (r.failed == r.rounds) {
      out << "failed | | | | | | | | | | | | | |\n";
      continue;
    }
    out << with_commas(r.qps) << " | " << ms(r.p50_ms) << " | " << ms(r.p95_ms) << " | " << ms(r.p99_ms) << " | "
        << ms(r.max_ms) << " | " << with_commas(r.errors) << " | " << fixed_digits(r.rss_peak_mb, 1) << " | "
        << fixed_digits(r.rss_end_mb, 1) << " | " << with_commas(r.threads_max) << " (" << with_commas(r.threads_end) << ") | " << fixed_digits(r.client_cpu_s, 2)
        << " | " << (r.cpu_us_per_query >= 0 ? fixed_digits(r.cpu_us_per_query, 2) : "-") << " | " << with_commas(r.server_connections_max) << " | "
        << (r.server_cpu_s >= 0 ? fixed_digits(r.server_cpu_s, 2) : "-") << " | "
        << (r.startup_ms >= 0 ? ms(r.startup_ms) : "-") << " |\n";
  }

  // Verdicts: ratios within this run, against the blocking driver when it ran
  // (the comparison the project is about), else against pgbench.
  std::string base;
  // tpcb's targets are ratios to pgbench.
  const auto candidates = o.tpcb ? std::vector<const char*>{"pgbench"} : std::vector<const char*>{"blocking", "pgbench"};
  for (const char* candidate : candidates) {
    for (const auto& d : in.drivers) {
      if (base.empty() && d == candidate) base = d;
    }
  }
  out << "\n";
  for (std::size_t pool : o.pools) {
    const summary_row* b = base.empty() ? nullptr : find(rows, base, pool);
    std::vector<std::string> parts;
    for (const auto& d : in.drivers) {
      if (d == base) continue;
      const summary_row* r = find(rows, d, pool);
      if (!r) continue;
      if (!b) {
        parts.push_back(d + " " + with_commas(r->qps) + " q/s with " + with_commas(r->threads_max) + " threads");
        continue;
      }
      parts.push_back(d + " " + ratio(r->qps, b->qps) + " " + base + " q/s (" + with_commas(r->qps) + " vs " +
                      with_commas(b->qps) + ") with " + with_commas(r->threads_max) + " vs " +
                      with_commas(b->threads_max) + " threads, " + fixed_digits(r->rss_peak_mb, 0) + " vs " +
                      fixed_digits(b->rss_peak_mb, 0) + " MB peak RSS, p99 " + ms(r->p99_ms) + " vs " + ms(b->p99_ms) +
                      " ms");
    }
    if (parts.empty()) continue;
    out << "- **pool " << pool << "**: ";
    for (std::size_t i = 0; i < parts.size(); ++i) out << (i ? "; " : "") << parts[i];
    out << "\n";
  }

  // Beside other clients: async's ratios to each peer that ran, per pool
  // (q/s, and the client's CPU per query over the window).
  for (std::size_t pool : o.pools) {
    const summary_row* a = find(rows, "async", pool);
    if (!a || a->failed == a->rounds) continue;
    std::vector<std::string> parts;
    for (const auto& d : in.drivers) {
      if (!is_peer_driver(d)) continue;
      const summary_row* p = find(rows, d, pool);
      if (!p || p->failed == p->rounds) continue;
      std::string part = "async/" + d + " " + ratio(a->qps, p->qps) + " q/s";
      if (a->cpu_us_per_query > 0 && p->cpu_us_per_query > 0) {
        part += ", " + ratio(a->cpu_us_per_query, p->cpu_us_per_query) + " CPU per query (" +
                fixed_digits(a->cpu_us_per_query, 2) + " vs " + fixed_digits(p->cpu_us_per_query, 2) + " µs)";
      }
      parts.push_back(part);
    }
    if (parts.empty()) continue;
    out << "- **beside other clients, pool " << pool << "**: ";
    for (std::size_t i = 0; i < parts.size(); ++i) out << (i ? "; " : "") << parts[i];
    out << "\n";
  }

  // Which pool size served each driver best: the question --sql users ask.
  if (o.pools.size() > 1) {
    out << "- **best pool size** (q/s): ";
    bool first = true;
    for (const auto& d : in.drivers) {
      const summary_row* best = nullptr;
      for (const auto& r : rows) {
        if (r.driver == d && r.failed < r.rounds && (!best || r.qps > best->qps)) best = &r;
      }
      if (!best) continue;
      out << (first ? "" : ", ") << d << " " << best->pool << " (" << with_commas(best->qps) << ")";
      first = false;
    }
    out << "\n";
  }

  bool any_errors = false;
  for (const auto& r : rows) {
    if (r.errors_by_kind.empty()) continue;
    if (!any_errors) out << "\nErrors by kind (all rounds):\n";
    any_errors = true;
    out << "- " << r.driver << " pool " << r.pool << ":";
    for (const auto& [k, n] : r.errors_by_kind) out << " " << k << " " << with_commas(static_cast<double>(n));
    out << "\n";
  }
  bool any_failed = false;
  for (const auto& r : rows) {
    for (const auto& f : r.failures) {
      if (!any_failed) out << "\nFailed runs:\n";
      any_failed = true;
      out << "- " << r.driver << " pool " << r.pool << ": " << f << "\n";
    }
  }
  for (const auto& r : in.runs) {
    if (r.ok && !r.failure.empty()) out << "- note: " << r.driver << " pool " << r.pool << " round " << r.round << ": " << r.failure << "\n";
  }
  if (!in.notes.empty()) {
    out << "\n";
    for (const auto& n : in.notes) out << "- note: " << n << "\n";
  }
  return out.str();
}

}  // namespace pgpipe::bench
