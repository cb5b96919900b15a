// blocking_executor with plain callables (no server): completion tokens,
// executors, error mapping, the bounded queue and stop.
#include <pgpipe/blocking_executor.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>
#include <pqxx/except>

#include "support/use_future_ec.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pgpipe::blocking_executor;
using pgpipe::errc;

// A gate a callable can be parked on, so tests control when workers are busy.
class gate {
 public:
  void open() {
    std::lock_guard lk(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST(blocking_executor, use_future_yields_the_value) {
  blocking_executor ex{2};
  auto f = ex.async_run([] { return std::string("forty-two"); }, asio::use_future);
  EXPECT_EQ(f.get(), "forty-two");
}

// As async_client's operations: with use_future a failure throws
// pgpipe::error carrying the diagnostics, never a tuple to unpack.
TEST(blocking_executor, use_future_throws_the_callables_error_with_its_diagnostics) {
  blocking_executor ex{1};
  auto f = ex.async_run(
      []() -> int { throw pqxx::sql_error("ERROR:  division by zero\n", "select 1/0", "22012"); }, asio::use_future);
  try {
    (void)f.get();
    ADD_FAILURE() << "no exception";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::make_sqlstate("22012"));
    EXPECT_EQ(e.diag().sqlstate, "22012");
    EXPECT_EQ(e.diag().message, "division by zero");
  }
  auto v = ex.async_run([] { throw std::runtime_error("gave up"); }, asio::use_future);
  try {
    v.get();
    ADD_FAILURE() << "no exception";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), std::errc::state_not_recoverable);
    EXPECT_EQ(e.diag().client_message, "gave up");
  }
}

TEST(blocking_executor, the_explicit_form_yields_error_code_and_value) {
  blocking_executor ex{2};
  auto f = ex.async_run([] { return std::string("forty-two"); }, pgpipe::test::use_future_ec);
  auto [ec, v] = f.get();
  EXPECT_FALSE(ec);
  EXPECT_EQ(v, "forty-two");
}

TEST(blocking_executor, void_callable_completes_with_error_code_only) {
  blocking_executor ex{1};
  std::atomic<bool> ran{false};
  auto f = ex.async_run([&] { ran = true; }, pgpipe::test::use_future_ec);
  std::error_code ec = f.get();
  EXPECT_FALSE(ec);
  EXPECT_TRUE(ran);
}

TEST(blocking_executor, callback_runs_on_the_handlers_executor_and_keeps_the_loop_alive) {
  blocking_executor ex{2};
  asio::io_context ctx;
  std::thread::id worker, handler_thread;
  int value = 0;
  bool inside_initiation = false;
  bool ran_inside_initiation = false;
  asio::post(ctx, [&] {
    inside_initiation = true;
    ex.async_run(
        [&] {
          worker = std::this_thread::get_id();
          return 7;
        },
        asio::bind_executor(ctx.get_executor(), [&](std::error_code ec, int v) {
          EXPECT_FALSE(ec);
          ran_inside_initiation = inside_initiation;
          handler_thread = std::this_thread::get_id();
          value = v;
        }));
    inside_initiation = false;
  });
  // run() returns only when the completion ran: the pending call counts as
  // outstanding work on the loop.
  ctx.run();
  EXPECT_EQ(value, 7);
  EXPECT_FALSE(ran_inside_initiation);
  EXPECT_EQ(handler_thread, std::this_thread::get_id());
  EXPECT_NE(worker, std::this_thread::get_id());
}

TEST(blocking_executor, coroutine_gets_the_value_or_the_thrown_error) {
  blocking_executor ex{2};
  asio::io_context ctx;
  int got = 0;
  std::string thrown;
  std::string thrown_sqlstate;
  std::error_code tuple_ec;
  asio::co_spawn(
      ctx,
      [&]() -> asio::awaitable<void> {
        got = co_await ex.async_run([] { return 5; }, asio::use_awaitable);
        try {
          (void)co_await ex.async_run(
              []() -> int { throw pqxx::sql_error("ERROR:  boom\n", "select boom()", "P0001"); }, asio::use_awaitable);
        } catch (const pgpipe::error& e) {
          thrown = e.diag().message;
          thrown_sqlstate = e.diag().sqlstate;
        }
        auto [ec, v] = co_await ex.async_run([]() -> int { throw pgpipe::error(errc::pool_timeout, "busy"); },
                                             asio::as_tuple(asio::use_awaitable));
        tuple_ec = ec;
      },
      asio::detached);
  ctx.run();
  EXPECT_EQ(got, 5);
  EXPECT_EQ(thrown, "boom");
  EXPECT_EQ(thrown_sqlstate, "P0001");
  EXPECT_EQ(tuple_ec, errc::pool_timeout);
}

TEST(blocking_executor, coroutine_callers_can_pass_callables_owning_strings) {
  // The pattern the header recommends for GCC 12 (a named callable), with
  // captures that own memory, from many coroutines at once.
  blocking_executor ex{3};
  asio::io_context ctx;
  std::atomic<int> ok{0};
  for (int c = 0; c < 50; ++c) {
    asio::co_spawn(
        ctx,
        [&ex, &ok, c]() -> asio::awaitable<void> {
          for (int i = 0; i < 20; ++i) {
            std::string shorty = "k" + std::to_string(c);
            std::string longer(100, static_cast<char>('a' + i % 26));
            auto call = [shorty, longer] { return shorty + longer; };
            auto [ec, v] = co_await ex.async_run(std::move(call), asio::as_tuple(asio::use_awaitable));
            if (!ec && v == shorty + longer) ++ok;
          }
        },
        asio::detached);
  }
  ctx.run();
  EXPECT_EQ(ok.load(), 50 * 20);
}

