// async_client lifecycle and observability: close/async_close, running on a
// caller's io_context, stats and Prometheus text, the logging hook, the
// blocked-loop watchdog, max_lifetime rotation and idle_timeout.
#include <pgpipe/pgpipe.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"
#include "support/wait.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

using namespace pgpipe::test;  // the shared kit (tests/support)

struct log_sink {
  std::mutex mu;
  std::vector<std::pair<pgpipe::log_level, std::string>> lines;
  pgpipe::logger_fn fn() {
    return [this](pgpipe::log_level l, std::string_view s) {
      std::lock_guard lk(mu);
      lines.emplace_back(l, std::string(s));
    };
  }
  bool contains(std::string_view needle) {
    std::lock_guard lk(mu);
    for (auto& [l, s] : lines)
      if (s.find(needle) != std::string::npos) return true;
    return false;
  }
};

int threads_of_this_process() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return -1;
}

int sockets_of_this_process() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(e.path(), ec);
    if (!ec && target.string().rfind("socket:", 0) == 0) ++n;
  }
  return n;
}

}  // namespace

TEST(async_client, close_lets_in_flight_work_finish_and_rejects_new_work) {
  pgpipe::async_client client(params_for(app_conninfo("async_close"), 2));
  std::vector<std::future<std::tuple<std::error_code, pgpipe::result>>> in_flight;
  for (int i = 0; i < 50; ++i) in_flight.push_back(client.async_query("select $1::int from pg_sleep(0.002)", i, pgpipe::test::use_future_ec));
  // Wait until they are on connections (none queued), then close.
  ASSERT_TRUE(pgpipe::test::wait_until([&] { return client.stats().queued == 0 && client.stats().in_flight > 0; }));
  client.close();
  auto [ec, r] = client.async_query("select 1", pgpipe::test::use_future_ec).get();
  EXPECT_EQ(ec, pgpipe::errc::closed);
  for (int i = 0; i < 50; ++i) {
    auto [e, rr] = in_flight[i].get();
    ASSERT_FALSE(e) << i << ": " << e.message();
    EXPECT_EQ(rr.value<int>(), i);
  }
  std::promise<std::error_code> closed;
  client.async_close([&](std::error_code e) { closed.set_value(e); });
  EXPECT_FALSE(closed.get_future().get());
  EXPECT_TRUE(pgpipe::test::wait_until(
      [&] { return pgpipe::test::shared_cluster().backend_pids("async_close").empty(); }));
  auto s = client.stats();
  EXPECT_EQ(s.idle + s.busy + s.connecting + s.draining, 0u);
}

TEST(async_client, runs_on_a_callers_io_context) {
  asio::io_context io;
  pgpipe::async_client client(params_for(app_conninfo("async_io"), 1), io);
  EXPECT_EQ(client.loop_count(), 1u);
  std::string got;
  client.async_query("select 'on your loop'::text", [&](std::error_code ec, pgpipe::result r) {
    got = ec ? ec.message() : r.value<std::string>();
    client.close();  // io.run() returns once the connection has closed
  });
  io.run();
  EXPECT_EQ(got, "on your loop");
  EXPECT_EQ(client.stats().threads, 0u + 1u);  // no loop thread of its own, only the watchdog
}

// A client on a caller's io_context, destroyed with a query in flight, and
// then the io_context destroyed without running again: the connection (its
// PGconn and sockets) must go with them, and the caller's handler must be
// released, so a future says broken_promise (or closed) instead of waiting
// forever. Nothing runs the posted teardown here: only ownership can free them.
TEST(async_client, destroyed_with_a_query_in_flight_then_its_io_context_leaks_nothing) {
  auto& pg = pgpipe::test::shared_cluster();
  const std::string app = "async_unrun_io";
  const int sockets_before = sockets_of_this_process();
  std::future<std::tuple<std::error_code, pgpipe::result>> in_flight;
  {
    asio::io_context io;
    pgpipe::async_client client(params_for(app_conninfo(app), 1), io);
    bool connected = false;
    client.async_query("select 1", [&](std::error_code, pgpipe::result) { connected = true; });
    ASSERT_TRUE(wait_until([&] {
      io.poll();
      return connected;
    }));
    in_flight = client.async_query("select pg_sleep(1)", pgpipe::test::use_future_ec);
    // The server runs it: the request is written on the connection.
    ASSERT_TRUE(wait_until([&] {
      io.poll();
      return server_connections_where(pg, "application_name = '" + app + "' and state = 'active'") == 1;
    }));
  }  // the client, then the io_context, without io.run()
  const bool answered = in_flight.wait_for(10s) == std::future_status::ready;
  EXPECT_TRUE(answered) << "the handler was neither run nor destroyed";
  if (answered) {
    try {
      auto [ec, r] = in_flight.get();
      EXPECT_EQ(ec, pgpipe::errc::closed) << ec.message();
    } catch (const std::future_error& e) {
      EXPECT_EQ(e.code(), std::future_errc::broken_promise);
    }
  }
  EXPECT_EQ(sockets_of_this_process(), sockets_before) << "the connection's sockets leaked";
  // Once its query ends, the backend finds its client gone.
  EXPECT_TRUE(wait_until([&] { return server_connections(pg, app) == 0; }));
}

