// blocking-threads (opt-in, not in the default set): the blocking model
// without an executor in front, one OS thread per logical client, each
// calling blocking_pool directly, as a thread-per-request server does. It
// shows the wall the executor hides: threads (and their stacks) grow with
// the callers, not with the pool, and at --concurrency 10000 that is 10,000
// threads.
#include "async_common.hpp"
#include "blocking_common.hpp"
#include "driver.hpp"

#include <pgpipe/blocking_pool.hpp>

#include <thread>

namespace pgpipe::bench {
namespace {

class blocking_threads_driver final : public driver {
 public:
  explicit blocking_threads_driver(driver_params p) : p_(std::move(p)) {}
  ~blocking_threads_driver() override { close(); }

  void start(measurement& m) override {
    m_ = &m;
    pool_ = std::make_unique<pgpipe::blocking_pool>(blocking_pool_params(p_));
    threads_.reserve(p_.concurrency);
    // A thread that cannot be created is the wall itself: std::system_error
    // ends the run with the kernel's reason (EAGAIN) after joining the rest.
    try {
      for (std::size_t i = 0; i < p_.concurrency; ++i) threads_.emplace_back([this, i] { client(i); });
    } catch (const std::system_error& e) {
      m.stop_now();
      close();
      throw std::runtime_error("could not start thread " + std::to_string(threads_.size() + 1) + " of " +
                               std::to_string(p_.concurrency) + ": " + e.what());
    }
  }

  bool pool_open() const override {
    const auto s = pool_->stats();
    return s.idle + s.busy + s.checking >= p_.pool;
  }

  void close() override {
    for (auto& t : threads_) t.join();
    threads_.clear();
    pool_.reset();
  }

 private:
  void client(std::size_t i) {
    rng random(0x9e3779b97f4a7c15ULL * (i + 1));
    std::vector<std::string> args(p_.work.params.size());
    while (m_->begin_query()) {
      for (std::size_t k = 0; k < args.size(); ++k) args[k] = draw(p_.work.params[k], random);
      const auto started = bench_clock::now();
      try {
        record(*m_, started, {}, consume(exec_n(*pool_, p_.work.sql, args), p_.work.builtin));
      } catch (...) {
        m_->end_query(started, detail::translate_exception(std::current_exception(), nullptr));
      }
    }
  }

  driver_params p_;
  measurement* m_ = nullptr;
  std::unique_ptr<pgpipe::blocking_pool> pool_;
  std::vector<std::thread> threads_;
};

}  // namespace

std::unique_ptr<driver> make_blocking_threads_driver(const driver_params& p) {
  return std::make_unique<blocking_threads_driver>(p);
}

}  // namespace pgpipe::bench
