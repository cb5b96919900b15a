#include "child.hpp"

#include "driver.hpp"
#include "measurement.hpp"
#include "run_result.hpp"
#include "sampler.hpp"
#include "tpcb.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <iostream>

namespace pgpipe::bench {
namespace {

void write_line(int fd, const std::string& line) {
  std::string s = line + "\n";
  const char* p = s.data();
  std::size_t left = s.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n <= 0) return;  // the parent went away: nothing left to tell
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

double cpu_seconds_self() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int child_main(const options& o) {
  run_result r;
  r.driver = o.drivers.at(0);
  r.pool = o.pools.at(0);
  r.concurrency = o.concurrency;
  try {
    driver_params p;
    if (const char* c = std::getenv(conninfo_env)) p.conninfo = c;
    p.pool = r.pool;
    p.concurrency = o.concurrency;
    p.loops = o.loops;
    p.prepared = o.prepared;
    p.grow_from = o.grow_from;
    p.growth_connects = o.growth_connects;
    p.growth_interval_ms = o.growth_interval_ms;
    if (const char* pm = std::getenv(postmaster_env)) p.postmaster = std::atol(pm);
    p.empty_observer = o.empty_observer;
    p.work = o.tpcb ? tpcb_workload(o.scale) : o.sql_file ? load_workload_file(*o.sql_file) : builtin_workload();

    measurement m(o.warmup_s, o.duration_s);
    auto d = make_driver(r.driver, p);
    if (!d) throw std::runtime_error("driver '" + r.driver + "' is not built into this binary");
    m.start();
    d->start(m);
    // Draining 10,000 queued calls can take a while on a slow server; past
    // this the run is reported as not drained rather than waited for forever.
    // connect_timeout (10 s) and acquire_timeout (30 s) end a hopeless wait
    // with errors well before 60 s.
    // Memory and threads "at the end" are those of the loaded process, as the
    // window closes and before clients stop and the pool closes.
    std::optional<proc_status> at_end;
    const auto left = m.run_timeline(
        o.result_fd, [&] { return d->pool_open(); }, std::chrono::seconds(60), std::chrono::seconds(30),
        std::chrono::seconds(60), [&] { at_end = read_status(getpid()); });
    m.fill(r);
    if (left > 0) {
      r.failure = std::to_string(left) + " queries still in flight 60 s after the window closed";
    }
    if (m.pool_not_open()) {
      r.failure += std::string(r.failure.empty() ? "" : "; ") + "the pool was not fully open 30 s after the first result";
    }
    if (at_end) {
      r.rss_end_mb = static_cast<double>(at_end->rss_kb) / 1024.0;
      r.threads_end = at_end->threads;
    }
    if (auto s = read_status(getpid())) {
      r.rss_peak_mb = static_cast<double>(s->hwm_kb) / 1024.0;
      r.threads_max = std::max(s->threads, r.threads_end);
    }
    r.client_cpu_s = cpu_seconds_self();
    // Report before closing: a close that hangs must not lose the numbers
    // (the parent kills a child that does not exit in time).
    write_line(o.result_fd, "R " + encode_result(r));
    d->close();
    return 0;
  } catch (const std::exception& e) {
    r.ok = false;
    r.failure = e.what();
    write_line(o.result_fd, "R " + encode_result(r));
    std::cerr << "pgpipe-bench child (" << r.driver << ", pool " << r.pool << "): " << e.what() << "\n";
    return 1;
  }
}

}  // namespace pgpipe::bench
