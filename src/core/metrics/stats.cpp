// Prometheus text exposition (format 0.0.4) of a pool_stats snapshot.
#include <pgpipe/stats.hpp>

#include <cstdint>
#include <cstdio>
#include <string>

namespace pgpipe {
namespace {

std::string seconds_text(std::int64_t us);

class writer {
 public:
  explicit writer(std::string_view prefix) : prefix_(prefix) {}

  // Each metric family gets its HELP and TYPE once, before its samples, as
  // the format requires.
  void family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    name_into(name);
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    name_into(name);
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  void sample(std::string_view name, std::string_view labels, std::string_view value) {
    name_into(name);
    if (!labels.empty()) {
      out_ += '{';
      out_ += labels;
      out_ += '}';
    }
    out_ += ' ';
    out_ += value;
    out_ += '\n';
  }
  void sample(std::string_view name, std::string_view labels, std::uint64_t v) {
    sample(name, labels, std::to_string(v));
  }
  void seconds(std::string_view name, std::string_view labels, std::chrono::microseconds us) {
    // Exact decimal from integer microseconds: no locale, no float rounding.
    const auto count = us.count();
    const bool negative = count < 0;
    const auto abs = static_cast<std::uint64_t>(negative ? -count : count);
    // snprintf rather than a std::string operator+ chain, on which g++ 12 -O2
    // reports false -Wrestrict/-Wstringop-overflow (GCC bug 105329).
    char text[48];
    std::snprintf(text, sizeof text, "%s%llu.%06llu", negative ? "-" : "",
                  static_cast<unsigned long long>(abs / 1'000'000), static_cast<unsigned long long>(abs % 1'000'000));
    sample(name, labels, std::string_view(text));
  }
  // A histogram family's samples: cumulative _bucket{le=...} ending in
  // le="+Inf" (equal to _count, as the format requires), then _sum, _count.
  void histogram(std::string_view name, const latency_histogram& h) {
    const std::string base(name);
    for (std::size_t i = 0; i < h.le.size(); ++i) {
      const std::string labels = "le=\"" + seconds_text(latency_histogram::bounds_us[i]) + "\"";
      sample(base + "_bucket", labels, h.le[i]);
    }
    sample(base + "_bucket", "le=\"+Inf\"", h.count);
    const auto ns = h.sum.count() < 0 ? 0 : h.sum.count();
    char text[48];
    std::snprintf(text, sizeof text, "%llu.%09llu", static_cast<unsigned long long>(ns / 1'000'000'000),
                  static_cast<unsigned long long>(ns % 1'000'000'000));
    sample(base + "_sum", "", std::string_view(text));
    sample(base + "_count", "", h.count);
  }
  std::string take() { return std::move(out_); }

 private:
  void name_into(std::string_view name) {
    out_ += prefix_;
    out_ += '_';
    out_ += name;
  }
  std::string_view prefix_;
  std::string out_;
};

// A bucket bound in seconds, shortest form ("0.00025", "1", "2.5"): the
// `le` label is compared as a string by some tools, so one spelling per bound.
std::string seconds_text(std::int64_t us) {
  char text[32];
  std::snprintf(text, sizeof text, "%lld.%06lld", static_cast<long long>(us / 1'000'000),
                static_cast<long long>(us % 1'000'000));
  std::string out(text);
  while (out.back() == '0') out.pop_back();
  if (out.back() == '.') out.pop_back();
  return out;
}

}  // namespace

std::string to_prometheus(const pool_stats& s, std::string_view prefix) {
  writer w(prefix);
  w.family("connections", "gauge", "Connections by state.");
  w.sample("connections", "state=\"connecting\"", s.connecting);
  w.sample("connections", "state=\"idle\"", s.idle);
  w.sample("connections", "state=\"busy\"", s.busy);
  w.sample("connections", "state=\"draining\"", s.draining);
  w.sample("connections", "state=\"checking\"", s.checking);

  w.family("requests_in_flight", "gauge", "Requests granted a connection and not yet complete.");
  w.sample("requests_in_flight", "", s.in_flight);
  w.family("requests_queued", "gauge", "Requests waiting for connection capacity.");
  w.sample("requests_queued", "", s.queued);
  w.family("requests_completed_total", "counter", "Queries that ended, successfully or with an error.");
  w.sample("requests_completed_total", "", s.completed);

  w.family("errors_total", "counter", "Failed requests and connection attempts by kind.");
  w.sample("errors_total", "kind=\"pool_timeout\"", s.errors.pool_timeout);
  w.sample("errors_total", "kind=\"queue_full\"", s.errors.queue_full);
  w.sample("errors_total", "kind=\"connection_lost\"", s.errors.connection_lost);
  w.sample("errors_total", "kind=\"query_timeout\"", s.errors.query_timeout);
  w.sample("errors_total", "kind=\"cancelled\"", s.errors.cancelled);
  w.sample("errors_total", "kind=\"server\"", s.errors.server);
  w.sample("errors_total", "kind=\"connect\"", s.errors.connect);
  w.sample("errors_total", "kind=\"other\"", s.errors.other);

  w.family("connects_total", "counter", "Connections established.");
  w.sample("connects_total", "", s.connects);
  w.family("disconnects_total", "counter", "Connections closed (drained, idle, broken or failed checks).");
  w.sample("disconnects_total", "", s.disconnects);

  w.family("loop_lag_seconds", "gauge", "How late posted work ran on the event loops.");
  w.seconds("loop_lag_seconds", "stat=\"last\"", s.loop_lag_last);
  w.seconds("loop_lag_seconds", "stat=\"max\"", s.loop_lag_max);

  w.family("threads", "gauge", "Threads the driver runs (event loops or workers).");
  w.sample("threads", "", s.threads);

  w.family("query_duration_seconds", "histogram", "Queries from the call to their completion, success or not.");
  w.histogram("query_duration_seconds", s.query_duration);
  w.family("acquire_wait_seconds", "histogram", "Waits for pool capacity, from the call to the grant or the pool's failure.");
  w.histogram("acquire_wait_seconds", s.acquire_wait);
  return w.take();
}

}  // namespace pgpipe
