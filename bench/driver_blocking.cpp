// blocking: the classic model behind an async front. Each logical client
// submits its query as a call onto a blocking_executor with one worker per
// pool connection; a worker borrows a connection from blocking_pool, blocks
// for the round trip, and the completion (run on the worker, there is no
// other loop) submits the client's next call. 500 clients at pool 20 means
// 20 calls running and up to 480 queued in the executor: the threads that
// do the work are the price the model pays per in-flight query.
#include "blocking_common.hpp"
#include "driver.hpp"

#include <pgpipe/blocking_executor.hpp>
#include <pgpipe/blocking_pool.hpp>

#include <pqxx/pqxx>

#include <algorithm>

namespace pgpipe::bench {
namespace {

class blocking_driver final : public driver {
 public:
  explicit blocking_driver(driver_params p) : p_(std::move(p)) {}
  ~blocking_driver() override { close(); }

  void start(measurement& m) override {
    m_ = &m;
    pool_params pp;
    pp.conninfo = p_.conninfo;
    pp.max_size = p_.pool;
    pp.min_size = p_.pool;  // every connection opened up front, as the other drivers do
    pp.prepared_statements = p_.prepared;
    // As for the async driver: every logical client may be waiting at once.
    pp.max_queued = std::max<std::size_t>(pp.max_queued, p_.concurrency + 100);
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
        [this, i]() -> std::string {
          auto lease = pool_->acquire();
          try {
            const auto r = run_statement(*lease, p_.work.sql, p_.prepared, clients_[i].args);
            return consume(r, p_.work.builtin);
          } catch (...) {
            // Marks a broken connection so the pool replaces it.
            detail::rethrow_translated(&lease);
          }
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

std::unique_ptr<driver> make_blocking_driver(const driver_params& p) { return std::make_unique<blocking_driver>(p); }

}  // namespace pgpipe::bench
