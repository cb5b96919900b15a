// Read routing through both drivers' routers (async_read_router, blocking_read_router)
// against a devcluster primary and its streaming standby: marked reads go to
// the standby and unmarked requests to the primary (each query asks
// pg_is_in_recovery() itself); with the standby stopped reads go to the
// primary without caller errors, and come back when it starts again; with
// replay paused past the lag bound reads go to the primary, and come back
// after resume. Routing decisions and lag are checked in stats() and
// to_prometheus(). With the standby down, a marked write is refused (25006)
// on the primary too; an async read re-run on the primary stays cancellable
// through the caller's slot.
#include "support/cluster_fixture.hpp"
#include "support/driver_adapter.hpp"
#include "support/kit.hpp"
#include "support/router_adapter.hpp"
#include "support/standby.hpp"
#include "support/wait.hpp"

#include <pgpipe/blocking_read_router.hpp>
#include <pgpipe/async_read_router.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using pgpipe::test::outcome;
using pgpipe::test::async_router;
using pgpipe::test::blocking_router;
using pgpipe::test::router_names;
using pgpipe::test::routers;

// Asked in every routed query: where did it run?
constexpr const char* where_sql = "select case when pg_is_in_recovery() then 'standby' else 'primary' end";

template <class Router>
class scaleout_routing : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    unsetenv("PGPASSWORD");
    setenv("PGPASSFILE", "/nonexistent/pgpipe-test-pgpass", 1);
  }
  void SetUp() override {
    PGPIPE_SKIP_WITHOUT_STANDBY();
    primary_ = pgpipe::test::fresh_cluster();
    primary_->exec("create table routed (v int)");
    standby_ = std::make_unique<pgpipe::test::standby_instance>(*primary_);
    standby_->wait_for_streaming();
    standby_->wait_for_replay();
  }
  void TearDown() override {
    standby_.reset();
    primary_.reset();
  }
  std::unique_ptr<Router> make_router(std::optional<std::chrono::milliseconds> max_lag = std::nullopt) {
    auto p = pgpipe::test::fault_params(primary_->conninfo(), 4);
    auto r = pgpipe::test::fault_params(standby_->conninfo(), 4);
    // A read waiting for a dead replica's pool is re-run on the primary when
    // this wait fails: keep it short (docs/scaling.md).
    r.acquire_timeout = 2s;
    r.connect_timeout = 1s;
    r.connect_backoff_max = 100ms;
    pgpipe::read_routing_params rp;
    rp.probe_interval = 100ms;
    rp.probe_timeout = 1s;
    rp.max_lag = max_lag;
    rp.replica_names = {"standby"};
    return std::make_unique<Router>(p, r, rp);
  }
  // Reads until one runs where expected (routing changes within a few
  // probe intervals); every read on the way must succeed.
  bool reads_reach(Router& router, const std::string& where, std::vector<std::string>& errors) {
    return pgpipe::test::wait_until(
        [&] {
          const outcome o = router.read(where_sql);
          ++reads_made_;
          if (o.ec) errors.push_back(o.text);
          return !o.ec && o.first == where;
        },
        30s, 20ms);
  }

  std::unique_ptr<pgpipe::devcluster::cluster> primary_;
  std::unique_ptr<pgpipe::test::standby_instance> standby_;
  /// Marked reads reads_reach made (each is routed once).
  std::uint64_t reads_made_ = 0;
};
TYPED_TEST_SUITE(scaleout_routing, routers, router_names);

TYPED_TEST(scaleout_routing, marked_reads_go_to_the_standby_and_everything_else_to_the_primary) {
  auto router = this->make_router();
  std::vector<std::string> errors;
  ASSERT_TRUE(this->reads_reach(*router, "standby", errors)) << "reads never reached the standby";
  for (int i = 0; i < 20; ++i) {
    const outcome r = router->read(where_sql);
    ASSERT_FALSE(r.ec) << r.text;
    EXPECT_EQ(r.first, "standby");
    const outcome w = router->write(where_sql);
    ASSERT_FALSE(w.ec) << w.text;
    EXPECT_EQ(w.first, "primary");
  }
  const outcome l = router->on_lease(where_sql);
  ASSERT_FALSE(l.ec) << l.text;
  EXPECT_EQ(l.first, "primary");
  // Unmarked writes succeed (they are on the primary); a write marked
  // read-only reaches the standby, which refuses it.
  EXPECT_FALSE(router->write("insert into routed values (1)").ec);
  const outcome bad = router->read("insert into routed values (2)");
  EXPECT_EQ(bad.ec, pgpipe::make_sqlstate("25006")) << bad.text;
  EXPECT_TRUE(errors.empty()) << errors.front();

  const auto s = router->stats();
  EXPECT_GE(s.reads_to_replica, 21u);
  EXPECT_EQ(s.reads_to_primary_lag, 0u);
  ASSERT_EQ(s.replicas.size(), 1u);
  EXPECT_TRUE(s.replicas[0].healthy);
  EXPECT_TRUE(s.replicas[0].in_recovery);
  EXPECT_GE(s.replicas[0].reads, 21u);
  EXPECT_GT(s.replicas[0].probes_ok, 0u);
  EXPECT_GT(s.primary_probes_ok, 0u);
  EXPECT_GT(s.replicas[0].pool.completed, 0u);
  EXPECT_GT(s.primary.completed, 0u);
  const std::string prom = to_prometheus(s);
  EXPECT_NE(prom.find("pgpipe_read_routing_total{decision=\"replica\"} " + std::to_string(s.reads_to_replica)),
            std::string::npos)
      << prom;
  EXPECT_NE(prom.find("pgpipe_replica_up{replica=\"standby\"} 1"), std::string::npos) << prom;
  pgpipe::test::expect_no_secret(prom, {this->primary_->password()}, "to_prometheus");
}

