// async: callbacks on async_client (async-coalesced: the same, every query
// marked read-only on read-only sessions, so reads share Syncs). Each logical client is a small state
// record; its completion handler records the latency and issues the next
// query, so the event loops do all the work and no thread waits.
#include "driver.hpp"
#include "query_args.hpp"
#include "async_common.hpp"
#include "sampler.hpp"

#include <pgpipe/async_client.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <thread>

namespace pgpipe::bench {

namespace {

class async_driver final : public driver {
 public:
  explicit async_driver(driver_params p) : p_(std::move(p)) {}

  void start(measurement& m) override {
    m_ = &m;
    const std::size_t loops = p_.loops ? p_.loops : std::max(1u, std::thread::hardware_concurrency());
    client_ = std::make_unique<pgpipe::async_client>(async_pool_params(p_), pgpipe::async_client_options{.loops = loops});
    clients_.resize(p_.concurrency);
    for (std::size_t i = 0; i < clients_.size(); ++i) issue(i);
  }

  bool pool_open() const override {
    const auto s = client_->stats();
    const bool open = s.idle + s.busy + s.checking >= p_.pool;
    if (p_.grow_from != 0) watch_growth(s, open);
    return open;
  }

  void close() override {
    // The destructor closes the pool, waits for work in flight and joins the loops.
    client_.reset();
  }

 private:
  // Small on purpose (10,000 of them): the generator and the arguments are
  // per thread (draw_args).
  struct client_state {
    bench_clock::time_point started;
  };

  void issue(std::size_t i) {
    if (!m_->begin_query()) return;
    auto& c = clients_[i];
    // issue() runs on the loop that completed this client's last query.
    const auto& args = draw_args(p_.work);
    c.started = bench_clock::now();
    pgpipe::query_options opts;
    opts.read_only = p_.read_only;  // async-coalesced
    async_query_n(*client_, opts, p_.work.sql, args, [this, i](std::error_code ec, pgpipe::result r) {
      auto& c = clients_[i];
      if (!ec) {
        if (auto bad = consume(r, p_.work.builtin); !bad.empty()) {
          m_->end_query_failed(c.started, bad);
          issue(i);
          return;
        }
      }
      m_->end_query(c.started, ec);
      issue(i);
    });
  }

  // --grow-from: while the pool grows, q/s on the connections already open
  // and the loops' lag: connecting must not starve the loops.
  // Polled by the main thread every ~100 ms until the pool is open.
  struct growth_watch {
    bool started = false;
    bench_clock::time_point begin, slice_begin;
    std::uint64_t begin_completed = 0, slice_completed = 0;
    double slowest_slice_qps = -1;
    // CPU seconds (user + system) at the start: what the server's processes
    // (postmaster and backends, when local) and this process burn while the
    // pool opens tells how much of the machine the connects took.
    double server_cpu = -1, client_cpu = 0;
  };
  static double client_cpu_now() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  }
  double server_cpu_now() const {
    return p_.postmaster > 0 ? server_cpu_seconds(static_cast<pid_t>(p_.postmaster)) : -1;
  }
  void watch_growth(const pgpipe::pool_stats& s, bool open) const {
    auto& g = growth_;
    const auto now = bench_clock::now();
    if (!g.started) {
      g.started = true;
      g.begin = g.slice_begin = now;
      g.begin_completed = g.slice_completed = s.completed;
      g.server_cpu = server_cpu_now();
      g.client_cpu = client_cpu_now();
      std::fprintf(stderr, "growth: %zu of %zu connections open, growing\n",
                   static_cast<std::size_t>(s.idle + s.busy + s.checking), p_.pool);
      return;
    }
    const double slice_s = std::chrono::duration<double>(now - g.slice_begin).count();
    if (slice_s >= 0.5 || open) {
      if (slice_s > 0.05) {
        const double qps = static_cast<double>(s.completed - g.slice_completed) / slice_s;
        if (g.slowest_slice_qps < 0 || qps < g.slowest_slice_qps) g.slowest_slice_qps = qps;
      }
      g.slice_begin = now;
      g.slice_completed = s.completed;
    }
    if (!open) return;
    const double secs = std::chrono::duration<double>(now - g.begin).count();
    const double server_cpu = g.server_cpu >= 0 ? server_cpu_now() - g.server_cpu : -1;
    const double client_cpu = client_cpu_now() - g.client_cpu;
    std::fprintf(stderr,
                 "growth: to %zu connections in %.0f ms: %.0f q/s during growth (slowest 0.5 s: %.0f q/s), "
                 "loop_lag_max %.1f ms, server CPU %.2f s, client CPU %.2f s (cores busy: %.2f + %.2f)\n",
                 p_.pool, secs * 1000, secs > 0 ? static_cast<double>(s.completed - g.begin_completed) / secs : 0.0,
                 g.slowest_slice_qps, static_cast<double>(s.loop_lag_max.count()) / 1000.0, server_cpu, client_cpu,
                 secs > 0 && server_cpu >= 0 ? server_cpu / secs : -1.0, secs > 0 ? client_cpu / secs : 0.0);
  }

  driver_params p_;
  mutable growth_watch growth_;
  measurement* m_ = nullptr;
  std::vector<client_state> clients_;
  std::unique_ptr<pgpipe::async_client> client_;
};

}  // namespace

std::unique_ptr<driver> make_async_driver(const driver_params& p) { return std::make_unique<async_driver>(p); }

}  // namespace pgpipe::bench
