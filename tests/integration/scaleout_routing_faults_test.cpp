// Both drivers' read routers when a server misbehaves without going away
// cleanly (docs/scaling.md, "Health and lag"; docs/reliability.md):
//  - a long query on the primary does not make its probe miss (probes have
//    connections of their own), so max_lag keeps a lagging standby off reads;
//  - a hung primary (every process SIGSTOPped) costs its probes their
//    timeout and nothing else: reads stay on the standby, the router goes
//    away in time;
//  - a read lost with its primary connection runs again on a healthy standby;
//  - a standby promoted while the primary is gone leaves the replica set, so
//    a marked write is refused (25006) instead of committing there.
#include "support/cluster_fixture.hpp"
#include "support/frozen_server.hpp"
#include "support/kit.hpp"
#include "support/router_adapter.hpp"
#include "support/standby.hpp"
#include "support/wait.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using pgpipe::test::outcome;

constexpr const char* where_sql = "select case when pg_is_in_recovery() then 'standby' else 'primary' end";

// The ends the observer saw of statements containing `marker`, in order.
class attempt_recorder final : public pgpipe::query_observer {
 public:
  struct end {
    std::error_code ec;
    std::uint32_t attempt = 0;
    bool rerun = false;
    std::chrono::nanoseconds server{0};
    std::chrono::nanoseconds total{0};
  };
  explicit attempt_recorder(std::string marker) : marker_(std::move(marker)) {}
  void on_end(const pgpipe::query_event& e) override {
    if (e.sql.find(marker_) == std::string_view::npos) return;
    std::lock_guard lk(mu_);
    ends_.push_back({e.ec, e.attempt, e.rerun, e.server, e.total});
  }
  std::vector<end> ends() const {
    std::lock_guard lk(mu_);
    return ends_;
  }

 private:
  std::string marker_;
  mutable std::mutex mu_;
  std::vector<end> ends_;
};

// What every pool behind a router counted: queries timed, connections lost.
struct counted {
  std::uint64_t timed = 0;
  std::uint64_t lost = 0;
};
inline counted counted_by(const pgpipe::read_routing_stats& s) {
  counted c;
  auto add = [&](const pgpipe::pool_stats& p) {
    c.timed += p.query_duration.count;
    c.lost += p.errors.connection_lost;
  };
  add(s.primary);
  add(s.primary_read_only);
  for (const auto& r : s.replicas) add(r.pool);
  return c;
}

