// Cancellation races through the async driver: operations are
// cancelled at random (seeded) points -- before they are written, while they
// run, right after they complete -- on the shared pipeline (detach) and on an
// exclusive lease (PQcancel). A user relies on: every operation completes
// exactly once, with its own result or errc::cancelled; and no later
// operation ever fails with 57014 (query_canceled) because of an earlier
// cancel. The seed is printed; PGPIPE_FAULT_SEED=<n> replays a run.
//
// Asio cancellation signals are not thread-safe: the client runs on this
// test's own io_context with one thread, and every initiation and every
// emit() happens on that thread.
#include <pgpipe/async_client.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pgpipe::errc;

// Fixed by default so a failure reproduces and the share of cancels that
// take effect (asserted) is the same run to run; PGPIPE_FAULT_SEED explores.
std::uint32_t seed() {
  if (const char* s = std::getenv("PGPIPE_FAULT_SEED")) return static_cast<std::uint32_t>(std::strtoul(s, nullptr, 10));
  return 20261201;
}

class io_thread {
 public:
  io_thread() : guard_(asio::make_work_guard(io_)), thread_([this] { io_.run(); }) {}
  ~io_thread() {
    guard_.reset();
    thread_.join();
  }
  asio::io_context& io() { return io_; }
  // Runs fn on the io thread and waits for it.
  template <class Fn>
  void run(Fn fn) {
    std::promise<void> done;
    asio::post(io_, [&] {
      fn();
      done.set_value();
    });
    done.get_future().wait();
  }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::thread thread_;
};

struct waiter {
  std::mutex mu;
  std::condition_variable cv;
  std::size_t left = 0;
  void arrive() {
    std::lock_guard lk(mu);
    if (--left == 0) cv.notify_all();
  }
  bool wait(std::chrono::seconds t = 60s) {
    std::unique_lock lk(mu);
    return cv.wait_for(lk, t, [&] { return left == 0; });
  }
};

enum class when { never, at_once, after_delay, after_completion };

