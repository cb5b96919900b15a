#include "run_result.hpp"

#include <cstdio>
#include <sstream>

namespace pgpipe::bench {
namespace {

std::string encode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c <= ' ' || c == '%' || c == '=' || c >= 0x7f) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string decode(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

std::string encode_result(const run_result& r) {
  std::ostringstream o;
  o << "driver=" << encode(r.driver) << " pool=" << r.pool << " concurrency=" << r.concurrency
    << " duration_s=" << num(r.duration_s) << " queries=" << r.queries << " qps=" << num(r.qps)
    << " p50_ms=" << num(r.p50_ms) << " p95_ms=" << num(r.p95_ms) << " p99_ms=" << num(r.p99_ms)
    << " max_ms=" << num(r.max_ms) << " errors=" << r.errors << " rss_peak_mb=" << num(r.rss_peak_mb)
    << " rss_end_mb=" << num(r.rss_end_mb) << " threads_max=" << r.threads_max << " threads_end=" << r.threads_end
    << " client_cpu_s=" << num(r.client_cpu_s) << " window_cpu_s=" << num(r.window_cpu_s) << " startup_ms=" << num(r.startup_ms)
    << " ok=" << (r.ok ? 1 : 0);
  if (!r.failure.empty()) o << " failure=" << encode(r.failure);
  for (const auto& [kind, n] : r.errors_by_kind) o << " err." << encode(kind) << "=" << n;
  return o.str();
}

run_result decode_result(const std::string& line) {
  run_result r;
  std::istringstream in(line);
  std::string item;
  while (in >> item) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = item.substr(0, eq);
    const std::string v = decode(item.substr(eq + 1));
    if (k == "driver") r.driver = v;
    else if (k == "pool") r.pool = std::stoull(v);
    else if (k == "concurrency") r.concurrency = std::stoull(v);
    else if (k == "duration_s") r.duration_s = std::stod(v);
    else if (k == "queries") r.queries = std::stoull(v);
    else if (k == "qps") r.qps = std::stod(v);
    else if (k == "p50_ms") r.p50_ms = std::stod(v);
    else if (k == "p95_ms") r.p95_ms = std::stod(v);
    else if (k == "p99_ms") r.p99_ms = std::stod(v);
    else if (k == "max_ms") r.max_ms = std::stod(v);
    else if (k == "errors") r.errors = std::stoull(v);
    else if (k == "rss_peak_mb") r.rss_peak_mb = std::stod(v);
    else if (k == "rss_end_mb") r.rss_end_mb = std::stod(v);
    else if (k == "threads_max") r.threads_max = std::stoull(v);
    else if (k == "threads_end") r.threads_end = std::stoull(v);
    else if (k == "client_cpu_s") r.client_cpu_s = std::stod(v);
    else if (k == "window_cpu_s") r.window_cpu_s = std::stod(v);
    else if (k == "startup_ms") r.startup_ms = std::stod(v);
    else if (k == "ok") r.ok = v == "1";
    else if (k == "failure") r.failure = v;
    else if (k.rfind("err.", 0) == 0) r.errors_by_kind[decode(k.substr(4))] = std::stoull(v);
  }
  return r;
}

}  // namespace pgpipe::bench
