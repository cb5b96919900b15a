// One small interface over both drivers, so a scenario both must pass is
// written once as a typed test (TYPED_TEST_SUITE(..., pgpipe::test::drivers))
// and runs against each by construction.
//
// A driver adapter D has:
//   static constexpr const char* name;              "async" or "blocking"
//   static constexpr bool checks_conninfo_at_construction;
//   static constexpr bool pipelined;                many queries share a connection
//   static constexpr bool watches_idle_connections; notices an idle socket closing
//   explicit D(const pool_params&);                 may throw pgpipe::error
//   outcome run(std::string_view sql, args...);     one query, waited for
//   batch run_all(std::string_view sql, n);         n queries at once, waited for
//   H hold();                                       a connection held exclusively
//                                                   (a lease), released by ~H
//   pool_stats stats() const;
//   std::string log();                              what the driver logged
#pragma once

#include "support/async_kit.hpp"
#include "support/driver_names.hpp"

#include <pgpipe/async_client.hpp>
#include <pgpipe/blocking_pool.hpp>

#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

namespace pgpipe::test {

/// How one query ended, the same for both drivers. `text` holds the code's
/// message and every diagnostics field, for "names the problem" and
/// "never shows the password" checks.
struct outcome {
  std::error_code ec;
  diagnostics diag;
  std::string text;
  /// The first field of the first row as the server sent it ("" when none);
  /// cast to text in the SQL to compare it across drivers.
  std::string first;
};

inline std::string describe(const std::error_code& ec, const diagnostics& d, std::string_view what = {}) {
  std::string t = ec.message() + " | " + d.to_string() + " | " + d.severity + " | " + d.sqlstate + " | " +
                  d.message + " | " + d.detail + " | " + d.hint + " | " + d.context + " | " + d.client_message;
  if (!what.empty()) t += " | " + std::string(what);
  return t;
}

/// What an async query's completion says, as an outcome.
inline outcome outcome_of(const std::error_code& ec, const result& r) {
  outcome o;
  o.ec = ec;
  o.diag = r.diag();
  o.text = describe(ec, o.diag);
  if (!ec && r.size() > 0 && r.columns() > 0) o.first = std::string(r[0][0].text());
  return o;
}

/// The outcomes of n queries started together. Each records how many times it
/// ended, so a test can check "exactly once" after the driver is gone (copies
/// share the record: a late completion would still be counted).
class batch {
 public:
  explicit batch(std::size_t n) : st_(std::make_shared<state>(n)) {}
  void finish(std::size_t i, outcome o) const {
    std::lock_guard lk(st_->mu);
    ++st_->calls[i];
    st_->outs[i] = std::move(o);
    if (++st_->done == st_->outs.size()) st_->cv.notify_all();
  }
  /// True when every query ended within `timeout`.
  bool wait(std::chrono::seconds timeout) const {
    std::unique_lock lk(st_->mu);
    return st_->cv.wait_for(lk, timeout, [this] { return st_->done >= st_->outs.size(); });
  }
  std::size_t size() const { return st_->outs.size(); }
  std::vector<outcome> outcomes() const {
    std::lock_guard lk(st_->mu);
    return st_->outs;
  }
  /// How many times query i ended (1 is the only right answer).
  int calls(std::size_t i) const {
    std::lock_guard lk(st_->mu);
    return st_->calls[i];
  }
  std::size_t failed() const {
    std::lock_guard lk(st_->mu);
    return static_cast<std::size_t>(std::count_if(st_->outs.begin(), st_->outs.end(), [](const outcome& o) { return !!o.ec; }));
  }
  /// "code=count; ..." for failure messages and [figure] lines.
  std::string codes() const {
    std::lock_guard lk(st_->mu);
    std::vector<std::pair<std::string, int>> m;
    for (const auto& o : st_->outs) {
      const std::string k = o.ec ? o.ec.message() : "ok";
      auto it = std::find_if(m.begin(), m.end(), [&](const auto& e) { return e.first == k; });
      if (it == m.end()) m.emplace_back(k, 1);
      else ++it->second;
    }
    std::string s;
    for (const auto& [k, v] : m) s += k + "=" + std::to_string(v) + "; ";
    return s;
  }

 private:
  struct state {
    explicit state(std::size_t n) : outs(n), calls(n, 0) {}
    std::mutex mu;
    std::condition_variable cv;
    std::vector<outcome> outs;
    std::vector<int> calls;
    std::size_t done = 0;
  };
  std::shared_ptr<state> st_;
};

/// The async driver: one loop, a query waited for with use_future (bounded).
class async_driver {
 public:
  static constexpr const char* name = "async";
  /// The constructor only validates params; the conninfo is parsed on connect.
  static constexpr bool checks_conninfo_at_construction = false;
  /// Queries from many callers are pipelined over one connection.
  static constexpr bool pipelined = true;
  /// Each connection reads its socket while idle, so a server that goes away
  /// is noticed before the next query.
  static constexpr bool watches_idle_connections = true;

