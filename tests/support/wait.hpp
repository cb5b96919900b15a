// Waiting for conditions that have no event to wait on (pg_stat_activity,
// replication catching up, a process state in /proc). Anything that does
// have an event (a socket, a future, a condition variable) must wait on it
// instead.
#pragma once

#include <chrono>
#include <thread>

namespace pgpipe::test {

/// Calls `predicate` until it returns true or `timeout` passes; returns its
/// last answer. Re-checks every `interval`. Exceptions from the predicate
/// propagate. Use it in an assertion: ASSERT_TRUE(wait_until(...)).
template <class Predicate>
bool wait_until(Predicate&& predicate, std::chrono::milliseconds timeout = std::chrono::seconds(10),
                std::chrono::milliseconds interval = std::chrono::milliseconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (predicate()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return static_cast<bool>(predicate());
    std::this_thread::sleep_for(interval);
  }
}

}  // namespace pgpipe::test
