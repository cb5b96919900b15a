// --svg: queries/s, peak client RSS and threads against pool size, one
// line per driver (threads on a log scale: 4 and 400 on one axis). Plain SVG text with explicit colours and sizes so it
// renders the same in a browser, on GitHub and in rsvg-convert.
#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>
#include <vector>

namespace pgpipe::bench {
namespace {

std::string f1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

// 1, 2 or 5 times a power of ten, so that about five gridlines cover max.
double nice_step(double max) {
  if (max <= 0) return 1;
  const double raw = max / 5;
  const double p = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= raw) return m * p;
  }
  return 10 * p;
}

std::string tick_label(double v) {
  if (v >= 1000 && std::fmod(v, 1000) == 0) return with_commas(v / 1000) + "k";
  if (v >= 1000) return f1(v / 1000) + "k";
  if (v == std::floor(v)) return with_commas(v);
  return f1(v);
}

const char* colour(const std::string& d, std::size_t i) {
  if (d == "async") return "#1f77b4";
  if (d == "coroutine") return "#2ca02c";
  if (d == "blocking") return "#d62728";
  if (d == "pgbench") return "#7f7f7f";
  static const char* others[] = {"#9467bd", "#ff7f0e", "#8c564b", "#e377c2"};
  return others[i % 4];
}

}  // namespace

