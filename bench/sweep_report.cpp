#include "sweep_report.hpp"

#include <cmath>
#include <sstream>

namespace pgpipe::bench {
std::string sweep_markdown(const report_input& in, const std::vector<driver_sweep>& sweeps, std::size_t server_cores,
                           double tolerance) {
  const auto rows = summarize(in);
  std::ostringstream out;
  out << "\n### Pool size (--sweep): the smallest pool within " << std::lround(tolerance * 100)
      << "% of the best q/s\n\n";
  if (server_cores > 0) {
    out << "- rule of thumb: connections = 2 x server cores = 2 x " << server_cores << " = "
        << rule_of_thumb_pool(server_cores) << "\n";
  } else {
    out << "- rule of thumb: connections = 2 x server cores (the server is not on this machine: "
           "give --server-cores N to see the figure)\n";
  }
  for (const auto& s : sweeps) {
    out << "- **" << s.driver << "**: ";
    const auto a = s.plan.answer();
    const summary_row* row = nullptr;
    for (const auto& r : rows) {
      if (a && r.driver == s.driver && r.pool == a->pool && r.failed < r.rounds) row = &r;
    }
    if (!a || !row) {
      out << "no answer, no run succeeded";
    } else {
      out << "pool " << a->pool << ": " << with_commas(a->qps) << " q/s";
      if (a->best_pool != a->pool) out << " (best " << with_commas(a->best_qps) << " at pool " << a->best_pool << ")";
      out << ", p99 " << fixed_digits(row->p99_ms, row->p99_ms < 10 ? 2 : 1) << " ms, " << with_commas(row->threads_max)
          << " client threads, peak RSS " << fixed_digits(row->rss_peak_mb, 0) << " MB, server CPU "
          << (row->server_cpu_s >= 0 ? fixed_digits(row->server_cpu_s, 1) + " s" : std::string("unknown (remote server)"));
      if (server_cores > 0) {
        // The rule's pool as measured, when the ladder passed through it.
        const std::size_t thumb = rule_of_thumb_pool(server_cores);
        const summary_row* at_thumb = nullptr;
        for (const auto& r : rows) {
          if (r.driver == s.driver && r.pool == thumb && r.failed < r.rounds) at_thumb = &r;
        }
        out << "; rule of thumb (pool " << thumb << ")";
        if (thumb == a->pool) {
          out << " agrees";
        } else if (at_thumb && a->qps > 0) {
          const double change = (at_thumb->qps / a->qps - 1) * 100;
          out << ": " << with_commas(at_thumb->qps) << " q/s (" << (change >= 0 ? "+" : "") << fixed_digits(change, 0)
              << "%) with " << (thumb > a->pool ? with_commas(static_cast<double>(thumb - a->pool)) + " more"
                                                : with_commas(static_cast<double>(a->pool - thumb)) + " fewer")
              << " connections";
        } else {
          out << ": not measured";
        }
      }
    }
    out << "; sweep stopped: " << (s.plan.stop_reason().empty() ? "interrupted" : s.plan.stop_reason()) << "\n";
  }
  return out.str();
}

std::vector<chart_mark> sweep_marks(const std::vector<driver_sweep>& sweeps) {
  std::vector<chart_mark> marks;
  for (const auto& s : sweeps) {
    if (const auto a = s.plan.answer()) marks.push_back({s.driver, a->pool});
  }
  return marks;
}

}  // namespace pgpipe::bench
