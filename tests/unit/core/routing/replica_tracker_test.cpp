// replica_tracker: health, lag and routing decisions with made-up times and
// WAL positions, no server (src/core/replica_tracker.hpp).
#include "core/routing/read_only_fallback.hpp"
#include "core/routing/replica_tracker.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

#include <chrono>

namespace {

using namespace std::chrono_literals;
using pgpipe::detail::replica_tracker;
using tp = replica_tracker::time_point;

const tp t0 = tp{} + 1000s;

pgpipe::read_routing_params params(std::optional<std::chrono::milliseconds> max_lag = std::nullopt) {
  pgpipe::read_routing_params p;
  p.probe_interval = 1000ms;
  p.probe_timeout = 2000ms;
  p.max_lag = max_lag;
  return p;
}

void primary_at(replica_tracker& t, tp when, std::uint64_t lsn) {
  ASSERT_TRUE(t.begin_primary_probe());
  t.primary_probed(when, lsn);
}

void replica_at(replica_tracker& t, std::size_t i, tp when, std::uint64_t lsn, bool in_recovery = true) {
  ASSERT_TRUE(t.begin_replica_probe(i));
  t.replica_probed(i, when, when, in_recovery, lsn);
}

TEST(replica_tracker, no_probe_yet_means_reads_go_to_the_primary) {
  replica_tracker t(2, params());
  EXPECT_FALSE(t.route_read(t0).has_value());
  const auto s = t.snapshot(t0);
  EXPECT_EQ(s.reads_to_primary_no_replica, 1u);
  EXPECT_EQ(s.reads_to_replica, 0u);
  EXPECT_FALSE(s.replicas[0].healthy);
  EXPECT_EQ(s.replicas[1].name, "replica1");
}

TEST(replica_tracker, healthy_replicas_share_reads_round_robin) {
  replica_tracker t(2, params());
  primary_at(t, t0, 100);
  replica_at(t, 0, t0, 100);
  replica_at(t, 1, t0, 100);
  EXPECT_EQ(t.route_read(t0), 0u);
  EXPECT_EQ(t.route_read(t0), 1u);
  EXPECT_EQ(t.route_read(t0), 0u);
  const auto s = t.snapshot(t0);
  EXPECT_EQ(s.reads_to_replica, 3u);
  EXPECT_EQ(s.replicas[0].reads, 2u);
  EXPECT_EQ(s.replicas[1].reads, 1u);
}

TEST(replica_tracker, a_failed_probe_or_read_takes_the_replica_out_until_a_later_probe_succeeds) {
  replica_tracker t(1, params());
  primary_at(t, t0, 100);
  replica_at(t, 0, t0, 100);
  EXPECT_EQ(t.route_read(t0), 0u);
  t.replica_read_failed(0, t0 + 10ms);
  EXPECT_FALSE(t.route_read(t0 + 20ms).has_value());
  // A probe sent before the failure does not bring it back...
  ASSERT_TRUE(t.begin_replica_probe(0));
  t.replica_probed(0, t0 + 5ms, t0 + 30ms, true, 100);
  EXPECT_FALSE(t.route_read(t0 + 30ms).has_value());
  // ...one sent after it does.
  replica_at(t, 0, t0 + 1s, 100);
  EXPECT_EQ(t.route_read(t0 + 1s), 0u);
  ASSERT_TRUE(t.begin_replica_probe(0));
  t.replica_probe_failed(0);
  EXPECT_FALSE(t.route_read(t0 + 2s).has_value());
  const auto s = t.snapshot(t0 + 2s);
  EXPECT_EQ(s.reads_to_primary_no_replica, 3u);
  EXPECT_EQ(s.replicas[0].probes_failed, 1u);
}

TEST(replica_tracker, a_replica_not_probed_recently_is_unhealthy) {
  replica_tracker t(1, params());
  replica_at(t, 0, t0, 100);
  EXPECT_TRUE(t.healthy(0, t0 + 5s));  // 3 intervals + timeout
  EXPECT_FALSE(t.healthy(0, t0 + 5s + 1ms));
}

TEST(replica_tracker, one_probe_at_a_time_per_server) {
  replica_tracker t(1, params());
  EXPECT_TRUE(t.begin_replica_probe(0));
  EXPECT_FALSE(t.begin_replica_probe(0));
  t.replica_probe_failed(0);
  EXPECT_TRUE(t.begin_replica_probe(0));
  EXPECT_TRUE(t.begin_primary_probe());
  EXPECT_FALSE(t.begin_primary_probe());
}

TEST(replica_tracker, an_idle_primary_gives_lag_zero_however_old_the_last_write) {
  replica_tracker t(1, params());
  primary_at(t, t0, 500);
  replica_at(t, 0, t0, 500);
  // An hour of silence: the primary stays at 500, the replica has it all.
  for (int s = 1; s <= 3600; s += 600) {
    primary_at(t, t0 + std::chrono::seconds(s), 500);
    replica_at(t, 0, t0 + std::chrono::seconds(s), 500);
  }
  const auto s = t.snapshot(t0 + 3600s);
  EXPECT_EQ(s.replicas[0].lag, 0ms);
  EXPECT_EQ(s.replicas[0].lag_bytes, 0u);
}

TEST(replica_tracker, lag_after_a_quiet_spell_counts_from_the_write_not_the_last_commit) {
  replica_tracker t(1, params());
  primary_at(t, t0, 500);
  primary_at(t, t0 + 600s, 500);  // idle for ten minutes
  primary_at(t, t0 + 601s, 900);  // a write between 600 s and 601 s
  replica_at(t, 0, t0 + 601s, 500);
  const auto s = t.snapshot(t0 + 601s);
  // The replica misses only what was written after 600 s: at most a second,
  // not the ten minutes since its last replayed commit.
  ASSERT_TRUE(s.replicas[0].lag);
  EXPECT_LE(*s.replicas[0].lag, 1000ms);
  EXPECT_EQ(s.replicas[0].lag_bytes, 400u);
}

TEST(replica_tracker, lag_interpolates_between_samples_and_grows_while_replay_is_paused) {
  replica_tracker t(1, params());
  primary_at(t, t0, 1000);
  primary_at(t, t0 + 1s, 2000);
  replica_at(t, 0, t0 + 1s, 1500);  // the primary was there at t0 + 500 ms
  EXPECT_EQ(t.snapshot(t0 + 1s).replicas[0].lag, 500ms);
  // Replay paused at 1500 while the primary keeps going.
  primary_at(t, t0 + 2s, 3000);
  primary_at(t, t0 + 10s, 4000);
  replica_at(t, 0, t0 + 10s, 1500);
  EXPECT_EQ(t.snapshot(t0 + 10s).replicas[0].lag, 9500ms);
  EXPECT_EQ(t.snapshot(t0 + 10s).replicas[0].lag_bytes, 2500u);
}

TEST(replica_tracker, the_lag_bound_sends_reads_to_the_primary_and_counts_why) {
  replica_tracker t(2, params(2000ms));
  primary_at(t, t0, 1000);
  primary_at(t, t0 + 10s, 2000);
  replica_at(t, 0, t0 + 10s, 1000);  // ~10 s behind
  replica_at(t, 1, t0 + 10s, 2000);  // caught up
  EXPECT_EQ(t.route_read(t0 + 10s), 1u);
  EXPECT_EQ(t.route_read(t0 + 10s), 1u);
  replica_at(t, 1, t0 + 11s, 1000);  // now behind too
  EXPECT_FALSE(t.route_read(t0 + 11s).has_value());
  auto s = t.snapshot(t0 + 11s);
  EXPECT_EQ(s.reads_to_replica, 2u);
  EXPECT_EQ(s.reads_to_primary_lag, 1u);
  EXPECT_EQ(s.reads_to_primary_no_replica, 0u);
  EXPECT_GE(s.replicas[0].skipped_for_lag, 2u);
  EXPECT_EQ(s.replicas[1].skipped_for_lag, 1u);
  // Caught up again: back to the replica.
  replica_at(t, 0, t0 + 12s, 2000);
  EXPECT_EQ(t.route_read(t0 + 12s), 0u);
}

TEST(replica_tracker, unknown_lag_is_kept_off_reads_only_when_a_bound_is_set) {
  replica_tracker bounded(1, params(1000ms));
  replica_at(bounded, 0, t0, 100);  // the primary never answered
  EXPECT_FALSE(bounded.snapshot(t0).replicas[0].lag);
  EXPECT_FALSE(bounded.route_read(t0).has_value());
  EXPECT_EQ(bounded.snapshot(t0).reads_to_primary_lag, 1u);
  replica_tracker unbounded(1, params());
  replica_at(unbounded, 0, t0, 100);
  EXPECT_EQ(unbounded.route_read(t0), 0u);
}

TEST(replica_tracker, a_promoted_replica_has_no_lag) {
  replica_tracker t(1, params(1000ms));
  primary_at(t, t0, 1000);
  primary_at(t, t0 + 10s, 5000);
  replica_at(t, 0, t0 + 10s, 1000, /*in_recovery=*/false);
  const auto s = t.snapshot(t0 + 10s);
  EXPECT_EQ(s.replicas[0].lag, 0ms);
  EXPECT_FALSE(s.replicas[0].in_recovery);
}

TEST(replica_tracker, while_the_primary_is_down_a_lagging_replica_still_serves_reads) {
  replica_tracker t(1, params(1000ms));
  primary_at(t, t0, 1000);
  primary_at(t, t0 + 10s, 5000);
  replica_at(t, 0, t0 + 10s, 1000);  // ~10 s behind: kept off while the primary answers
  EXPECT_FALSE(t.route_read(t0 + 10s).has_value());
  // The primary stops answering (a failover): the primary cannot serve the
  // read, the replica can, stale or not.
  ASSERT_TRUE(t.begin_primary_probe());
  t.primary_probe_failed();
  replica_at(t, 0, t0 + 11s, 1000);
  EXPECT_EQ(t.route_read(t0 + 11s), 0u);
  // Promoted: no longer in recovery, lag 0, reads stay there.
  replica_at(t, 0, t0 + 12s, 1000, /*in_recovery=*/false);
  EXPECT_EQ(t.route_read(t0 + 12s), 0u);
  // A primary answering again (here the old one, still far ahead) brings the
  // bound back for a replica in recovery.
  primary_at(t, t0 + 13s, 6000);
  replica_at(t, 0, t0 + 13s, 1000);
  EXPECT_FALSE(t.route_read(t0 + 13s).has_value());
  const auto s = t.snapshot(t0 + 13s);
  EXPECT_EQ(s.reads_to_replica, 2u);
  EXPECT_EQ(s.reads_to_primary_lag, 2u);
  EXPECT_EQ(s.primary_probes_failed, 1u);
}

TEST(replica_tracker, a_down_primary_does_not_make_an_unhealthy_replica_eligible) {
  replica_tracker t(1, params(1000ms));
  primary_at(t, t0, 1000);
  replica_at(t, 0, t0, 1000);
  ASSERT_TRUE(t.begin_primary_probe());
  t.primary_probe_failed();
  ASSERT_TRUE(t.begin_replica_probe(0));
  t.replica_probe_failed(0);
  EXPECT_FALSE(t.route_read(t0 + 1s).has_value());
  EXPECT_EQ(t.snapshot(t0 + 1s).reads_to_primary_no_replica, 1u);
}

TEST(replica_tracker, which_read_failures_mean_the_replica_is_unreachable) {
  using pgpipe::errc;
  using pgpipe::detail::replica_unreachable;
  EXPECT_TRUE(replica_unreachable(make_error_code(errc::not_sent)));
  EXPECT_TRUE(replica_unreachable(make_error_code(errc::connection_lost)));
  EXPECT_TRUE(replica_unreachable(make_error_code(errc::server_unreachable)));
  EXPECT_TRUE(replica_unreachable(pgpipe::make_sqlstate("57P01")));
  EXPECT_TRUE(replica_unreachable(pgpipe::make_sqlstate("08006")));
  EXPECT_FALSE(replica_unreachable({}));
  EXPECT_FALSE(replica_unreachable(make_error_code(errc::query_timeout)));
  EXPECT_FALSE(replica_unreachable(make_error_code(errc::cancelled)));
  EXPECT_FALSE(replica_unreachable(pgpipe::make_sqlstate("25006")));
  EXPECT_FALSE(replica_unreachable(pgpipe::make_sqlstate("42P01")));
}

TEST(primary_read_only_params, read_only_sessions_opened_lazily_sized_by_the_routing_params) {
  pgpipe::pool_params primary;
  primary.conninfo = "host=127.0.0.1,127.0.0.2 target_session_attrs=read-write";
  primary.max_size = 12;
  primary.min_size = 4;
  primary.on_connect = {"set timezone = 'UTC'"};
  pgpipe::read_routing_params routing;
  auto p = pgpipe::detail::primary_read_only_params(primary, routing);
  EXPECT_TRUE(p.read_only_sessions);
  EXPECT_EQ(p.min_size, 0u);
  EXPECT_EQ(p.max_size, 12u);  // 0: the primary's
  EXPECT_EQ(p.conninfo, primary.conninfo);
  // The statements each new session runs end with the read-only setting,
  // after the user's own.
  const auto stmts = pgpipe::session_statements(p);
  ASSERT_EQ(stmts.size(), 2u);
  EXPECT_EQ(stmts[0], "set timezone = 'UTC'");
  EXPECT_NE(stmts[1].find("default_transaction_read_only"), std::string::npos);
  routing.primary_read_only_pool_size = 3;
  EXPECT_EQ(pgpipe::detail::primary_read_only_params(primary, routing).max_size, 3u);
  EXPECT_NO_THROW(pgpipe::validate(pgpipe::detail::primary_read_only_params(primary, routing)));
}

TEST(read_routing_stats, prometheus_names_every_decision_and_replica) {
  pgpipe::read_routing_stats s;
  s.reads_to_replica = 7;
  s.reads_to_primary_lag = 2;
  pgpipe::replica_stats r;
  r.name = "east \"1\"";
  r.healthy = true;
  r.lag = 1500ms;
  r.lag_bytes = 4096;
  s.replicas.push_back(r);
  pgpipe::replica_stats unknown;
  unknown.name = "west";
  s.replicas.push_back(unknown);
  const std::string text = to_prometheus(s, "app");
  EXPECT_NE(text.find("app_read_routing_total{decision=\"replica\"} 7\n"), std::string::npos) << text;
  EXPECT_NE(text.find("app_read_routing_total{decision=\"primary_lag\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("app_replica_lag_seconds{replica=\"east \\\"1\\\"\"} 1.500\n"), std::string::npos) << text;
  EXPECT_NE(text.find("app_replica_lag_seconds{replica=\"west\"} NaN\n"), std::string::npos) << text;
  EXPECT_NE(text.find("app_replica_lag_bytes{replica=\"east \\\"1\\\"\"} 4096\n"), std::string::npos) << text;
  EXPECT_NE(text.find("app_replica_up{replica=\"east \\\"1\\\"\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE app_replica_probes_total counter\n"), std::string::npos) << text;
}

TEST(read_routing_params, invalid_values_are_refused_by_name) {
  pgpipe::read_routing_params p;
  p.probe_interval = 0ms;
  try {
    pgpipe::validate(p);
    FAIL() << "accepted a zero probe_interval";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::errc::bad_params);
    EXPECT_NE(std::string(e.what()).find("probe_interval"), std::string::npos);
  }
  p = {};
  p.max_lag = -1ms;
  EXPECT_THROW(pgpipe::validate(p), pgpipe::error);
}

}  // namespace
