// --sweep's schedule: every driver climbs the same ladder of pool sizes
// (sweep.hpp) together, so drivers at one pool run back to back on the same
// machine state; a driver drops out when its plan stops.
#pragma once

#include "report.hpp"
#include "runner.hpp"
#include "sweep_report.hpp"

#include <vector>

namespace pgpipe::bench {

struct sweep_outcome {
  /// The options the report shows: pools = every pool that ran, in order.
  options shown;
  std::vector<driver_sweep> sweeps;
};

/// Runs the sweep for report.drivers, appending every run to report.runs.
/// Rounds (--repeat) at one pool alternate the drivers' order (A B, B A), and
/// so do successive pools; the plan gets the median q/s of a pool's rounds.
sweep_outcome run_sweep(run_context& ctx, report_input& report, const sweep_params& params);

}  // namespace pgpipe::bench
