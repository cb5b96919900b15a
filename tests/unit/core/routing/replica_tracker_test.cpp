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

void primary_at(replica_tracker& t, tp when, std::uint64_t lsn) { t.primary_probed(when, lsn); }

void replica_at(replica_tracker& t, std::size_t i, tp when, std::uint64_t lsn, bool in_recovery = true) {
  t.replica_probed(i, when, when, in_recovery, lsn);
}

// The primary missing enough probes in a row to count as down.
void primary_gone(replica_tracker& t) {
  for (std::size_t k = 0; k < replica_tracker::primary_down_after; ++k) t.primary_probe_failed();
}

using pgpipe::detail::read_failures;
using pgpipe::detail::read_route;
using to = read_route::to;

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
  t.replica_probed(0, t0 + 5ms, t0 + 30ms, true, 100);
  EXPECT_FALSE(t.route_read(t0 + 30ms).has_value());
  // ...one sent after it does.
  replica_at(t, 0, t0 + 1s, 100);
  EXPECT_EQ(t.route_read(t0 + 1s), 0u);
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
  primary_gone(t);
  replica_at(t, 0, t0 + 11s, 1000);
  EXPECT_EQ(t.route_read(t0 + 11s), 0u);
  // A primary answering again (here the old one, still far ahead) brings the
  // bound back for a replica in recovery.
  primary_at(t, t0 + 13s, 6000);
  replica_at(t, 0, t0 + 13s, 1000);
  EXPECT_FALSE(t.route_read(t0 + 13s).has_value());
  const auto s = t.snapshot(t0 + 13s);
  EXPECT_EQ(s.reads_to_replica, 1u);
  EXPECT_EQ(s.reads_to_primary_lag, 2u);
  EXPECT_EQ(s.primary_probes_failed, replica_tracker::primary_down_after);
}

// A primary that is only slow (a probe missed behind a long query, a loaded
// machine) is not a dead one: one missed probe keeps the lag bound, so a
// replica minutes behind does not start serving reads.
TEST(replica_tracker, one_missed_primary_probe_keeps_the_lag_bound) {
  ASSERT_GE(replica_tracker::primary_down_after, 2u);
  replica_tracker t(1, params(1000ms));
  primary_at(t, t0, 1000);
  primary_at(t, t0 + 10s, 5000);
  replica_at(t, 0, t0 + 10s, 1000);
  t.primary_probe_failed();
  replica_at(t, 0, t0 + 11s, 1000);
  EXPECT_FALSE(t.route_read(t0 + 11s).has_value()) << "one miss lifted the bound";
  // A success in between starts the count again.
  primary_at(t, t0 + 12s, 5000);
  for (std::size_t k = 1; k < replica_tracker::primary_down_after; ++k) t.primary_probe_failed();
  replica_at(t, 0, t0 + 13s, 1000);
  EXPECT_FALSE(t.route_read(t0 + 13s).has_value());
  // Missed in a row, enough times: down.
  t.primary_probe_failed();
  EXPECT_EQ(t.route_read(t0 + 13s), 0u);
  EXPECT_EQ(t.snapshot(t0 + 13s).reads_to_primary_lag, 2u);
}

// A replica that says it is no longer in recovery was promoted (or was never
// a standby): its sessions are read-write, so a marked statement that writes
// would commit there. It leaves the replica set; marked reads go to the
// primary's read-only pool, where such a statement fails with 25006.
TEST(replica_tracker, a_promoted_replica_leaves_the_replica_set) {
  replica_tracker t(2, params());
  primary_at(t, t0, 1000);
  replica_at(t, 0, t0, 1000);
  replica_at(t, 1, t0, 1000);
  EXPECT_EQ(t.route_read(t0), 0u);
  replica_at(t, 0, t0 + 1s, 1000, /*in_recovery=*/false);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(t.route_read(t0 + 1s), 1u);
  replica_at(t, 1, t0 + 2s, 1000, /*in_recovery=*/false);
  EXPECT_FALSE(t.route_read(t0 + 2s).has_value());
  auto s = t.snapshot(t0 + 2s);
  EXPECT_EQ(s.reads_to_primary_no_replica, 1u) << "no replica is left, whatever their health";
  EXPECT_TRUE(s.replicas[0].healthy) << "it still answers probes";
  EXPECT_FALSE(s.replicas[0].in_recovery);
  // Rebuilt as a standby: back in the set.
  replica_at(t, 0, t0 + 3s, 1000, /*in_recovery=*/true);
  EXPECT_EQ(t.route_read(t0 + 3s), 0u);
  // Never lets the down primary's lifted bound bring a promoted one back.
  primary_gone(t);
  replica_at(t, 0, t0 + 4s, 1000, /*in_recovery=*/false);
  EXPECT_FALSE(t.route_read(t0 + 4s).has_value());
}