TEST(fault_cancel, random_cancels_on_the_shared_pipeline_complete_once_and_never_leak_57014) {
  const auto s = seed();
  std::printf("[figure] cancel.seed=%u\n", s);
  std::mt19937 rng(s);
  io_thread loop;
  pgpipe::pool_params params;
  params.conninfo = pgpipe::test::shared_cluster().conninfo();
  params.max_size = 2;
  auto client = std::make_unique<pgpipe::async_client>(params, loop.io());

  constexpr std::size_t waves = 15;
  constexpr std::size_t per_wave = 200;
  constexpr std::size_t n = waves * per_wave;
  std::vector<int> calls(n, 0);  // touched on the io thread only
  std::vector<std::error_code> codes(n);
  std::vector<bool> wrong_value(n, false);
  std::vector<when> plan(n);
  std::vector<std::unique_ptr<asio::cancellation_signal>> signals(n);
  std::vector<std::unique_ptr<asio::steady_timer>> timers(n);
  for (std::size_t w = 0; w < waves; ++w) {
    waiter done;
    done.left = per_wave;
    loop.run([&] {
      for (std::size_t k = 0; k < per_wave; ++k) {
        const std::size_t i = w * per_wave + k;
        plan[i] = static_cast<when>(rng() % 4);
        signals[i] = std::make_unique<asio::cancellation_signal>();
        const bool slow = rng() % 2 == 0;
        auto handler = [&, i](std::error_code ec, pgpipe::result r) {
          ++calls[i];
          codes[i] = ec;
          if (!ec && r.value<int>(0, r.columns() - 1) != static_cast<int>(i)) wrong_value[i] = true;
          if (plan[i] == when::after_completion) {
            // Right after completion, from the next turn of the loop.
            asio::post(loop.io(), [&, i] { signals[i]->emit(asio::cancellation_type::terminal); });
          }
          done.arrive();
        };
        client->async_query(slow ? "select pg_sleep(0.001), $1::int" : "select $1::int", static_cast<int>(i),
                            asio::bind_cancellation_slot(signals[i]->slot(), std::move(handler)));
        if (plan[i] == when::at_once) signals[i]->emit(asio::cancellation_type::terminal);
        if (plan[i] == when::after_delay) {
          timers[i] = std::make_unique<asio::steady_timer>(loop.io(), std::chrono::microseconds(rng() % 3000));
          timers[i]->async_wait([&, i](const boost::system::error_code&) {
            signals[i]->emit(asio::cancellation_type::terminal);
          });
        }
      }
    });
    ASSERT_TRUE(done.wait()) << "wave " << w << " did not complete";
  }
  // Follow-up work on the same connections: nothing may fail, 57014 least of all.
  waiter follow;
  constexpr std::size_t m = 2000;
  follow.left = m;
  std::map<std::string, int> follow_errors;
  loop.run([&] {
    for (std::size_t i = 0; i < m; ++i) {
      client->async_query("select $1::int", static_cast<int>(i), [&](std::error_code ec, pgpipe::result) {
        if (ec) ++follow_errors[ec.message()];
        follow.arrive();
      });
    }
  });
  ASSERT_TRUE(follow.wait());
  const auto st = client->stats();
  client.reset();  // everything in flight is done; no handler runs after this
  loop.run([&] { timers.clear(); });

  std::map<std::string, int> by_code;
  std::size_t cancelled = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(calls[i], 1) << "request " << i;
    EXPECT_FALSE(wrong_value[i]) << "request " << i << " got another request's answer";
    by_code[codes[i] ? codes[i].message() : "ok"]++;
    if (!codes[i]) continue;
    EXPECT_EQ(codes[i], errc::cancelled) << "request " << i << ": " << codes[i].message();
    EXPECT_NE(pgpipe::sqlstate_of(codes[i]), "57014");
    EXPECT_TRUE(plan[i] == when::at_once || plan[i] == when::after_delay)
        << "request " << i << " failed without being cancelled first: " << codes[i].message();
    ++cancelled;
  }
  EXPECT_TRUE(follow_errors.empty());
  for (auto& [k, v] : follow_errors) ADD_FAILURE() << "follow-up error: " << k << " x" << v;
  EXPECT_GT(cancelled, 0u);
  EXPECT_EQ(st.errors.cancelled, cancelled);
  std::printf("[figure] cancel.shared.requests=%zu cancelled=%zu follow_up_errors=%zu\n", n, cancelled,
              follow_errors.size());
  for (auto& [k, v] : by_code) std::printf("[figure] cancel.shared.outcome %s=%d\n", k.c_str(), v);
}

