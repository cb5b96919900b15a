// A slow-query log on pool_params::observer: every query slower than a
// threshold is written with its wait for a connection, its time on the
// server, its rows and its outcome. The same hook feeds OpenTelemetry spans
// (start one in on_start, return it, end it in on_end).
//
//   example_slow_query_log "host=... user=... password=... dbname=..." [threshold_ms]
//   PGPIPE_CONNINFO=... example_slow_query_log
#include <pgpipe/pgpipe.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>

namespace {

// The observer runs on the driver's event loops, where it must not block:
// it only queues a line; a thread of its own does the (blocking) writing.
class slow_query_log final : public pgpipe::query_observer {
 public:
  explicit slow_query_log(std::chrono::milliseconds threshold)
      : threshold_(threshold), writer_([this] { write_lines(); }) {}
  ~slow_query_log() override {
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    writer_.join();
  }

  void on_end(const pgpipe::query_event& e) override {
    if (e.total < threshold_) return;  // the fast path: one comparison
    using ms = std::chrono::duration<double, std::milli>;
    // The SQL text only: parameters never reach an observer.
    std::string line = "slow query (" + std::to_string(ms(e.total).count()) + " ms: waited " +
                       std::to_string(ms(e.wait).count()) + " ms, server " + std::to_string(ms(e.server).count()) +
                       " ms) slot " + std::to_string(e.slot) + " pid " + std::to_string(e.backend_pid) + ", " +
                       std::to_string(e.rows) + " rows, " +
                       (e.ec ? e.ec.message() : std::string("ok")) + ": " + std::string(e.sql);
    {
      std::lock_guard lk(mu_);
      lines_.push_back(std::move(line));
    }
    cv_.notify_one();
  }

 private:
  void write_lines() {
    std::unique_lock lk(mu_);
    for (;;) {
      cv_.wait(lk, [this] { return stop_ || !lines_.empty(); });
      while (!lines_.empty()) {
        std::string line = std::move(lines_.front());
        lines_.pop_front();
        lk.unlock();
        std::clog << line << '\n';
        lk.lock();
      }
      if (stop_) return;
    }
  }

  std::chrono::milliseconds threshold_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> lines_;
  bool stop_ = false;
  std::thread writer_;  // last: starts once the members above exist
};

// Fast queries pass unlogged; the sleeping one is logged, and so is the
// failing one when it is slow. Each outcome is checked: only select 1/0 may
// fail, and with division_by_zero.
boost::asio::awaitable<int> run(pgpipe::async_client& client) {
  struct step {
    const char* sql;
    const char* sqlstate;  // the expected error, "" for success
  };
  int unexpected = 0;
  for (const step& s : {step{"select 1", ""}, step{"select pg_sleep(0.2)", ""}, step{"select 2", ""},
                        step{"select 1/0", "22012"}}) {
    auto [ec, r] = co_await client.async_query(s.sql, boost::asio::as_tuple(boost::asio::use_awaitable));
    std::cout << s.sql << " -> " << (ec ? r.diag().to_string() : "ok") << '\n';
    const bool as_expected = *s.sqlstate == '\0' ? !ec : pgpipe::sqlstate_of(ec) == s.sqlstate;
    if (!as_expected) {
      std::cerr << "unexpected outcome for " << s.sql << ": " << (ec ? ec.message() : "success") << '\n';
      ++unexpected;
    }
  }
  co_return unexpected == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const char* conninfo = argc > 1 ? argv[1] : std::getenv("PGPIPE_CONNINFO");
  if (!conninfo) {
    std::cerr << "usage: " << argv[0] << " CONNINFO [threshold_ms] (or set PGPIPE_CONNINFO)\n";
    return 2;
  }
  const std::chrono::milliseconds threshold(argc > 2 ? std::atoi(argv[2]) : 50);

  pgpipe::pool_params params;
  params.conninfo = conninfo;
  params.max_size = 2;
  params.observer = std::make_shared<slow_query_log>(threshold);
  pgpipe::async_client client(params);

  try {
    // The coroutine runs on one of the client's loops; main waits for it.
    const int status = boost::asio::co_spawn(client.get_executor(), run(client), boost::asio::use_future).get();
    std::cout << pgpipe::to_prometheus(client.stats());
    return status;
  } catch (const std::exception& e) {
    std::cerr << "failed: " << e.what() << '\n';
    return 1;
  }
}
