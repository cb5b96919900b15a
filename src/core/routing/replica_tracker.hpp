// The sans-IO heart of read routing, shared by both drivers' routers: it
// takes probe results and read failures with a `now`, keeps each replica's
// health and lag, and answers "which replica serves this read?". It never
// touches a connection, a thread or a clock, so tests/unit/replica_tracker_test
// drives it with made-up times and WAL positions.
//
// Lag (why WAL positions and not pg_last_xact_replay_timestamp()): the replay
// timestamp is the commit time of the last transaction replayed, so on an
// idle primary it ages although the replica misses nothing, and after a quiet
// spell the first write makes a replica a few milliseconds behind look
// minutes behind. Instead the tracker keeps a short history of the primary's
// pg_current_wal_lsn() (one sample per probe, stamped with when the probe was
// sent) and asks, for the replica's replayed position, "when was the primary
// there?", interpolating between the two samples around it. A replica that
// has replayed the latest sample's position has lag 0; one whose replay is
// paused while the primary writes sees its lag grow with the clock.
//
// Not thread-safe: a router calls it under its own lock.
#pragma once

#include <pgpipe/detail/read_route.hpp>
#include <pgpipe/read_routing.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace pgpipe::detail {

/// Run on the primary: its current WAL position in bytes.
inline constexpr const char* primary_probe_sql = "select (pg_current_wal_lsn() - '0/0'::pg_lsn)::int8";
/// Run on a replica: in recovery, and the position it has replayed (its
/// current position once promoted).
inline constexpr const char* replica_probe_sql =
    "select pg_is_in_recovery(), (coalesce(case when pg_is_in_recovery() then pg_last_wal_replay_lsn() "
    "else pg_current_wal_lsn() end, '0/0'::pg_lsn) - '0/0'::pg_lsn)::int8";

class replica_tracker {
 public:
  using clock = std::chrono::steady_clock;
  using time_point = clock::time_point;

  /// Samples of the primary's position kept for the lag estimate (an hour at
  /// the default interval); a replica further behind shows at least the age
  /// of the oldest sample.
  static constexpr std::size_t max_history = 3600;

  replica_tracker(std::size_t replicas, read_routing_params params);

  /// Consecutive failed probes after which the primary counts as down (the
  /// lag bound is lifted). More than one: a primary that is only slow for
  /// a moment (a loaded machine, a probe answered just late) is not a dead
  /// one, and lifting the bound sends reads to replicas however far behind.
  static constexpr std::size_t primary_down_after = 2;

  /// The primary was at `wal_lsn` when the probe sent at `sent` ran.
  void primary_probed(time_point sent, std::uint64_t wal_lsn);
  void primary_probe_failed();
  /// Replica i answered the probe sent at `sent`; `now` is when the answer came.
  void replica_probed(std::size_t i, time_point sent, time_point now, bool in_recovery, std::uint64_t replay_lsn);
  void replica_probe_failed(std::size_t i);

  /// A read on replica i failed because its connection was lost or could not
  /// be opened: no reads go there until a probe sent after `now` succeeds.
  void replica_read_failed(std::size_t i, time_point now);

  /// The replica that serves the next read-only request, or std::nullopt for
  /// the primary; counts the decision. Round-robin over the eligible ones:
  /// healthy, in recovery (a promoted replica's sessions are read-write) and
  /// within max_lag, except that while the primary counts as down
  /// (primary_down_after missed probes) the bound is not applied.
  std::optional<std::size_t> route_read(time_point now);

  /// The attempt at `failed` found its server unreachable (server_unreachable):
  /// records that in `f` (and, for a replica, takes it out until a later
  /// probe succeeds), counts the re-run, and answers where the read runs
  /// next: a replica not in `f` that may serve it (as route_read, except that
  /// its latest good probe need not be recent: the alternative is an error),
  /// else the primary if it is not in `f`, else nowhere.
  read_route reroute(const read_route& failed, time_point now, read_failures& f);

  /// Whether replica i may serve reads at `now` (healthy and recent).
  bool healthy(std::size_t i, time_point now) const;

  /// Counters, lag and health; the pools' stats are left for the router.
  read_routing_stats snapshot(time_point now) const;

 private:
  struct sample {
    time_point at;
    std::uint64_t lsn;
  };
  struct replica {
    bool probed_ok = false;         // the latest probe succeeded
    time_point last_ok_sent{};      // when the latest successful probe was sent
    time_point last_ok_at{};        // when its answer came
    std::optional<time_point> read_failed_at;
    bool in_recovery = false;
    std::optional<std::chrono::milliseconds> lag;
    std::optional<std::uint64_t> lag_bytes;
    std::uint64_t reads = 0;
    std::uint64_t skipped_for_lag = 0;
    std::uint64_t probes_ok = 0;
    std::uint64_t probes_failed = 0;
  };

  bool within_lag_bound(const replica& r) const;
  // May take a re-run: its latest probe succeeded (however long ago), no
  // read failed there since, in recovery, within the bound.
  bool may_take_rerun(std::size_t i) const;
  std::chrono::milliseconds lag_at(std::uint64_t replay_lsn, time_point now) const;

  read_routing_params params_;
  std::vector<replica> replicas_;
  std::deque<sample> history_;  // oldest first, lsn non-decreasing
  std::size_t primary_misses_ = 0;  // consecutive failed probes of the primary
  std::size_t next_ = 0;  // round-robin cursor
  read_routing_stats stats_;
};

/// A read that failed with `ec` on a replica says the replica is unreachable
/// (connection lost, no connection could be opened, the server shutting down
/// or starting: 57P01..57P03): run it on the primary. Any other SQLSTATE,
/// class 08 included (08P01: the caller's wrong parameter count), is the
/// server's answer to the caller. One rule for both read routers.
bool server_unreachable(const std::error_code& ec);

/// The name of replica i in stats (params.replica_names or "replica<i>").
std::string replica_name(const read_routing_params& params, std::size_t i);

}  // namespace pgpipe::detail