TEST(async_client, handler_without_executor_runs_on_a_client_loop_thread) {
  pgpipe::async_client client(params_for(app_conninfo("async_exec"), 1), {.loops = 1});
  std::promise<std::thread::id> handler_thread, loop_thread;
  client.async_query("select 1", [&](std::error_code, pgpipe::result) { handler_thread.set_value(std::this_thread::get_id()); });
  asio::post(client.get_executor(), [&] { loop_thread.set_value(std::this_thread::get_id()); });
  EXPECT_EQ(handler_thread.get_future().get(), loop_thread.get_future().get());
}

TEST(async_client, stats_count_work_and_render_as_prometheus) {
  pgpipe::async_client client(params_for(app_conninfo("async_stats"), 2), {.loops = 2});
  std::vector<std::future<std::tuple<std::error_code, pgpipe::result>>> fs;
  for (int i = 0; i < 100; ++i) fs.push_back(client.async_query(i % 10 == 0 ? "select 1/0" : "select 1", pgpipe::test::use_future_ec));
  for (auto& f : fs) f.get();
  auto s = client.stats();
  EXPECT_EQ(s.completed, 100u);
  EXPECT_EQ(s.errors.server, 10u);
  EXPECT_GE(s.connects, 1u);
  EXPECT_LE(s.connects, 2u);
  EXPECT_EQ(s.threads, 4u);  // two loops + the connector + the watchdog
  EXPECT_EQ(s.in_flight, 0u);
  EXPECT_EQ(s.queued, 0u);
  const std::string text = pgpipe::to_prometheus(s);
  EXPECT_NE(text.find("pgpipe_"), std::string::npos);
  EXPECT_EQ(text.find(pgpipe::test::shared_cluster().password()), std::string::npos);
  // The loop-lag probe runs on every loop.
  EXPECT_TRUE(pgpipe::test::wait_until([&] { return client.stats().loop_lag_last.count() > 0; }));
}

TEST(async_client, thread_count_does_not_grow_with_pool_or_concurrency) {
  const int before = threads_of_this_process();
  {
    auto params = params_for(app_conninfo("async_threads"), 20);
    pgpipe::async_client client(params, {.loops = 2});
    std::vector<std::future<std::tuple<std::error_code, pgpipe::result>>> fs;
    for (int i = 0; i < 2000; ++i) fs.push_back(client.async_query("select $1::int", i, pgpipe::test::use_future_ec));
    for (auto& f : fs) ASSERT_FALSE(std::get<0>(f.get()));
    EXPECT_EQ(threads_of_this_process(), before + 4);  // 2 loops + connector + watchdog, however many connections
  }
  EXPECT_TRUE(pgpipe::test::wait_until([&] { return threads_of_this_process() == before; }));
}

TEST(async_client, logger_reports_connects_and_disconnects_without_the_password) {
  auto& pg = pgpipe::test::shared_cluster();
  log_sink sink;
  pgpipe::async_client_options opts;
  opts.logger = sink.fn();
  pgpipe::async_client client(params_for(app_conninfo("async_log"), 1), opts);
  ASSERT_FALSE(std::get<0>(client.async_query("select 1", pgpipe::test::use_future_ec).get()));
  EXPECT_TRUE(sink.contains("connected"));
  for (pid_t pid : pg.backend_pids("async_log")) pg.terminate_backend(pid);
  EXPECT_TRUE(pgpipe::test::wait_until([&] { return sink.contains("disconnected"); }));
  std::lock_guard lk(sink.mu);
  for (auto& [l, s] : sink.lines) EXPECT_EQ(s.find(pg.password()), std::string::npos) << s;
}

TEST(async_client, watchdog_reports_a_blocked_loop) {
  log_sink sink;
  pgpipe::async_client_options opts;
  opts.loops = 1;
  opts.logger = sink.fn();
  opts.loop_probe_interval = 20ms;
  opts.blocked_loop_threshold = 100ms;
  pgpipe::async_client client(params_for(app_conninfo("async_block"), 1), opts);
  std::promise<void> released;
  auto release = released.get_future().share();
  // A handler that blocks its loop (what the watchdog is for) until the
  // watchdog has spoken.
  asio::post(client.get_executor(), [release] { release.wait_for(10s); });
  const bool reported = pgpipe::test::wait_until([&] { return sink.contains("blocked"); });
  released.set_value();
  EXPECT_TRUE(reported);
  EXPECT_TRUE(pgpipe::test::wait_until([&] { return client.stats().loop_lag_max >= 100ms; }));
}

