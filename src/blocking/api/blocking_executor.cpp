// The worker threads behind blocking_executor: one mutex, one FIFO, one
// condition variable, woken only when a worker is idle (a submit to a fully
// busy executor costs a lock and a push, no system call).
#include <pgpipe/blocking_executor.hpp>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace pgpipe {
namespace detail {

class blocking_workers {
 public:
  blocking_workers(std::size_t threads, std::size_t max_queued) : max_queued_(max_queued) {
    threads = std::max<std::size_t>(threads, 1);
    threads_.reserve(threads);
    for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
  }

  ~blocking_workers() {
    stop();
    for (auto& t : threads_) t.join();
  }

  // Returns the job back when it was not queued (the caller aborts it).
  std::unique_ptr<blocking_job> push(std::unique_ptr<blocking_job> job, std::error_code& why) {
    std::unique_lock lk(mu_);
    if (stopped_) {
      why = errc::closed;
      return job;
    }
    if (queue_.size() >= max_queued_) {
      why = errc::queue_full;
      return job;
    }
    queue_.push_back(std::move(job));
    const bool wake = idle_ > 0;
    lk.unlock();
    if (wake) cv_.notify_one();
    return nullptr;
  }

  void stop() noexcept {
    std::deque<std::unique_ptr<blocking_job>> dropped;
    {
      std::lock_guard lk(mu_);
      if (stopped_) return;
      stopped_ = true;
      dropped.swap(queue_);
    }
    cv_.notify_all();
    for (auto& j : dropped) j->abort(errc::closed, /*may_dispatch=*/true);
  }

  std::size_t thread_count() const noexcept { return threads_.size(); }
  std::size_t queued() const noexcept {
    std::lock_guard lk(mu_);
    return queue_.size();
  }

 private:
  void loop() {
    std::unique_lock lk(mu_);
    for (;;) {
      if (queue_.empty()) {
        if (stopped_) return;
        ++idle_;
        cv_.wait(lk, [&] { return stopped_ || !queue_.empty(); });
        --idle_;
        continue;
      }
      std::unique_ptr<blocking_job> job = std::move(queue_.front());
      queue_.pop_front();
      lk.unlock();
      job->run();
      job.reset();
      lk.lock();
    }
  }

  const std::size_t max_queued_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<blocking_job>> queue_;
  std::size_t idle_ = 0;
  bool stopped_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace detail

blocking_executor::blocking_executor(std::size_t threads, std::size_t max_queued)
    : workers_(std::make_unique<detail::blocking_workers>(threads, max_queued)) {}

blocking_executor::blocking_executor(const pool_params& params)
    : blocking_executor(params.max_size, params.max_queued) {}

blocking_executor::~blocking_executor() = default;

void blocking_executor::submit(detail::blocking_workers* workers, std::unique_ptr<detail::blocking_job> job) {
  std::error_code why;
  job = workers->push(std::move(job), why);
  if (job) job->abort(why, /*may_dispatch=*/false);
}

void blocking_executor::stop() noexcept { workers_->stop(); }

std::size_t blocking_executor::thread_count() const noexcept { return workers_->thread_count(); }

std::size_t blocking_executor::queued() const noexcept { return workers_->queued(); }

}  // namespace pgpipe