template <class Router>
class scaleout_routing_faults : public ::testing::Test {
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
  pgpipe::pool_params replica_params() const {
    auto r = pgpipe::test::fault_params(standby_->conninfo(), 2);
    r.acquire_timeout = 2s;
    r.connect_timeout = 1s;
    r.connect_backoff_max = 100ms;
    return r;
  }
  pgpipe::read_routing_params routing(std::optional<std::chrono::milliseconds> max_lag = std::nullopt) const {
    pgpipe::read_routing_params rp;
    rp.probe_interval = 100ms;
    rp.probe_timeout = 1s;
    rp.max_lag = max_lag;
    rp.replica_names = {"standby"};
    return rp;
  }
  // Reads until one runs where expected; every read on the way must succeed.
  static bool reads_reach(Router& router, const std::string& where, std::vector<std::string>& errors) {
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
TYPED_TEST_SUITE(scaleout_routing_faults, pgpipe::test::routers, pgpipe::test::router_names);

// A report query holding the primary's only connection for seconds: the
// probe does not wait behind it (it has a connection of its own), the
// primary never counts as down, and reads stay off the lagging standby.
TYPED_TEST(scaleout_routing_faults, a_long_query_on_the_primary_does_not_lift_the_lag_bound) {
  auto p = pgpipe::test::fault_params(this->primary_->conninfo(), 1);
  TypeParam router(p, this->replica_params(), this->routing(1000ms));
  std::vector<std::string> errors;
  ASSERT_TRUE(this->reads_reach(router, "standby", errors)) << "reads never reached the standby";
  this->standby_->cluster().exec("select pg_wal_replay_pause()");
  ASSERT_FALSE(router.write("insert into routed values (1)").ec);
  ASSERT_TRUE(this->reads_reach(router, "primary", errors)) << "reads stayed on a standby past the lag bound";

  // 4 s on the primary's one connection, several probe timeouts long.
  auto report = std::async(std::launch::async, [&] { return router.write("select pg_sleep(4)::text"); });
  ASSERT_TRUE(pgpipe::test::wait_until(
      [&] {
        return this->primary_->query_value(
                   "select count(*) from pg_stat_activity where query = 'select pg_sleep(4)::text'") == "1";
      },
      10s));
  const auto failed_before = router.stats().primary_probes_failed;
  int on_standby = 0, reads = 0;
  while (report.wait_for(0s) != std::future_status::ready) {
    const outcome o = router.read(where_sql);
    ++reads;
    if (o.ec) errors.push_back(o.text);
    on_standby += o.first == "standby";
  }
  const outcome r = report.get();
  EXPECT_FALSE(r.ec) << r.text;
  const auto s = router.stats();
  this->standby_->cluster().exec("select pg_wal_replay_resume()");
  EXPECT_GT(reads, 0);
  EXPECT_EQ(on_standby, 0) << "reads went to a standby past the lag bound while the primary was only busy";
  EXPECT_EQ(s.primary_probes_failed, failed_before) << "a probe waited behind the report query";
  EXPECT_TRUE(errors.empty()) << errors.front();
}

// Every process of the primary stopped: a probe there gets no answer and
// times out; the standby's probes go on, so reads stay there, and the
// router's destructor returns within about a probe timeout.
TYPED_TEST(scaleout_routing_faults, a_hung_primary_keeps_reads_on_the_standby_and_the_router_goes_away_in_time) {
  auto p = pgpipe::test::fault_params(this->primary_->conninfo(), 2);
  auto router = std::make_unique<TypeParam>(p, this->replica_params(), this->routing());
  std::vector<std::string> errors;
  ASSERT_TRUE(this->reads_reach(*router, "standby", errors)) << "reads never reached the standby";

  pgpipe::test::frozen_server hung(*this->primary_);
  const auto frozen_at = std::chrono::steady_clock::now();
  // Reads for 3 s (3 probe timeouts, many probe intervals): each must be
  // answered by the standby, in time.
  std::vector<std::future<outcome>> late;  // reads that did not answer in time, kept until the thaw
  int reads = 0;
  while (std::chrono::steady_clock::now() - frozen_at < 3s && late.empty()) {
    auto f = std::async(std::launch::async, [&] { return router->read(where_sql); });
    if (f.wait_for(5s) != std::future_status::ready) {
      late.push_back(std::move(f));
      break;
    }
    const outcome o = f.get();
    ++reads;
    if (o.ec || o.first != "standby") errors.push_back(o.ec ? o.text : "answered by " + o.first);
  }
  const auto s = router->stats();
  auto gone = std::async(std::launch::async, [&] { router->reset(); });
  const bool gone_in_time = gone.wait_for(3s) == std::future_status::ready;
  hung.thaw();  // whatever hangs on the primary now ends
  gone.get();
  for (auto& f : late) f.get();

  EXPECT_TRUE(late.empty()) << "a marked read hung on the stopped primary";
  EXPECT_GT(reads, 0);
  EXPECT_TRUE(errors.empty()) << errors.size() << " bad reads, first: " << errors.front();
  EXPECT_TRUE(s.replicas[0].healthy) << "the standby's probes stopped with the primary's";
  EXPECT_GT(s.primary_probes_failed, 0u) << "the hung primary's probes never timed out";
  EXPECT_TRUE(gone_in_time) << "the router's destructor waited on the hung primary";
}

// A marked read running on the primary (the standby was down when it
// started) whose connection is lost: the standby is back and healthy, so the
// read runs again there and the caller gets its answer.
// The observer (one shared by every pool, as a service installs it) sees two
// attempts of one query: the lost one marked as re-run, then the answer, and
// the pools count and time the caller's query once.
TYPED_TEST(scaleout_routing_faults, a_read_lost_with_its_primary_connection_runs_again_on_a_healthy_standby) {
  auto observer = std::make_shared<attempt_recorder>("pg_sleep(case when");
  auto p = pgpipe::test::fault_params(this->primary_->conninfo(), 2);
  p.observer = observer;
  auto r = this->replica_params();
  r.observer = observer;
  TypeParam router(p, r, this->routing());
  std::vector<std::string> errors;
  ASSERT_TRUE(this->reads_reach(router, "standby", errors)) << "reads never reached the standby";
  this->standby_->cluster().stop(pgpipe::devcluster::stop_mode::fast);
  ASSERT_TRUE(this->reads_reach(router, "primary", errors)) << "reads did not move to the primary";

  // Sleeps on the primary only: the re-run on the standby answers at once.
  constexpr const char* sql =
      "select case when pg_is_in_recovery() then 'standby' else 'primary' end from "
      "pg_sleep(case when pg_is_in_recovery() then 0 else 60 end)";
  const counted before = counted_by(router.stats());
  auto read = std::async(std::launch::async, [&] { return router.read(sql); });
  std::string pid;
  ASSERT_TRUE(pgpipe::test::wait_until(
      [&] {
        const auto rows = this->primary_->query(
            "select pid::text from pg_stat_activity where query like '%pg_sleep(case when pg_is_in_recovery()%' "
            "and pid <> pg_backend_pid()");
        if (rows.size() == 1) pid = rows[0][0];
        return rows.size() == 1;
      },
      10s))
      << "the read is not running on the primary";
  this->standby_->cluster().start();
  ASSERT_TRUE(pgpipe::test::wait_until([&] { return router.stats().replicas[0].healthy; }, 30s));
  this->primary_->exec("select pg_terminate_backend(" + pid + ")");
  ASSERT_EQ(read.wait_for(30s), std::future_status::ready) << "the read never completed";
  const outcome o = read.get();
  EXPECT_FALSE(o.ec) << o.text;
  EXPECT_EQ(o.first, "standby");
  EXPECT_EQ(router.stats().reads_retried_on_replica, 1u);
  EXPECT_TRUE(errors.empty()) << errors.front();

  const std::vector<attempt_recorder::end> ends = observer->ends();
  ASSERT_EQ(ends.size(), 2u) << "one end per attempt";
  EXPECT_TRUE(ends[0].ec) << "the first attempt lost its connection";
  EXPECT_EQ(ends[0].attempt, 1u);
  EXPECT_TRUE(ends[0].rerun) << "the lost attempt is not marked as run again";
  EXPECT_FALSE(ends[1].ec) << ends[1].ec.message();
  EXPECT_EQ(ends[1].attempt, 2u);
  EXPECT_FALSE(ends[1].rerun);
  // The answer's total is what the caller waited: both attempts.
  EXPECT_GE(ends[1].total, ends[0].server + ends[1].server);
  const counted after = counted_by(router.stats());
  EXPECT_EQ(after.timed - before.timed, 1u) << "the pools timed the caller's one query more than once";
  EXPECT_EQ(after.lost - before.lost, 0u) << "an error the caller never saw was counted";
}

// A caller's own class-08 error (08P01: a Bind with the wrong parameter
// count) is an answer from a server that is reachable: the read runs once,
// where it was routed, and the standby stays in the replica set.
TYPED_TEST(scaleout_routing_faults, a_callers_protocol_error_runs_once_and_keeps_the_standby_healthy) {
  TypeParam router(pgpipe::test::fault_params(this->primary_->conninfo(), 2), this->replica_params(), this->routing());
  std::vector<std::string> errors;
  ASSERT_TRUE(this->reads_reach(router, "standby", errors)) << "reads never reached the standby";
  const pgpipe::read_routing_stats before = router.stats();
  const outcome o = router.read("select $1::int");
  EXPECT_EQ(pgpipe::sqlstate_of(o.ec), "08P01") << o.text;
  const pgpipe::read_routing_stats after = router.stats();
  EXPECT_EQ(after.reads_retried_on_primary, before.reads_retried_on_primary) << "the read ran again on the primary";
  EXPECT_EQ(after.reads_retried_on_replica, before.reads_retried_on_replica);
  EXPECT_EQ(after.replicas[0].reads, before.replicas[0].reads + 1);
  EXPECT_TRUE(after.replicas[0].healthy) << "a caller's error marked the standby unhealthy";
  EXPECT_TRUE(errors.empty()) << errors.front();
}

// The primary dies and the standby is promoted. The router's probe sees its
// replica out of recovery: it leaves the replica set, and marked reads go to
// the primary's read-only pool, which finds the promoted server through the
// primary's host list. A marked write is refused (25006) and writes nothing,
// where on the promoted replica's own (read-write) sessions it would commit.
TYPED_TEST(scaleout_routing_faults, a_promoted_standby_leaves_the_replica_set_and_a_marked_write_is_refused) {
  const std::string conninfo = "host=127.0.0.1,127.0.0.1 port=" + std::to_string(this->primary_->port()) + "," +
                               std::to_string(this->standby_->port()) +
                               " target_session_attrs=read-write user=" + this->primary_->user() +
                               " password=" + this->primary_->password() + " dbname=postgres";
  auto p = pgpipe::test::fault_params(conninfo, 2);
  p.acquire_timeout = 5s;
  p.connect_backoff_max = 200ms;
  TypeParam router(p, this->replica_params(), this->routing());
  std::vector<std::string> errors;
  ASSERT_TRUE(this->reads_reach(router, "standby", errors)) << "reads never reached the standby";
  this->primary_->stop(pgpipe::devcluster::stop_mode::immediate);
  this->standby_->cluster().promote();
  ASSERT_TRUE(pgpipe::test::wait_until([&] { return !router.stats().replicas[0].in_recovery; }, 30s))
      << "the router never saw its replica promoted";

  const outcome insert = router.read("insert into routed values (7)");
  EXPECT_EQ(insert.ec, pgpipe::make_sqlstate("25006")) << insert.text;
  EXPECT_EQ(this->standby_->cluster().query_value("select count(*) from routed where v = 7"), "0")
      << "a marked INSERT committed on the promoted replica";
  // Reads are still served, by the promoted server through the read-only pool.
  const outcome read = router.read(where_sql);
  EXPECT_FALSE(read.ec) << read.text;
  EXPECT_EQ(read.first, "primary");
  const auto s = router.stats();
  EXPECT_GT(s.primary_read_only.completed, 0u);
}

}  // namespace