// The probes are connections of the router's own: they log in the way the
// pools do, with the password pool_params::before_connect supplies (a
// router whose pools get a fresh token per connect is otherwise blind:
// every probe fails 28P01, the standby is "unhealthy" and reads stay on the
// primary).
TYPED_TEST(scaleout_routing, the_probes_log_in_with_the_password_before_connect_supplies) {
  std::atomic<int> calls{0};
  auto with_token = [&calls](const std::string& password) {
    return [&calls, password](const std::string& conninfo) {
      ++calls;
      return conninfo + " password='" + password + "'";
    };
  };
  auto p = pgpipe::test::fault_params(this->primary_->conninfo_without_password(), 4);
  auto r = pgpipe::test::fault_params(this->standby_->cluster().conninfo_without_password(), 4);
  p.before_connect = with_token(this->primary_->password());
  r.before_connect = with_token(this->standby_->cluster().password());
  pgpipe::read_routing_params rp;
  rp.probe_interval = 100ms;
  rp.probe_timeout = 1s;
  rp.replica_names = {"standby"};
  TypeParam router(p, r, rp);
  std::vector<std::string> errors;
  ASSERT_TRUE(this->reads_reach(router, "standby", errors)) << "reads never reached the standby";
  EXPECT_TRUE(errors.empty()) << errors.front();
  const auto s = router.stats();
  EXPECT_GT(s.primary_probes_ok, 0u);
  EXPECT_EQ(s.primary_probes_failed, 0u);
  ASSERT_EQ(s.replicas.size(), 1u);
  EXPECT_GT(s.replicas[0].probes_ok, 0u);
  EXPECT_EQ(s.replicas[0].probes_failed, 0u);
  EXPECT_TRUE(s.replicas[0].healthy);
  EXPECT_GE(calls.load(), 2) << "the probes' connects did not ask before_connect";
}

TYPED_TEST(scaleout_routing, with_the_standby_stopped_reads_go_to_the_primary_without_errors_and_come_back) {
  auto router = this->make_router();
  std::vector<std::string> errors;
  ASSERT_TRUE(this->reads_reach(*router, "standby", errors)) << "reads never reached the standby";

  // Readers run throughout; every read must succeed, wherever it ran.
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<std::string> reader_errors;
  std::atomic<int> reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        const outcome o = router->read(where_sql);
        ++reads;
        if (o.ec || (o.first != "standby" && o.first != "primary")) {
          std::lock_guard lk(mu);
          reader_errors.push_back(o.text);
        }
      }
    });
  }
  // The readers have been served by the standby before it goes.
  ASSERT_TRUE(pgpipe::test::wait_until([&] { return router->stats().replicas[0].reads >= 50; }, 30s));
  const int before_stop = reads.load();
  this->standby_->cluster().stop(pgpipe::devcluster::stop_mode::fast);
  const bool to_primary = this->reads_reach(*router, "primary", errors);
  const auto down = router->stats();
  this->standby_->cluster().start();
  const bool back = this->reads_reach(*router, "standby", errors);
  stop.store(true);
  for (auto& t : readers) t.join();

  ASSERT_TRUE(to_primary) << "reads did not move to the primary";
  ASSERT_TRUE(back) << "reads did not return to the restarted standby";
  EXPECT_FALSE(down.replicas[0].healthy);
  EXPECT_GT(down.reads_to_primary_no_replica, 0u);
  EXPECT_GT(reads.load(), before_stop);
  EXPECT_TRUE(errors.empty()) << errors.size() << " errors, first: " << errors.front();
  EXPECT_TRUE(reader_errors.empty()) << reader_errors.size() << " errors, first: " << reader_errors.front();
  const auto s = router->stats();
  std::printf("[ %s ] %d reads across stop/start: to replica %llu, to primary (no replica) %llu, re-run on primary %llu\n",
              TypeParam::name, reads.load(), static_cast<unsigned long long>(s.reads_to_replica),
              static_cast<unsigned long long>(s.reads_to_primary_no_replica),
              static_cast<unsigned long long>(s.reads_retried_on_primary));
  EXPECT_TRUE(s.replicas[0].healthy);
  // Every read was routed exactly once (a re-run is counted apart, in
  // reads_retried_*), whether it went to the standby or, while the standby
  // was down, to the primary.
  const std::uint64_t routed = s.reads_to_replica + s.reads_to_primary_no_replica + s.reads_to_primary_lag;
  EXPECT_EQ(routed, static_cast<std::uint64_t>(reads.load()) + this->reads_made_);
}

