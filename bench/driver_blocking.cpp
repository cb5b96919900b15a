// blocking: the classic model behind an async front. Each logical client
// submits its query as a call onto a blocking_executor with one worker per
// pool connection; a worker borrows a connection from blocking_pool, blocks
// for the round trip, and the completion (run on the worker, there is no
// other loop) submits the client's next call. 500 clients at pool 20 means
// 20 calls running and up to 480 queued in the executor: the threads that
// do the work are the price the model pays per in-flight query.
#include "async_common.hpp"
#include "blocking_common.hpp"
#include "driver.hpp"

#include <pgpipe/blocking_executor.hpp>
#include <pgpipe/blocking_pool.hpp>

namespace pgpipe::bench {
namespace {

class blocking_driver final : public driver {
 public:
  explicit blocking_driver(driver_params p) : p_(std::move(p)) {}
  ~blocking_driver() override { close(); }

  void start(measurement& m) override {
    m_ = &m;
    const pool_params pp = blocking_pool_params(p_);
    pool_ = std::make_unique<pgpipe::blocking_pool>(pp);
    workers_ = std::make_unique<pgpipe::blocking_executor>(pp);  // pp.max_size threads
    clients_.resize(p_.concurrency);
    for (std::size_t i = 0; i < clients_.size(); ++i) {
      clients_[i].random.seed(0x9e3779b97f4a7c15ULL * (i + 1));
      clients_[i].args.resize(p_.work.params.size());
    }
    for (std::size_t i = 0; i < clients_.size(); ++i) issue(i);
  }

  bool pool_open() const override {
    const auto s = pool_->stats();
    return s.idle + s.busy + s.checking >= p_.pool;
  }

  void close() override {
    if (workers_) workers_->stop();
    workers_.reset();  // joins the workers
    pool_.reset();
  }

 private:
  struct client_state {
    bench::rng random;
    std::vector<std::string> args;
    bench_clock::time_point started;
  };

  void issue(std::size_t i) {
    if (!m_->begin_query()) return;
    auto& c = clients_[i];
    for (std::size_t k = 0; k < c.args.size(); ++k) c.args[k] = draw(p_.work.params[k], c.random);
    c.started = bench_clock::now();
    workers_->async_run(
        [this, i]() -> std::string { return consume(exec_n(*pool_, p_.work.sql, clients_[i].args), p_.work.builtin); },
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

std::unique_ptr<driver> make_blocking_driver(const driver_params& p) { return std::make_unique<blocking_driver>(p); }

}  // namespace pgpipe::bench
