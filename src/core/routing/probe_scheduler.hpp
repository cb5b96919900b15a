// A thread that calls a function every interval until stopped: the routers'
// probe clock. It only starts probes (the async router's are asynchronous and
// never wait here), so no event loop is ever held by it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace pgpipe::detail {

class probe_scheduler {
 public:
  /// Calls tick() at once, then every `interval`, on a thread of its own.
  probe_scheduler(std::chrono::milliseconds interval, std::function<void()> tick);
  /// stop().
  ~probe_scheduler();
  probe_scheduler(const probe_scheduler&) = delete;
  probe_scheduler& operator=(const probe_scheduler&) = delete;

  /// Wakes the thread and joins it; a tick in progress finishes first.
  /// Idempotent. Must not be called from inside tick().
  void stop();

 private:
  void run();
  const std::chrono::milliseconds interval_;
  const std::function<void()> tick_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace pgpipe::detail