TEST(async_client, max_lifetime_rotates_connections_without_failing_work) {
  auto params = params_for(app_conninfo("async_rotate"), 2);
  params.max_lifetime = 200ms;
  pgpipe::async_client client(params);
  std::size_t failures = 0, done = 0;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  // Keep work flowing until several connections have been replaced.
  while (client.stats().connects < 5 && std::chrono::steady_clock::now() < deadline) {
    std::vector<std::future<std::tuple<std::error_code, pgpipe::result>>> fs;
    for (int i = 0; i < 50; ++i) fs.push_back(client.async_query("select $1::int from pg_sleep(0.001)", i, pgpipe::test::use_future_ec));
    for (auto& f : fs) {
      auto [ec, r] = f.get();
      ++done;
      if (ec) ++failures;
    }
  }
  EXPECT_GE(client.stats().connects, 5u);
  EXPECT_EQ(failures, 0u) << "of " << done;
}

TEST(async_client, idle_connections_close_after_idle_timeout) {
  auto& pg = pgpipe::test::shared_cluster();
  auto params = params_for(app_conninfo("async_idle"), 2);
  params.idle_timeout = 200ms;
  pgpipe::async_client client(params);
  // The query names its backend; counting afterwards would race the 200 ms
  // idle timeout on a loaded machine.
  auto [ec0, r0] = client.async_query("select application_name = 'async_idle' from pg_stat_activity "
                                      "where pid = pg_backend_pid()", pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(ec0) << ec0.message();
  EXPECT_TRUE(r0.value<bool>());
  EXPECT_TRUE(pgpipe::test::wait_until([&] { return pg.backend_pids("async_idle").empty(); }));
  // And the pool opens a new one on demand.
  auto [ec, r] = client.async_query("select 2", pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(r.value<int>(), 2);
}

TEST(async_client, health_check_replaces_a_dead_idle_connection) {
  auto& pg = pgpipe::test::shared_cluster();
  auto params = params_for(app_conninfo("async_health"), 1);
  params.health_check_interval = 100ms;
  params.connect_timeout = 500ms;  // bounds the check of a hung backend
  pgpipe::async_client client(params);
  ASSERT_FALSE(std::get<0>(client.async_query("select 1", pgpipe::test::use_future_ec).get()));
  auto pids = pg.backend_pids("async_health");
  ASSERT_EQ(pids.size(), 1u);
  // A hung backend looks alive to the kernel; only a check notices.
  pg.signal_backend(pids[0], SIGSTOP);
  const bool replaced = pgpipe::test::wait_until([&] { return client.stats().disconnects >= 1; });
  pg.signal_backend(pids[0], SIGCONT);
  pg.terminate_backend(pids[0]);
  EXPECT_TRUE(replaced);
  auto [ec, r] = client.async_query("select 3", pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(ec) << ec.message();
}

TEST(async_client, destructor_with_work_in_flight_completes_everything_once) {
  auto& pg = pgpipe::test::shared_cluster();
  std::vector<std::atomic<int>> calls(20);
  std::vector<std::error_code> ecs(20);
  {
    pgpipe::async_client client(params_for(app_conninfo("async_dtor"), 1));
    for (int i = 0; i < 20; ++i)
      client.async_query("select pg_sleep(10)", [&, i](std::error_code ec, pgpipe::result) {
        ecs[i] = ec;
        ++calls[i];
      });
    // Written and running on the server when the client goes away.
    ASSERT_TRUE(pgpipe::test::wait_until([&] {
      return pg.query_value("select count(*) from pg_stat_activity where application_name = 'async_dtor' and "
                            "state = 'active'") == "1";
    }));
  }
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(calls[i].load(), 1) << i;
    EXPECT_EQ(ecs[i], pgpipe::errc::closed) << i << ": " << ecs[i].message();
  }
}

TEST(async_client, destroying_the_client_from_its_own_handler_shuts_down_cleanly) {
  auto& pg = pgpipe::test::shared_cluster();
  const int before = threads_of_this_process();
  auto client = std::make_unique<pgpipe::async_client>(params_for(app_conninfo("async_selfdestroy"), 1),
                                                 pgpipe::async_client_options{.loops = 1});
  std::promise<int> p;
  client->async_query("select 5", [&](std::error_code ec, pgpipe::result r) {
    const int v = ec ? -1 : r.value<int>();
    client.reset();  // from the client's own loop thread
    p.set_value(v);
  });
  EXPECT_EQ(p.get_future().get(), 5);
  // The shutdown finishes on another thread: the connection closes and every
  // thread the client started goes away.
  EXPECT_TRUE(pgpipe::test::wait_until([&] { return pg.backend_pids("async_selfdestroy").empty(); }));
  EXPECT_TRUE(pgpipe::test::wait_until([&] { return threads_of_this_process() == before; }));
}