// On a lease a written query is cancelled with PQcancel. Cancel requests are
// not tied to a query on the wire: one that arrives late hits whatever the
// session runs next. The driver must keep that from reaching a later query.
TEST(fault_cancel, random_cancels_on_a_lease_never_hit_a_later_query_with_57014) {
  const auto s = seed();
  std::printf("[figure] cancel.lease.seed=%u\n", s);
  std::mt19937 rng(s);
  io_thread loop;
  pgpipe::pool_params params;
  params.conninfo = pgpipe::test::shared_cluster().conninfo();
  params.max_size = 1;
  auto client = std::make_unique<pgpipe::async_client>(params, loop.io());
  auto [aec, l] = client->async_acquire(pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(aec) << aec.message();

  constexpr int iterations = 150;
  std::map<std::string, int> first_outcomes;
  std::map<std::string, int> later_outcomes;
  int later_57014 = 0;
  int stray_57014 = 0;  // first queries hit by a previous iteration's cancel
  int double_completions = 0;
  int took_effect = 0;  // iterations whose first query reported errc::cancelled
  for (int it = 0; it < iterations; ++it) {
    const bool pipelined = rng() % 2 == 0;   // later query sent before the first completes, or after
    const int sleep_ms = static_cast<int>(rng() % 4) * 2;
    const auto delay = std::chrono::microseconds(rng() % 8000);
    waiter done;
    done.left = 2;
    std::error_code first_ec;
    std::error_code later_ec;
    int first_calls = 0;
    int later_calls = 0;
    bool emitted = false;         // our cancel was emitted while the first query was still running
    bool emitted_before = false;  // ...as seen by the first query's handler
    asio::cancellation_signal sig;
    asio::steady_timer timer(loop.io(), delay);
    auto later = [&] {
      // Takes a moment, so a stray cancel has something to hit.
      l.async_query("select pg_sleep(0.002), 2", [&](std::error_code ec, pgpipe::result) {
        ++later_calls;
        later_ec = ec;
        done.arrive();
      });
    };
    loop.run([&] {
      l.async_query("select pg_sleep($1::float8 / 1000)", sleep_ms,
                    asio::bind_cancellation_slot(sig.slot(), [&](std::error_code ec, pgpipe::result) {
                      ++first_calls;
                      first_ec = ec;
                      emitted_before = emitted;
                      if (!pipelined) later();
                      done.arrive();
                    }));
      if (pipelined) later();
      timer.async_wait([&](const boost::system::error_code&) {
        if (first_calls == 0) emitted = true;
        sig.emit(asio::cancellation_type::terminal);
      });
    });
    ASSERT_TRUE(done.wait(30s)) << "iteration " << it;
    // The timer may still be pending; make sure it has run before `sig` dies.
    loop.run([&] { timer.cancel(); });
    loop.run([] {});
    if (first_calls != 1 || later_calls != 1) ++double_completions;
    if (first_ec == errc::cancelled) ++took_effect;
    first_outcomes[first_ec ? first_ec.message() : "ok"]++;
    later_outcomes[later_ec ? later_ec.message() : "ok"]++;
    if (pgpipe::sqlstate_of(later_ec) == "57014") ++later_57014;
    EXPECT_FALSE(later_ec) << "iteration " << it << (pipelined ? " (pipelined)" : " (sequential)")
                           << ": a query nobody cancelled failed: " << later_ec.message();
    if (pgpipe::sqlstate_of(first_ec) == "57014" && !emitted_before) {
      // Its own cancel had not been emitted: an earlier iteration's cancel hit it.
      ++stray_57014;
      ADD_FAILURE() << "iteration " << it << ": query_canceled (57014) from an earlier iteration's cancel";
    } else {
      EXPECT_TRUE(!first_ec || first_ec == errc::cancelled)
          << "iteration " << it << ": a cancelled query must report errc::cancelled, got " << first_ec.message();
    }
  }
  // And after the lease, on the shared pool.
  l.release();
  int pool_errors = 0;
  for (int i = 0; i < 50; ++i) {
    auto [ec, r] = client->async_query("select 1", pgpipe::test::use_future_ec).get();
    if (ec) ++pool_errors;
  }
  EXPECT_EQ(pool_errors, 0);
  EXPECT_EQ(double_completions, 0);
  // The test proves something only if cancels did take effect (a driver that
  // ignored every cancel would pass every check above): in a good share of
  // the iterations the first query reported errc::cancelled. With the
  // default seed 38 of 150 did (Release, loaded 2-core machine); the bound
  // leaves room for a slower build, where more queries finish first.
  EXPECT_GE(took_effect, iterations / 15) << "seed " << s;
  client.reset();
  std::printf("[figure] cancel.lease.cancels_took_effect=%d of %d\n", took_effect, iterations);
  std::printf("[figure] cancel.lease.iterations=%d later_query_57014=%d stray_57014_on_next_iteration=%d "
              "pool_errors_after=%d\n",
              iterations, later_57014, stray_57014, pool_errors);
  for (auto& [k, v] : first_outcomes) std::printf("[figure] cancel.lease.cancelled_query %s=%d\n", k.c_str(), v);
  for (auto& [k, v] : later_outcomes) std::printf("[figure] cancel.lease.later_query %s=%d\n", k.c_str(), v);
}

}  // namespace
