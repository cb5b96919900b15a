#include "core/routing/probe_scheduler.hpp"

#include <utility>

namespace pgpipe::detail {

probe_scheduler::probe_scheduler(std::chrono::milliseconds interval, std::function<void()> tick)
    : interval_(interval), tick_(std::move(tick)), thread_([this] { run(); }) {}

probe_scheduler::~probe_scheduler() { stop(); }

void probe_scheduler::stop() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void probe_scheduler::run() {
  std::unique_lock lk(mu_);
  while (!stop_) {
    lk.unlock();
    tick_();
    lk.lock();
    // A periodic schedule, not a wait for a condition: stop() wakes it early.
    cv_.wait_for(lk, interval_, [this] { return stop_; });
  }
}

}  // namespace pgpipe::detail