// The read-only marker is a promise wherever the read runs: with the
// standby down, marked reads run on the primary, on read-only sessions, so a
// marked write is refused there (25006) exactly as the standby refuses it,
// and nothing is written; a marked SELECT is served by the primary.
TYPED_TEST(scaleout_routing, with_the_standby_down_a_marked_write_is_refused_on_the_primary_too) {
  auto router = this->make_router();
  std::vector<std::string> errors;
  ASSERT_TRUE(this->reads_reach(*router, "standby", errors)) << "reads never reached the standby";
  this->standby_->cluster().stop(pgpipe::devcluster::stop_mode::fast);
  ASSERT_TRUE(this->reads_reach(*router, "primary", errors)) << "reads did not move to the primary";
  EXPECT_TRUE(errors.empty()) << errors.front();

  const outcome select = router->read(where_sql);
  ASSERT_FALSE(select.ec) << select.text;
  EXPECT_EQ(select.first, "primary");
  const outcome insert = router->read("insert into routed values (7)");
  EXPECT_EQ(insert.ec, pgpipe::make_sqlstate("25006")) << insert.text;
  // nextval() writes too (a sequence), and is refused the same way.
  ASSERT_FALSE(router->write("create sequence routed_seq").ec);
  const outcome seq = router->read("select nextval('routed_seq')");
  EXPECT_EQ(seq.ec, pgpipe::make_sqlstate("25006")) << seq.text;
  // Unmarked, the same statement runs: the primary pool is read-write.
  const outcome count = router->write("select count(*)::text from routed where v = 7");
  ASSERT_FALSE(count.ec) << count.text;
  EXPECT_EQ(count.first, "0") << "a marked INSERT wrote on the primary";
  EXPECT_FALSE(router->write("insert into routed values (8)").ec);

  const auto s = router->stats();
  EXPECT_GT(s.reads_to_primary_no_replica, 0u);
  // The marked reads ran on the router's read-only pool, not the primary's.
  EXPECT_GE(s.primary_read_only.completed, 1u);
  EXPECT_GE(s.primary_read_only.connects, 1u);
  std::printf("[ %s ] standby down: marked INSERT -> %s; primary read-only pool: %llu connects\n", TypeParam::name,
              insert.diag.sqlstate.c_str(), static_cast<unsigned long long>(s.primary_read_only.connects));
}

TYPED_TEST(scaleout_routing, reads_leave_a_standby_lagging_past_the_bound_and_return_when_it_catches_up) {
  auto router = this->make_router(1000ms);
  std::vector<std::string> errors;
  ASSERT_TRUE(this->reads_reach(*router, "standby", errors)) << "reads never reached the standby";
  // Idle primary, standby caught up: lag 0 however old the last commit.
  ASSERT_TRUE(pgpipe::test::wait_until([&] { return router->stats().replicas[0].lag == 0ms; }, 10s))
      << "lag of a caught-up standby is not 0";

  this->standby_->cluster().exec("select pg_wal_replay_pause()");
  ASSERT_FALSE(router->write("insert into routed values (42)").ec);
  ASSERT_TRUE(this->reads_reach(*router, "primary", errors)) << "reads stayed on a standby past the lag bound";
  const auto lagging = router->stats();
  ASSERT_TRUE(lagging.replicas[0].lag);
  EXPECT_GT(*lagging.replicas[0].lag, 1000ms);
  EXPECT_GT(lagging.replicas[0].lag_bytes.value_or(0), 0u);
  EXPECT_TRUE(lagging.replicas[0].healthy);  // kept off for lag, not for health
  EXPECT_GT(lagging.reads_to_primary_lag, 0u);
  EXPECT_GT(lagging.replicas[0].skipped_for_lag, 0u);
  // The read on the primary sees the write the standby has not replayed.
  EXPECT_EQ(router->read("select count(*)::text from routed where v = 42").first, "1");
  const std::string prom = to_prometheus(lagging);
  EXPECT_NE(prom.find("pgpipe_read_routing_total{decision=\"primary_lag\"} "), std::string::npos) << prom;

  this->standby_->cluster().exec("select pg_wal_replay_resume()");
  ASSERT_TRUE(this->reads_reach(*router, "standby", errors)) << "reads did not return after replay resumed";
  EXPECT_EQ(router->read("select count(*)::text from routed where v = 42").first, "1");
  EXPECT_TRUE(errors.empty()) << errors.front();
  std::printf("[ %s ] lag while paused %lld ms (%llu bytes); reads kept off for lag %llu\n", TypeParam::name,
              static_cast<long long>(lagging.replicas[0].lag->count()),
              static_cast<unsigned long long>(lagging.replicas[0].lag_bytes.value_or(0)),
              static_cast<unsigned long long>(lagging.reads_to_primary_lag));
}

}  // namespace

