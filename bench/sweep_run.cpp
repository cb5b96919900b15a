#include "sweep_run.hpp"

#include <algorithm>
#include <iostream>

namespace pgpipe::bench {

sweep_outcome run_sweep(run_context& ctx, report_input& report, const sweep_params& params) {
  const options& o = *ctx.opts;
  sweep_outcome out;
  out.shown = o;
  out.shown.pools.clear();
  for (const auto& d : report.drivers) out.sweeps.push_back({d, sweep_plan(params)});

  std::size_t flip = 0;  // alternates the order across rounds and pools
  for (std::size_t step = 1; !interrupted(); ++step) {
    std::vector<driver_sweep*> active;
    for (auto& s : out.sweeps) {
      if (s.plan.next_pool()) active.push_back(&s);
    }
    if (active.empty()) break;
    // Every active plan asks for the same pool: they climb one ladder and
    // only ever leave it.
    const std::size_t pool = *active.front()->plan.next_pool();
    out.shown.pools.push_back(pool);
    std::vector<std::vector<run_result>> got(active.size());
    for (std::size_t round = 1; round <= o.repeat && !interrupted(); ++round, ++flip) {
      std::vector<std::size_t> order(active.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      if (flip % 2 == 1) std::reverse(order.begin(), order.end());
      for (std::size_t i : order) {
        if (interrupted()) break;
        const std::string label = "[sweep step " + std::to_string(step) + "] round " + std::to_string(round) + " " +
                                  active[i]->driver + " pool " + std::to_string(pool);
        auto r = run_one(ctx, active[i]->driver, pool, round, label);
        std::cerr << label << ": " << (r.ok ? "" : "FAILED ") << with_commas(r.qps) << " q/s, p99 " << r.p99_ms
                  << " ms" << (r.failure.empty() ? "" : " (" + r.failure + ")") << "\n";
        got[i].push_back(r);
        report.runs.push_back(std::move(r));
      }
    }
    if (interrupted()) break;
    for (std::size_t i = 0; i < active.size(); ++i) {
      std::vector<double> qps;
      std::string why;
      for (const auto& r : got[i]) {
        if (r.ok) qps.push_back(r.qps);
        else if (why.empty()) why = r.failure;
      }
      // A pool where any round failed ends the sweep: its median would hide
      // the failure, and a larger pool fails the same way.
      if (!why.empty() || qps.empty()) {
        active[i]->plan.record(pool, 0, false, why);
        continue;
      }
      std::sort(qps.begin(), qps.end());
      const std::size_t n = qps.size();
      active[i]->plan.record(pool, n % 2 ? qps[n / 2] : (qps[n / 2 - 1] + qps[n / 2]) / 2, true);
    }
  }
  return out;
}

}  // namespace pgpipe::bench