  explicit async_driver(const pool_params& p) {
    async_client_options o;
    o.loops = 1;
    o.logger = [this](log_level, std::string_view line) {
      std::lock_guard lk(mu_);
      lines_.emplace_back(line);
    };
    client_ = std::make_unique<async_client>(p, o);
  }

  template <class... Args>
  outcome run(std::string_view sql, Args&&... args) {
    auto f = client_->async_query(sql, std::forward<Args>(args)..., pgpipe::test::use_future_ec);
    outcome o;
    if (f.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      o.ec = make_error_code(std::errc::timed_out);
      o.text = "never completed";
      return o;
    }
    auto [ec, r] = f.get();
    return outcome_of(ec, r);
  }
  /// All n submitted at once from this thread (so they pipeline), then waited
  /// for (60 s at most: batch::wait tells).
  batch run_all(std::string_view sql, std::size_t n) {
    batch b(n);
    for (std::size_t i = 0; i < n; ++i)
      client_->async_query(sql, [b, i](std::error_code ec, result r) { b.finish(i, outcome_of(ec, r)); });
    b.wait(std::chrono::seconds(60));
    return b;
  }
  /// A lease; throws std::system_error if none comes.
  async_lease hold() {
    auto [ec, l] = client_->async_acquire(pgpipe::test::use_future_ec).get();
    if (ec) throw std::system_error(ec);
    return std::move(l);
  }
  pool_stats stats() const { return client_->stats(); }
  std::string log() {
    std::lock_guard lk(mu_);
    std::string s;
    for (const auto& l : lines_) s += l + "\n";
    return s;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
  std::unique_ptr<async_client> client_;  // last: destroyed first, before the log it writes to
};

/// The blocking driver: pool.exec on the calling thread; errors are caught
/// into an outcome.
class blocking_driver {
 public:
  static constexpr const char* name = "blocking";
  /// The pool parses the conninfo in its constructor (errc::bad_conninfo).
  static constexpr bool checks_conninfo_at_construction = true;
  /// One query per connection at a time, each on its caller's thread.
  static constexpr bool pipelined = false;
  /// An idle connection is not watched: a dead one is found when next used.
  static constexpr bool watches_idle_connections = false;
  /// run_all's threads: enough to keep a small pool busy and queue behind it.
  static constexpr std::size_t max_threads = 12;

  explicit blocking_driver(const pool_params& p)
      : pool_(p, [this](log_level, std::string_view line) {
          std::lock_guard lk(mu_);
          lines_.emplace_back(line);
        }) {}
  ~blocking_driver() { pool_.set_logger({}); }

  template <class... Args>
  outcome run(std::string_view sql, const Args&... args) {
    outcome o;
    try {
      const pgpipe::result r = pool_.exec(sql, args...);
      if (!r.empty() && r.columns() > 0) o.first = std::string(r[0][0].text());
    } catch (const pgpipe::error& e) {
      o.ec = e.code();
      o.diag = e.diag();
      o.text = describe(o.ec, o.diag, e.what());
    } catch (const std::exception& e) {
      // The driver promises pgpipe::error only: anything else is a failure
      // the test must see, not a crash of the thread that ran it.
      o.ec = std::make_error_code(std::errc::state_not_recoverable);
      o.text = std::string("non-pgpipe exception: ") + e.what();
    }
    return o;
  }
  /// n queries spread over min(n, max_threads) threads, all joined.
  batch run_all(std::string_view sql, std::size_t n) {
    batch b(n);
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> ts;
    for (std::size_t t = 0; t < std::min(n, max_threads); ++t)
      ts.emplace_back([&] {
        for (std::size_t i = next++; i < n; i = next++) b.finish(i, run(sql));
      });
    for (auto& t : ts) t.join();
    return b;
  }
  /// A lease; throws pgpipe::error if none comes.
  blocking_lease hold() { return pool_.acquire(); }
  pool_stats stats() const { return pool_.stats(); }
  std::string log() {
    std::lock_guard lk(mu_);
    std::string s;
    for (const auto& l : lines_) s += l + "\n";
    return s;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
  blocking_pool pool_;  // last: its logger writes to the members above
};

using drivers = ::testing::Types<async_driver, blocking_driver>;

}  // namespace pgpipe::test