// A read whose server turned out unreachable runs again on another server
// that may serve it, each server at most once, replicas first: a read that
// failed on a replica goes to the primary; one that failed on the primary
// (it crashed) goes to a replica, which may serve it as any read
// (in recovery, within the bound unless the primary is down, no failure
// since its latest good probe), even when that probe is not recent: the
// alternative is certain failure.
TEST(replica_tracker, a_read_failing_on_an_unreachable_server_runs_again_elsewhere_once_per_server) {
  replica_tracker t(2, params());
  primary_at(t, t0, 1000);
  replica_at(t, 0, t0, 1000);
  replica_at(t, 1, t0, 1000);
  // Replica 0 fails: replica 1, then the primary, then nowhere.
  read_failures f;
  read_route r = t.reroute({to::replica, 0}, t0, f);
  EXPECT_EQ(r.where, to::replica);
  EXPECT_EQ(r.replica, 1u);
  r = t.reroute(r, t0, f);
  EXPECT_EQ(r.where, to::primary);
  r = t.reroute(r, t0, f);
  EXPECT_EQ(r.where, to::nowhere);
  auto s = t.snapshot(t0);
  EXPECT_EQ(s.reads_retried_on_replica, 1u);
  EXPECT_EQ(s.reads_retried_on_primary, 1u);
  EXPECT_FALSE(s.replicas[0].healthy);
  EXPECT_FALSE(s.replicas[1].healthy);

  // The primary fails a read sent there because no replica was recent
  // enough: a replica whose latest probe succeeded takes the re-run.
  replica_tracker late(1, params());
  primary_at(late, t0, 1000);
  replica_at(late, 0, t0, 1000);
  const tp later = t0 + 10s;  // no probe answer since: not healthy for a first read
  EXPECT_FALSE(late.route_read(later).has_value());
  read_failures g;
  r = late.reroute({to::primary, 0}, later, g);
  EXPECT_EQ(r.where, to::replica);
  EXPECT_EQ(r.replica, 0u);
  EXPECT_EQ(late.reroute(r, later, g).where, to::nowhere);

  // Not to a replica whose latest probe failed, nor a promoted one, nor one
  // past the bound while the primary still counts as up.
  replica_tracker none(3, params(1000ms));
  primary_at(none, t0, 1000);
  primary_at(none, t0 + 10s, 5000);
  none.replica_probe_failed(0);
  replica_at(none, 1, t0 + 10s, 5000, /*in_recovery=*/false);
  replica_at(none, 2, t0 + 10s, 1000);  // 10 s behind
  read_failures h;
  EXPECT_EQ(none.reroute({to::primary, 0}, t0 + 10s, h).where, to::nowhere);
  // Once the primary counts as down, the lagging one may serve it.
  primary_gone(none);
  read_failures k;
  r = none.reroute({to::primary, 0}, t0 + 10s, k);
  EXPECT_EQ(r.where, to::replica);
  EXPECT_EQ(r.replica, 2u);
}

// Seeded random sequences of probes, failures and routing decisions against
// the rules: a read never visits a server twice, never a replica out of
// recovery, and ends (served or nowhere) within replicas + 1 attempts.
TEST(replica_tracker, random_reroutes_visit_each_server_at_most_once) {
  std::uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (int round = 0; round < 2000; ++round) {
    const std::size_t n = 1 + next() % 4;
    replica_tracker t(n, params(next() % 2 ? std::optional<std::chrono::milliseconds>(1000ms) : std::nullopt));
    tp now = t0;
    primary_at(t, now, 1000);
    std::vector<bool> in_recovery(n, true);
    for (int e = 0; e < 12; ++e) {
      now += std::chrono::milliseconds(next() % 3000);
      const std::size_t i = next() % n;
      switch (next() % 5) {
        case 0: t.primary_probed(now, 1000 + next() % 100000); break;
        case 1: t.primary_probe_failed(); break;
        case 2:
          in_recovery[i] = next() % 4 != 0;
          t.replica_probed(i, now, now, in_recovery[i], 1000 + next() % 100000);
          break;
        case 3: t.replica_probe_failed(i); break;
        default: t.replica_read_failed(i, now); break;
      }
    }
    const auto first = t.route_read(now);
    read_route r = first ? read_route{to::replica, *first} : read_route{to::primary, 0};
    read_failures f;
    std::vector<int> visits(n + 1, 0);
    std::size_t attempts = 0;
    while (r.where != to::nowhere) {
      ASSERT_LE(++attempts, n + 1) << "round " << round;
      const std::size_t slot = r.where == to::primary ? n : r.replica;
      ASSERT_EQ(++visits[slot], 1) << "round " << round << ": a server visited twice";
      if (r.where == to::replica) {
        ASSERT_TRUE(in_recovery[r.replica]) << "round " << round;
      }
      r = t.reroute(r, now, f);
    }
    EXPECT_EQ(visits[n], 1) << "round " << round << ": every read may fall back to the primary once";
  }
}

TEST(replica_tracker, which_read_failures_mean_the_server_is_unreachable) {
  using pgpipe::errc;
  using pgpipe::detail::server_unreachable;
  EXPECT_TRUE(server_unreachable(make_error_code(errc::not_sent)));
  EXPECT_TRUE(server_unreachable(make_error_code(errc::connection_lost)));
  EXPECT_TRUE(server_unreachable(make_error_code(errc::server_unreachable)));
  EXPECT_TRUE(server_unreachable(pgpipe::make_sqlstate("57P01")));
  EXPECT_FALSE(server_unreachable({}));
  EXPECT_FALSE(server_unreachable(make_error_code(errc::query_timeout)));
  EXPECT_FALSE(server_unreachable(make_error_code(errc::cancelled)));
  EXPECT_FALSE(server_unreachable(pgpipe::make_sqlstate("25006")));
  EXPECT_FALSE(server_unreachable(pgpipe::make_sqlstate("42P01")));
  // A class-08 SQLSTATE is the server's answer on a live connection: a Bind
  // with the wrong parameter count (08P01) is the caller's mistake. Both
  // drivers report a lost connection as errc::connection_lost.
  EXPECT_FALSE(server_unreachable(pgpipe::make_sqlstate("08P01")));
  EXPECT_FALSE(server_unreachable(pgpipe::make_sqlstate("08006")));
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
  EXPECT_NE(text.find("app_read_routing_total{decision=\"retried_on_replica\"} 0\n"), std::string::npos) << text;
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
