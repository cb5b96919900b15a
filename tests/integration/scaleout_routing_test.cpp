// Read routing through both drivers' routers (read_router, blocking_read_router)
// against a devcluster primary and its streaming standby: marked reads go to
// the standby and unmarked requests to the primary (each query asks
// pg_is_in_recovery() itself); with the standby stopped reads go to the
// primary without caller errors, and come back when it starts again; with
// replay paused past the lag bound reads go to the primary, and come back
// after resume. Routing decisions and lag are checked in stats() and
// to_prometheus().
#include "support/cluster_fixture.hpp"
#include "support/driver_adapter.hpp"
#include "support/kit.hpp"
#include "support/standby.hpp"
#include "support/wait.hpp"

#include <pgpipe/blocking_read_router.hpp>
#include <pgpipe/read_router.hpp>

#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using pgpipe::test::outcome;

// Both routers behind one small interface: read (marked) and write
// (unmarked) run one statement and wait for it.
class async_router {
 public:
  static constexpr const char* name = "async";
  async_router(const pgpipe::pool_params& primary, const pgpipe::pool_params& replica,
               const pgpipe::read_routing_params& rp) {
    std::vector<pgpipe::async_client> replicas;
    replicas.emplace_back(replica, std::size_t{1});
    router_ = std::make_unique<pgpipe::read_router>(pgpipe::async_client(primary, std::size_t{1}),
                                                    std::move(replicas), rp);
  }
  outcome read(std::string_view sql) { return wait(router_->async_query(read_only(), sql, boost::asio::use_future)); }
  outcome write(std::string_view sql) { return wait(router_->async_query(sql, boost::asio::use_future)); }
  // A statement on a lease: leases always come from the primary.
  outcome on_lease(std::string_view sql) {
    auto [ec, l] = router_->async_acquire(boost::asio::use_future).get();
    if (ec) return pgpipe::test::outcome_of(ec, pgpipe::result{});
    return wait(l.async_query(sql, boost::asio::use_future));
  }
  pgpipe::read_routing_stats stats() const { return router_->stats(); }

 private:
  static pgpipe::query_options read_only() {
    pgpipe::query_options o;
    o.read_only = true;
    return o;
  }
  template <class Future>
  static outcome wait(Future f) {
    if (f.wait_for(30s) != std::future_status::ready) {
      outcome o;
      o.ec = make_error_code(std::errc::timed_out);
      o.text = "never completed";
      return o;
    }
    auto [ec, r] = f.get();
    return pgpipe::test::outcome_of(ec, r);
  }
  std::unique_ptr<pgpipe::read_router> router_;
};

class blocking_router {
 public:
  static constexpr const char* name = "blocking";
  blocking_router(const pgpipe::pool_params& primary, const pgpipe::pool_params& replica,
                  const pgpipe::read_routing_params& rp) {
    std::vector<std::unique_ptr<pgpipe::blocking_pool>> replicas;
    replicas.push_back(std::make_unique<pgpipe::blocking_pool>(replica));
    router_ = std::make_unique<pgpipe::blocking_read_router>(std::make_unique<pgpipe::blocking_pool>(primary),
                                                             std::move(replicas), rp);
  }
  outcome read(std::string_view sql) {
    return run([&] { return router_->exec(pgpipe::read_only, sql); });
  }
  outcome write(std::string_view sql) {
    return run([&] { return router_->exec(sql); });
  }
  outcome on_lease(std::string_view sql) {
    return run([&] { return router_->transaction([&](pqxx::work& tx) { return tx.exec(std::string(sql)); }); });
  }
  pgpipe::read_routing_stats stats() const { return router_->stats(); }

 private:
  template <class Fn>
  static outcome run(Fn fn) {
    outcome o;
    try {
      const pqxx::result r = fn();
      if (!r.empty() && r.columns() > 0) o.first = r[0][0].c_str();
    } catch (const pgpipe::error& e) {
      o.ec = e.code();
      o.diag = e.diag();
      o.text = pgpipe::test::describe(o.ec, o.diag, e.what());
    } catch (const std::exception& e) {
      o.ec = std::make_error_code(std::errc::state_not_recoverable);
      o.text = std::string("non-pgpipe exception: ") + e.what();
    }
    return o;
  }
  std::unique_ptr<pgpipe::blocking_read_router> router_;
};

struct router_names {
  template <class T>
  static std::string GetName(int) {
    return T::name;
  }
};
using routers = ::testing::Types<async_router, blocking_router>;

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
          if (o.ec) errors.push_back(o.text);
          return !o.ec && o.first == where;
        },
        30s, 20ms);
  }

  std::unique_ptr<pgpipe::devcluster::cluster> primary_;
  std::unique_ptr<pgpipe::test::standby_instance> standby_;
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
  // The stop was noticed by a failed read (re-run on the primary) or a
  // failed probe, whichever came first: which one is a matter of timing.
  EXPECT_GT(s.reads_retried_on_primary + s.replicas[0].probes_failed, 0u);
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
