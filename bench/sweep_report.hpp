// --sweep's output: per driver, the pool the sweep answers with and what it
// costs there, beside the rule of thumb; and the marks for the chart.
#pragma once

#include "report.hpp"
#include "sweep.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace pgpipe::bench {

struct driver_sweep {
  std::string driver;
  sweep_plan plan;
};

/// Markdown: a heading, the rule-of-thumb line (server_cores 0: unknown) and
/// one line per driver: "- **async**: pool 4: 52,100 q/s (best 53,000 at
/// pool 8), p99 3.10 ms, 6 client threads, peak RSS 21 MB, server CPU 15.2 s;
/// sweep stopped: ...". Figures are the medians of the report's runs.
std::string sweep_markdown(const report_input& in, const std::vector<driver_sweep>& sweeps,
                           std::size_t server_cores, double tolerance);

/// The answers as chart marks (report_input::marks).
std::vector<chart_mark> sweep_marks(const std::vector<driver_sweep>& sweeps);

}  // namespace pgpipe::bench