TEST(blocking_executor, exceptions_become_error_codes_with_diagnostics) {
  blocking_executor ex{1};
  pgpipe::diagnostics diag;

  auto f1 = ex.async_run([]() -> int { throw pgpipe::error(errc::pool_timeout, "all 8 busy"); }, diag,
                         pgpipe::test::use_future_ec);
  EXPECT_EQ(std::get<0>(f1.get()), errc::pool_timeout);
  EXPECT_EQ(diag.client_message, "all 8 busy");

  // libpqxx's exceptions get the blocking_pool translation.
  auto f2 = ex.async_run(
      []() -> int { throw pqxx::sql_error("ERROR:  division by zero\n", "select 1/0", "22012"); }, diag,
      pgpipe::test::use_future_ec);
  EXPECT_EQ(std::get<0>(f2.get()), pgpipe::make_sqlstate("22012"));
  EXPECT_EQ(diag.sqlstate, "22012");
  EXPECT_EQ(diag.message, "division by zero");

  auto f3 = ex.async_run([]() -> int { throw std::runtime_error("something else"); }, diag, pgpipe::test::use_future_ec);
  EXPECT_EQ(std::get<0>(f3.get()), std::errc::state_not_recoverable);
  EXPECT_EQ(diag.client_message, "something else");

  // Success clears diagnostics left by an earlier failure.
  auto f4 = ex.async_run([] { return 1; }, diag, pgpipe::test::use_future_ec);
  EXPECT_FALSE(std::get<0>(f4.get()));
  EXPECT_TRUE(diag.client_message.empty());
}

TEST(blocking_executor, full_queue_fails_at_once_without_running_the_call) {
  blocking_executor ex{1, 1};
  gate g;
  std::atomic<int> ran{0};
  std::promise<void> busy;
  auto f1 = ex.async_run(
      [&] {
        busy.set_value();
        g.wait();
        ++ran;
      },
      pgpipe::test::use_future_ec);
  busy.get_future().wait();  // the only worker is now held
  auto f2 = ex.async_run([&] { ++ran; }, pgpipe::test::use_future_ec);  // queued (1 of 1)
  auto f3 = ex.async_run([&] { ++ran; }, pgpipe::test::use_future_ec);  // over max_queued
  EXPECT_EQ(f3.get(), errc::queue_full);                     // while the worker is still held
  EXPECT_EQ(ran.load(), 0);
  g.open();
  EXPECT_FALSE(f1.get());
  EXPECT_FALSE(f2.get());
  EXPECT_EQ(ran.load(), 2);
}

TEST(blocking_executor, stop_fails_queued_and_new_calls_with_closed) {
  blocking_executor ex{1};
  gate g;
  std::promise<void> busy;
  auto running = ex.async_run(
      [&] {
        busy.set_value();
        g.wait();
        return 1;
      },
      pgpipe::test::use_future_ec);
  busy.get_future().wait();
  auto queued = ex.async_run([] { return 2; }, pgpipe::test::use_future_ec);
  ex.stop();
  EXPECT_EQ(std::get<0>(queued.get()), errc::closed);
  EXPECT_EQ(std::get<0>(ex.async_run([] { return 3; }, pgpipe::test::use_future_ec).get()), errc::closed);
  g.open();
  auto [ec, v] = running.get();  // a running call finishes normally
  EXPECT_FALSE(ec);
  EXPECT_EQ(v, 1);
}

TEST(blocking_executor, stop_runs_plain_callbacks_of_dropped_calls_before_returning) {
  // A caller tearing down right after stop() must not have a callback run
  // later on some hidden thread.
  blocking_executor ex{1};
  gate g;
  std::promise<void> busy;
  auto running = ex.async_run(
      [&] {
        busy.set_value();
        g.wait();
      },
      pgpipe::test::use_future_ec);
  busy.get_future().wait();
  std::error_code got;
  std::thread::id ran_on;
  ex.async_run([] { return 1; }, [&](std::error_code ec, int) {
    got = ec;
    ran_on = std::this_thread::get_id();
  });
  ex.stop();
  EXPECT_EQ(got, errc::closed);  // already ran, on this thread
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  g.open();
  EXPECT_FALSE(running.get());
}

TEST(blocking_executor, workers_run_calls_in_parallel) {
  constexpr int n = 4;
  blocking_executor ex{n};
  EXPECT_EQ(ex.thread_count(), 4u);
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  std::vector<std::future<std::tuple<std::error_code, bool>>> fs;
  for (int i = 0; i < n; ++i) {
    fs.push_back(ex.async_run(
        [&] {
          // Each call waits for all n to be running at once: only true when
          // n workers run them in parallel (bounded so a failure cannot hang).
          std::unique_lock lk(mu);
          ++arrived;
          cv.notify_all();
          return cv.wait_for(lk, 30s, [&] { return arrived == n; });
        },
        pgpipe::test::use_future_ec));
  }
  for (auto& f : fs) EXPECT_TRUE(std::get<1>(f.get()));
}

TEST(blocking_executor, threads_default_to_pool_size) {
  pgpipe::pool_params p;
  p.max_size = 3;
  blocking_executor ex{p};
  EXPECT_EQ(ex.thread_count(), 3u);
}

}  // namespace
