// --workload tpcb on the blocking driver: blocking_pool::transaction on a
// blocking_executor with one worker per pool connection (as the blocking
// driver runs the select), the five statements prepared once per connection.
#include "driver.hpp"
#include "tpcb.hpp"

#include <pgpipe/blocking_executor.hpp>
#include <pgpipe/blocking_pool.hpp>

#include <pqxx/pqxx>

#include <algorithm>

namespace pgpipe::bench {
namespace {

class tpcb_blocking_driver final : public driver {
 public:
  explicit tpcb_blocking_driver(driver_params p) : p_(std::move(p)) {}
  ~tpcb_blocking_driver() override { close(); }

  void start(measurement& m) override {
    m_ = &m;
    pool_params pp;
    pp.conninfo = p_.conninfo;
    pp.max_size = p_.pool;
    pp.min_size = p_.pool;
    pp.prepared_statements = p_.prepared;
    pp.max_queued = std::max<std::size_t>(pp.max_queued, p_.concurrency + 100);
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

  static pqxx::result run(pqxx::work& tx, bool prepared, std::size_t k, const auto&... args) {
    if (!prepared) return tx.exec_params(tpcb_statements[k], args...);
    static const char* const names[] = {"tpcb_0", "tpcb_1", "tpcb_2", "tpcb_3", "tpcb_4"};
    // Declares the statement (a map lookup after the first time).
    tx.conn().prepare(names[k], tpcb_statements[k]);
    return tx.exec_prepared(names[k], args...);
  }

  void issue(std::size_t i) {
    if (!m_->begin_query()) return;
    auto& c = clients_[i];
    const tpcb_draw d = draw_tpcb(p_.work.scale, c.random);
    c.started = bench_clock::now();
    workers_->async_run(
        [this, d]() -> std::string {
          return pool_->transaction([&](pqxx::work& tx) -> std::string {
            const bool prep = p_.prepared;
            run(tx, prep, 0, d.delta, d.aid);
            const auto balance = run(tx, prep, 1, d.aid);
            run(tx, prep, 2, d.delta, d.tid);
            run(tx, prep, 3, d.delta, d.bid);
            run(tx, prep, 4, d.tid, d.bid, d.aid, d.delta);
            return balance.size() == 1 ? "" : "wrong_row_count";
          });
        },
        [this, i](std::error_code ec, std::string bad) {
          auto& c = clients_[i];
          if (!ec && !bad.empty()) {
            m_->end_query_failed(c.started, bad);
          } else {
            m_->end_query(c.started, ec);
          }
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
