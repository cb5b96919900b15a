// Read routing to streaming replicas, shared by both drivers' routers
// (pgpipe::async_read_router over async_client, pgpipe::blocking_read_router over
// blocking_pool): the settings, the statistics snapshot and its Prometheus
// rendering. docs/scaling.md, "Read replicas", says how to run with them.
#pragma once

#include <pgpipe/stats.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pgpipe {

/// The blocking driver's read-only marker (the async driver's is
/// query_options::read_only): blocking_read_router::exec(pgpipe::read_only, sql, ...).
struct read_only_t {
  explicit read_only_t() = default;
};
/// See read_only_t.
inline constexpr read_only_t read_only{};

/// How a router probes its replicas and which it may read from. Every member
/// has a default member initializer (see pool_params).
struct read_routing_params {
  /// Each replica, and the primary, is probed this often: one short query on
  /// each, on a connection of the router's own to that server (one per
  /// server, opened from its pool's conninfo, never shared with callers'
  /// queries), from a thread of the router's own per server. Both drivers.
  std::chrono::milliseconds probe_interval{1000};
  /// A probe that has not answered within this long (connecting included)
  /// counts as failed, and its connection is dropped: the replica is
  /// unhealthy until a later probe succeeds; the primary counts as down
  /// (the lag bound is lifted) after two failed probes in a row. A hung
  /// server costs its probe this long and nothing else; destroying the
  /// router does not wait for it.
  std::chrono::milliseconds probe_timeout{2000};
  /// Reads stay off a replica whose lag (replica_stats::lag) exceeds this, or
  /// whose lag is unknown (the primary has never answered a probe), except
  /// while the primary counts as down (then the primary cannot serve them).
  /// std::nullopt: no bound, any healthy replica serves reads.
  std::optional<std::chrono::milliseconds> max_lag{};
  /// Marked reads the router runs on the primary (no replica eligible, or a
  /// read re-run after its replica failed) go through a second pool of the
  /// router's own on the primary whose sessions are read-only
  /// (pool_params::read_only_sessions), so a marked statement that writes
  /// fails with SQLSTATE 25006 there as it does on a standby: the marker
  /// means the same wherever the read runs. It is built from the primary
  /// pool's params with min_size 0 (opened on the first such read, closed
  /// again by idle_timeout) and this max_size; 0 means the primary pool's
  /// max_size. Its connections count against the primary's max_connections.
  std::size_t primary_read_only_pool_size = 0;
  /// Names for the replicas in stats() and to_prometheus() (label
  /// replica="..."), in the order the replicas were given; missing entries
  /// are "replica<i>" (0-based). Never put a password here.
  std::vector<std::string> replica_names{};
};

/// Throws pgpipe::error(errc::bad_params) naming the first invalid field.
void validate(const read_routing_params& params);

/// One replica, as the router saw it at the snapshot.
struct replica_stats {
  std::string name;  ///< read_routing_params::replica_names[i] or "replica<i>"
  /// The latest probe succeeded and is recent (within 3 probe intervals plus
  /// probe_timeout), and no read has failed on a lost connection since.
  bool healthy = false;
  /// pg_is_in_recovery() at the latest probe: false once it was promoted.
  /// A replica out of recovery serves no marked reads (its sessions are
  /// read-write, so a marked write would commit there) until a probe finds
  /// it in recovery again; healthy still says whether it answers probes.
  bool in_recovery = false;
  /// Estimated age of the replica's data: how long ago the primary was at the
  /// WAL position the replica has replayed, interpolated between the router's
  /// samples of the primary's pg_current_wal_lsn() (one per probe). 0 when
  /// the replica has replayed all the primary had written at its latest
  /// sample, so an idle primary shows 0 however old the last transaction is.
  /// Updated once per probe; std::nullopt when unknown (no probe yet, or the
  /// primary never answered).
  std::optional<std::chrono::milliseconds> lag;
  /// Primary's latest sampled WAL position minus the replica's replayed
  /// position, in bytes (0 when caught up); std::nullopt when unknown.
  std::optional<std::uint64_t> lag_bytes;
  std::uint64_t reads = 0;            ///< read-only requests routed here
  std::uint64_t skipped_for_lag = 0;  ///< reads that passed it over because of max_lag
  std::uint64_t probes_ok = 0;        ///< successful probes
  std::uint64_t probes_failed = 0;    ///< failed or timed-out probes
  pool_stats pool;                    ///< the replica's own pool
};

/// A snapshot of a router (async_read_router::stats(), blocking_read_router::stats()).
struct read_routing_stats {
  /// Read-only requests sent to a replica.
  std::uint64_t reads_to_replica = 0;
  /// Read-only requests sent to the primary because no replica was healthy
  /// (and in recovery).
  std::uint64_t reads_to_primary_no_replica = 0;
  /// Read-only requests sent to the primary because every healthy replica
  /// lagged more than max_lag (or had an unknown lag).
  std::uint64_t reads_to_primary_lag = 0;
  /// Reads that failed on a replica with a lost connection or a connect
  /// error and were run again on the primary (the caller saw no error).
  std::uint64_t reads_retried_on_primary = 0;
  /// Reads that failed on the primary (its read-only pool) or on a replica
  /// because that server was unreachable and were run again on another
  /// replica (the caller saw no error).
  std::uint64_t reads_retried_on_replica = 0;
  std::uint64_t primary_probes_ok = 0;      ///< successful probes of the primary's WAL position
  std::uint64_t primary_probes_failed = 0;  ///< failed or timed-out probes of the primary
  pool_stats primary;  ///< the primary's own pool
  /// The primary's read-only pool (read_routing_params::primary_read_only_pool_size),
  /// which serves the marked reads that run on the primary.
  pool_stats primary_read_only;
  std::vector<replica_stats> replicas;  ///< one per replica, in the order given
};

/// Renders the routing metrics of `s` as Prometheus text:
/// `<prefix>_read_routing_total{decision="replica|primary_no_replica|primary_lag|retried_on_primary|retried_on_replica"}`,
/// `<prefix>_replica_up{replica=...}`, `<prefix>_replica_in_recovery`,
/// `<prefix>_replica_lag_seconds` (NaN when unknown), `<prefix>_replica_lag_bytes`,
/// `<prefix>_replica_reads_total`, `<prefix>_replica_skipped_for_lag_total`,
/// `<prefix>_replica_probes_total{replica=...,result="ok|failed"}`,
/// `<prefix>_primary_probes_total{result=...}`. The pools' own metrics are
/// not included: render s.primary and each replica's pool with
/// to_prometheus(pool_stats, prefix) under prefixes of your choosing.
std::string to_prometheus(const read_routing_stats& s, std::string_view prefix = "pgpipe");

}  // namespace pgpipe
