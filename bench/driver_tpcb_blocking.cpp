// --workload tpcb on the blocking driver: blocking_pool::transaction on a
// blocking_executor with one worker per pool connection (as the blocking
// driver runs the select), the five statements run with blocking_lease::exec
// (prepared once per connection by the pool, unless --no-prepared).
#include "blocking_common.hpp"
#include "driver.hpp"
#include "tpcb.hpp"

#include <pgpipe/blocking_executor.hpp>
#include <pgpipe/blocking_pool.hpp>

namespace pgpipe::bench {
namespace {

class tpcb_blocking_driver final : public driver {
 public:
  explicit tpcb_blocking_driver(driver_params p) : p_(std::move(p)) {}
  ~tpcb_blocking_driver() override { close(); }

  void start(measurement& m) override {
    m_ = &m;
    const pool_params pp = blocking_pool_params(p_);
    pool_ = std::make_unique<pgpipe::blocking_pool>(pp);
    workers_ = std::make_unique<pgpipe::blocking_executor>(pp);
    clients_.resize(p_.concurrency);
    for (std::size_t i = 0; i < clients_.size(); ++i) clients_[i].random.seed(0x9e3779b97f4a7c15ULL * (i + 1));
    for (std::size_t i = 0; i < clients_.size(); ++i) issue(i);
  }

  bool pool_open() const override {
    const auto s = pool_->stats();
    return s.idle + s.busy + s.checking >= p_.pool;
  }

  void close() override {
    if (workers_) workers_->stop();
    workers_.reset();
    pool_.reset();
  }

 private:
  struct client_state {
    bench::rng random;
    bench_clock::time_point started;
  };

  void issue(std::size_t i) {
    if (!m_->begin_query()) return;
    auto& c = clients_[i];
    const tpcb_draw d = draw_tpcb(p_.work.scale, c.random);
    c.started = bench_clock::now();
    workers_->async_run(
        [this, d]() -> std::string {
          return pool_->transaction([&](blocking_lease& tx) -> std::string {
            (void)tx.exec(tpcb_statements[0], d.delta, d.aid);
            const auto balance = tx.exec(tpcb_statements[1], d.aid);
            (void)tx.exec(tpcb_statements[2], d.delta, d.tid);
            (void)tx.exec(tpcb_statements[3], d.delta, d.bid);
            (void)tx.exec(tpcb_statements[4], d.tid, d.bid, d.aid, d.delta);
            return balance.size() == 1 ? "" : "wrong_row_count";
          });
        },
        [this, i](std::error_code ec, std::string bad) {
          record(*m_, clients_[i].started, ec, bad);
          issue(i);
        });
  }

  driver_params p_;
  measurement* m_ = nullptr;
  std::vector<client_state> clients_;
  std::unique_ptr<pgpipe::blocking_pool> pool_;
  std::unique_ptr<pgpipe::blocking_executor> workers_;
};

}  // namespace

std::unique_ptr<driver> make_tpcb_blocking_driver(const driver_params& p) {
  return std::make_unique<tpcb_blocking_driver>(p);
}

}  // namespace pgpipe::bench