namespace {

// A read re-run on the primary (its replica died under it) stays cancellable
// through the caller's slot: the caller emits while the re-run sleeps on the
// primary and gets errc::cancelled, not the answer 20 s later. The signal is
// emitted, and the handler runs, on one io_context of the test's, as Asio
// requires of a slot.
using namespace std::chrono_literals;

TEST(scaleout_routing_async, a_read_rerun_on_the_primary_is_cancelled_through_the_callers_slot) {
  PGPIPE_SKIP_WITHOUT_STANDBY();
  unsetenv("PGPASSWORD");
  setenv("PGPASSFILE", "/nonexistent/pgpipe-test-pgpass", 1);
  auto primary = pgpipe::test::fresh_cluster();
  pgpipe::test::standby_instance standby(*primary);
  standby.wait_for_streaming();
  auto p = pgpipe::test::fault_params(primary->conninfo(), 2);
  auto r = pgpipe::test::fault_params(standby.conninfo(), 2);
  p.query_timeout = r.query_timeout = 60s;
  r.acquire_timeout = 2s;
  r.connect_timeout = 1s;
  pgpipe::read_routing_params rp;
  rp.probe_interval = 100ms;
  rp.probe_timeout = 1s;
  std::vector<pgpipe::async_client> replicas;
  replicas.emplace_back(r, pgpipe::async_client_options{.loops = 1});
  pgpipe::async_read_router router(pgpipe::async_client(p, {.loops = 1}), std::move(replicas), rp);
  ASSERT_TRUE(pgpipe::test::wait_until([&] { return router.stats().replicas[0].healthy; }, 30s));

  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  std::thread io_thread([&] { io.run(); });
  boost::asio::cancellation_signal signal;
  std::promise<std::pair<std::error_code, std::string>> done;
  pgpipe::query_options o;
  o.read_only = true;
  constexpr const char* sql = "select pg_sleep(20)::text as rerun_to_cancel";
  router.async_query(o, sql,
                     boost::asio::bind_cancellation_slot(
                         signal.slot(), boost::asio::bind_executor(io, [&](std::error_code ec, pgpipe::result res) {
                           done.set_value({ec, ec ? std::string() : std::string(res[0][0].text())});
                         })));
  auto running_on = [&](const pgpipe::devcluster::cluster& c) {
    return c.query("select count(*)::text from pg_stat_activity where query = '" + std::string(sql) + "'")[0][0] ==
           "1";
  };
  // On the standby first; the standby dies under it; it is re-run on the primary.
  const bool on_standby = pgpipe::test::wait_until([&] { return running_on(standby.cluster()); }, 30s);
  if (on_standby) standby.cluster().stop(pgpipe::devcluster::stop_mode::immediate);
  const bool on_primary = on_standby && pgpipe::test::wait_until([&] { return running_on(*primary); }, 30s);
  boost::asio::post(io, [&] { signal.emit(boost::asio::cancellation_type::terminal); });
  auto f = done.get_future();
  const bool completed = f.wait_for(10s) == std::future_status::ready;
  work.reset();
  if (!completed) f.wait();  // the 20 s sleep ends; never leave the handler dangling
  io_thread.join();
  ASSERT_TRUE(on_standby) << "the read never ran on the standby";
  ASSERT_TRUE(on_primary) << "the read was not re-run on the primary";
  ASSERT_TRUE(completed) << "the cancelled re-run did not complete until its statement ended";
  const auto [ec, text] = f.get();
  EXPECT_EQ(ec, make_error_code(pgpipe::errc::cancelled)) << ec.message() << " " << text;
  EXPECT_EQ(router.stats().reads_retried_on_primary, 1u);
}

}  // namespace