std::string svg_chart(const report_input& in) {
  const auto rows = summarize(in);
  const auto& pools = in.opts->pools;
  const double pmin = static_cast<double>(*std::min_element(pools.begin(), pools.end()));
  const double pmax = static_cast<double>(*std::max_element(pools.begin(), pools.end()));
  const bool log_x = pmax / pmin >= 4;

  constexpr int panels_n = 3;
  const int width = 1260, height = 480;
  const int panel_w = 330, panel_h = 300, top = 110;
  const int lefts[panels_n] = {85, 505, 925};
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"DejaVu Sans, Arial, sans-serif\">\n";
  s << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << width / 2 << "\" y=\"28\" text-anchor=\"middle\" font-size=\"18\" font-weight=\"bold\">"
    << "pgpipe-bench: " << in.opts->concurrency << " clients, " << in.machine.cpus << " CPUs, PostgreSQL "
    << escape(in.server_version.substr(0, in.server_version.find(' '))) << "</text>\n";
  s << "<text x=\"" << width / 2 << "\" y=\"48\" text-anchor=\"middle\" font-size=\"12\" fill=\"#555\">"
    << "medians of " << in.opts->repeat << (in.opts->repeat == 1 ? " round" : " rounds") << ", "
    << in.opts->duration_s << " s per run; " << escape(in.workload_name) << " workload</text>\n";

  // Legend, centred under the subtitle.
  {
    const int item_w = 150;
    int x = width / 2 - static_cast<int>(in.drivers.size()) * item_w / 2;
    for (std::size_t i = 0; i < in.drivers.size(); ++i, x += item_w) {
      const char* c = colour(in.drivers[i], i);
      s << "<line x1=\"" << x << "\" y1=\"68\" x2=\"" << x + 28 << "\" y2=\"68\" stroke=\"" << c
        << "\" stroke-width=\"3\"/><circle cx=\"" << x + 14 << "\" cy=\"68\" r=\"4\" fill=\"" << c << "\"/>"
        << "<text x=\"" << x + 36 << "\" y=\"72\" font-size=\"13\">" << escape(in.drivers[i]) << "</text>\n";
    }
  }

  struct panel {
    const char* title;
    const char* y_label;
    std::function<double(const summary_row&)> value;
    bool log_y;
  };
  const panel panels[panels_n] = {
      {"Throughput", "queries/s", [](const summary_row& r) { return r.qps; }, false},
      {"Client memory", "peak RSS (MB)", [](const summary_row& r) { return r.rss_peak_mb; }, false},
      {"Client threads", "threads, peak (log scale)",
       [](const summary_row& r) { return std::max(1.0, r.threads_max); }, true},
  };
  for (int p = 0; p < panels_n; ++p) {
    const int left = lefts[p];
    const bool log_y = panels[p].log_y;
    double ymax = 0;
    for (const auto& r : rows) {
      if (r.failed < r.rounds) ymax = std::max(ymax, panels[p].value(r));
    }
    const double step = nice_step(ymax * 1.05);
    // Log axis: decades from 1 to the first power of ten above the data.
    const double ytop = log_y ? std::pow(10, std::max(1.0, std::ceil(std::log10(std::max(ymax, 1.0)) + 0.05)))
                              : std::max(step, std::ceil(ymax * 1.05 / step) * step);
    auto xpos = [&](double pool) {
      const double t = pmax == pmin ? 0.5
                       : log_x      ? (std::log(pool) - std::log(pmin)) / (std::log(pmax) - std::log(pmin))
                                    : (pool - pmin) / (pmax - pmin);
      return left + 20 + t * (panel_w - 40);
    };
    auto ypos = [&](double v) {
      const double t = log_y ? std::log10(std::max(v, 1.0)) / std::log10(ytop) : v / ytop;
      return top + panel_h - t * panel_h;
    };

    s << "<text x=\"" << left + panel_w / 2 << "\" y=\"" << top - 8
      << "\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">" << panels[p].title << "</text>\n";
    std::vector<double> ticks;
    if (log_y) {
      for (double v = 1; v <= ytop * 1.001; v *= 10) ticks.push_back(v);
    } else {
      for (double v = 0; v <= ytop + step / 2; v += step) ticks.push_back(v);
    }
    for (double v : ticks) {
      const double y = ypos(v);
      s << "<line x1=\"" << left << "\" y1=\"" << f1(y) << "\" x2=\"" << left + panel_w << "\" y2=\"" << f1(y)
        << "\" stroke=\"#e0e0e0\"/><text x=\"" << left - 6 << "\" y=\"" << f1(y + 4)
        << "\" text-anchor=\"end\" font-size=\"11\">" << tick_label(v) << "</text>\n";
    }
    s << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << panel_w << "\" height=\"" << panel_h
      << "\" fill=\"none\" stroke=\"#333\"/>\n";
    for (std::size_t pool : pools) {
      const double x = xpos(static_cast<double>(pool));
      s << "<line x1=\"" << f1(x) << "\" y1=\"" << top + panel_h << "\" x2=\"" << f1(x) << "\" y2=\""
        << top + panel_h + 5 << "\" stroke=\"#333\"/><text x=\"" << f1(x) << "\" y=\"" << top + panel_h + 19
        << "\" text-anchor=\"middle\" font-size=\"11\">" << pool << "</text>\n";
    }
    s << "<text x=\"" << left + panel_w / 2 << "\" y=\"" << top + panel_h + 40
      << "\" text-anchor=\"middle\" font-size=\"12\">pool size (connections" << (log_x ? ", log scale" : "")
      << ")</text>\n";
    s << "<text transform=\"translate(" << left - 55 << "," << top + panel_h / 2
      << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">" << panels[p].y_label << "</text>\n";

    for (std::size_t i = 0; i < in.drivers.size(); ++i) {
      const auto& d = in.drivers[i];
      const char* c = colour(d, i);
      std::string points;
      std::ostringstream marks;
      for (const auto& r : rows) {
        if (r.driver != d || r.failed == r.rounds) continue;
        const double x = xpos(static_cast<double>(r.pool)), y = ypos(panels[p].value(r));
        points += f1(x) + "," + f1(y) + " ";
        marks << "<circle cx=\"" << f1(x) << "\" cy=\"" << f1(y) << "\" r=\"4\" fill=\"" << c << "\"><title>" << d
              << " pool " << r.pool << ": " << tick_label(panels[p].value(r)) << "</title></circle>\n";
      }
      if (points.empty()) continue;
      s << "<polyline points=\"" << points << "\" fill=\"none\" stroke=\"" << c
        << "\" stroke-width=\"2.5\" stroke-linejoin=\"round\"/>\n"
        << marks.str();
    }
    // --sweep: the answer per driver ringed, the rule of thumb dashed.
    if (p == 0) {
      for (const auto& m : in.marks) {
        for (const auto& r : rows) {
          if (r.driver != m.driver || r.pool != m.pool || r.failed == r.rounds) continue;
          const double x = xpos(static_cast<double>(r.pool)), y = ypos(r.qps);
          s << "<circle cx=\"" << f1(x) << "\" cy=\"" << f1(y) << "\" r=\"9\" fill=\"none\" stroke=\"#000\" "
            << "stroke-width=\"1.5\"><title>" << escape(m.driver) << ": pool " << r.pool
            << ", the smallest within 5% of its best</title></circle>\n";
        }
      }
      const double ref = static_cast<double>(in.reference_pool);
      if (in.reference_pool > 0 && ref >= pmin && ref <= pmax) {
        const double x = xpos(ref);
        s << "<line x1=\"" << f1(x) << "\" y1=\"" << top << "\" x2=\"" << f1(x) << "\" y2=\"" << top + panel_h
          << "\" stroke=\"#555\" stroke-dasharray=\"5,4\"/><text x=\"" << f1(x + 4) << "\" y=\"" << top + 14
          << "\" font-size=\"11\" fill=\"#555\">2 x server cores</text>\n";
      }
    }
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace pgpipe::bench
