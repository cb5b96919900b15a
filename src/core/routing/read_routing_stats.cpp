// Prometheus text exposition (format 0.0.4) of a router's routing metrics,
// named like pool_stats' (src/core/metrics/stats.cpp): <prefix>_<what>[_total], one
// label per dimension, seconds as exact decimals.
#include <pgpipe/read_routing.hpp>

#include <cstdint>
#include <cstdio>
#include <string>

namespace pgpipe {
namespace {

// Label values are user-chosen replica names: escape what the format
// requires (backslash, double quote, newline).
std::string label_value(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

struct emitter {
  std::string prefix;
  std::string out;

  void head(std::string_view name, std::string_view type, std::string_view help) {
    out.append("# HELP ").append(prefix).append("_").append(name).append(" ").append(help).append("\n");
    out.append("# TYPE ").append(prefix).append("_").append(name).append(" ").append(type).append("\n");
  }
  void line(std::string_view name, const std::string& labels, const std::string& value) {
    out.append(prefix).append("_").append(name);
    if (!labels.empty()) out.append("{").append(labels).append("}");
    out.append(" ").append(value).append("\n");
  }
};

std::string replica_label(const replica_stats& r) { return "replica=\"" + label_value(r.name) + "\""; }

std::string lag_seconds(const std::optional<std::chrono::milliseconds>& lag) {
  if (!lag) return "NaN";
  const long long ms = lag->count();
  char text[32];
  std::snprintf(text, sizeof text, "%lld.%03lld", ms / 1000, ms % 1000);
  return text;
}

}  // namespace

std::string to_prometheus(const read_routing_stats& s, std::string_view prefix) {
  emitter e{std::string(prefix), {}};
  using std::to_string;
  e.head("read_routing_total", "counter", "Read-only requests by where the router sent them.");
  e.line("read_routing_total", "decision=\"replica\"", to_string(s.reads_to_replica));
  e.line("read_routing_total", "decision=\"primary_no_replica\"", to_string(s.reads_to_primary_no_replica));
  e.line("read_routing_total", "decision=\"primary_lag\"", to_string(s.reads_to_primary_lag));
  e.line("read_routing_total", "decision=\"retried_on_primary\"", to_string(s.reads_retried_on_primary));
  e.line("read_routing_total", "decision=\"retried_on_replica\"", to_string(s.reads_retried_on_replica));

  e.head("primary_probes_total", "counter", "Probes of the primary's WAL position by result.");
  e.line("primary_probes_total", "result=\"ok\"", to_string(s.primary_probes_ok));
  e.line("primary_probes_total", "result=\"failed\"", to_string(s.primary_probes_failed));

  e.head("replica_up", "gauge", "1 when the replica may serve reads (recent successful probe).");
  for (const auto& r : s.replicas) e.line("replica_up", replica_label(r), r.healthy ? "1" : "0");
  e.head("replica_in_recovery", "gauge", "pg_is_in_recovery() at the latest probe (0 once promoted).");
  for (const auto& r : s.replicas) e.line("replica_in_recovery", replica_label(r), r.in_recovery ? "1" : "0");
  e.head("replica_lag_seconds", "gauge",
         "Age of the replica's data: how long ago the primary was at its replayed WAL position (NaN: unknown).");
  for (const auto& r : s.replicas) e.line("replica_lag_seconds", replica_label(r), lag_seconds(r.lag));
  e.head("replica_lag_bytes", "gauge", "WAL bytes the replica has not replayed (NaN: unknown).");
  for (const auto& r : s.replicas)
    e.line("replica_lag_bytes", replica_label(r), r.lag_bytes ? to_string(*r.lag_bytes) : "NaN");
  e.head("replica_reads_total", "counter", "Read-only requests routed to the replica.");
  for (const auto& r : s.replicas) e.line("replica_reads_total", replica_label(r), to_string(r.reads));
  e.head("replica_skipped_for_lag_total", "counter", "Reads that passed the replica over because of max_lag.");
  for (const auto& r : s.replicas)
    e.line("replica_skipped_for_lag_total", replica_label(r), to_string(r.skipped_for_lag));
  e.head("replica_probes_total", "counter", "Probes of the replica by result.");
  for (const auto& r : s.replicas) {
    e.line("replica_probes_total", replica_label(r) + ",result=\"ok\"", to_string(r.probes_ok));
    e.line("replica_probes_total", replica_label(r) + ",result=\"failed\"", to_string(r.probes_failed));
  }
  return std::move(e.out);
}

}  // namespace pgpipe
