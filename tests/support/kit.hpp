// Helpers every integration suite shares: pool parameters, what the server
// sees (pg_stat_activity), a sampler of pool and server connections, the
// password-leak check and a port nothing listens on. One copy here; a helper
// a second suite needs moves here instead of being copied.
#pragma once

#include <pgpipe/pool_params.hpp>
#include <pgpipe/stats.hpp>

#include "devcluster/devcluster.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace pgpipe::test {

/// ASan keeps freed memory in a quarantine (256 MB by default), so peak RSS
/// there says nothing about what the code holds: memory bounds are checked in
/// builds without it (tests print the figure either way).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool rss_is_meaningful = false;
#else
inline constexpr bool rss_is_meaningful = true;
#endif

/// The last line of a test with a peak-RSS bound: where rss_is_meaningful is
/// false the bound was not checked, so the test ends as skipped, saying so,
/// rather than passing (a check that failed before still fails it).
#define PGPIPE_SKIP_IF_RSS_UNCHECKED()                                                                        \
  if (!::pgpipe::test::rss_is_meaningful)                                                                     \
  GTEST_SKIP() << "the peak RSS bound is not checked under AddressSanitizer (its quarantine keeps freed "     \
                  "memory); every other check of this test ran"

/// pool_params with `conninfo` and `max_size`, every other field at its
/// documented default; a test sets what it needs on top.
pool_params params_for(const std::string& conninfo, std::size_t max_size);

/// params_for with short bounds on every wait (acquire 10 s, connect 2 s),
/// for suites that stop or break servers: a dead server must fail fast, not
/// hang the suite.
pool_params fault_params(const std::string& conninfo, std::size_t max_size);

/// The shared cluster's conninfo with application_name=`app`, so a test can
/// count its own connections on the server (server_connections).
std::string app_conninfo(const std::string& app);

/// Rows of pg_stat_activity matching the SQL condition `where`.
int server_connections_where(const devcluster::cluster& pg, const std::string& where);
/// Server connections whose application_name is `app`.
int server_connections(const devcluster::cluster& pg, const std::string& app);

/// Adds a test failure for each of `secrets` found in `text`; `where` names
/// the output (what(), a log line, stats...) in the failure message.
void expect_no_secret(std::string_view text, std::initializer_list<std::string_view> secrets, std::string_view where);

/// A loopback TCP port that was free a moment ago and that nothing listens on.
int refused_port();

/// A non-superuser login role limited to two connections (superusers ignore
/// the limit), dropped with its sessions at the end of the test.
class limited_role {
 public:
  limited_role(const devcluster::cluster& pg, std::string name, std::string password);
  ~limited_role();
  limited_role(const limited_role&) = delete;
  limited_role& operator=(const limited_role&) = delete;
  /// A TCP conninfo for this role on `pg`'s server, tagged with application_name=`app`.
  std::string conninfo(const std::string& app) const;
  const std::string& name() const { return name_; }

 private:
  const devcluster::cluster& pg_;
  std::string name_;
  std::string password_;
};

/// Counts arrivals down to zero and lets a test wait for that, bounded:
/// completion handlers arrive from event-loop threads.
class latch_counter {
 public:
  explicit latch_counter(std::size_t expected) : left_(expected) {}
  void arrive() {
    std::lock_guard lk(mu_);
    if (--left_ == 0) cv_.notify_all();
  }
  /// True when every expected arrival came within `timeout`.
  bool wait(std::chrono::seconds timeout = std::chrono::seconds(60)) {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, timeout, [this] { return left_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::size_t left_;
};

/// Samples, until stopped, the most connections a pool and the server (by
/// application_name) held at once: the evidence that a recovering pool does
/// not storm the server. Works for any driver: it only reads stats().
/// pg_stat_activity has no event to wait on, so it polls every 5 ms.
class connection_sampler {
 public:
  connection_sampler(const devcluster::cluster& pg, std::function<pool_stats()> stats, std::string app);
  /// For a pool or client with `pool_stats stats() const` (both drivers).
  template <class Pool>
  connection_sampler(const devcluster::cluster& pg, const Pool& pool, std::string app)
      : connection_sampler(pg, std::function<pool_stats()>([&pool] { return pool.stats(); }), std::move(app)) {}
  ~connection_sampler();
  connection_sampler(const connection_sampler&) = delete;
  connection_sampler& operator=(const connection_sampler&) = delete;

  /// Stops sampling (idempotent); the maxima stay readable.
  void stop();
  int max_server() const { return max_server_.load(); }
  std::size_t max_pool() const { return max_pool_.load(); }

 private:
  void run();
  const devcluster::cluster& pg_;
  const std::function<pool_stats()> stats_;
  const std::string app_;
  std::atomic<bool> stop_{false};
  std::atomic<int> max_server_{0};
  std::atomic<std::size_t> max_pool_{0};
  std::thread thread_;
};

}  // namespace pgpipe::test
