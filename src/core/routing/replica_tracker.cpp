// Replica health, lag and the routing decision (see replica_tracker.hpp).
//
// Policy choices:
// - Healthy means: the latest probe succeeded, it is recent (3 intervals plus
//   the probe timeout: a probe that is late because the machine is loaded
//   does not flap the replica), and no read has failed on a lost connection
//   since that probe was sent. The read failure is the faster signal: a
//   stopped standby is noticed by the first read that hits it, not a probe
//   interval later.
// - A replica with an unknown lag is kept off reads only when a bound is
//   set: without one nobody asked for freshness.
// - A promoted replica (no longer in recovery) has lag 0 and leaves the
//   replica set: its sessions are read-write, so a marked statement that
//   writes would commit there (and, were its connection lost then, the
//   re-run would be refused 25006 on the primary's read-only pool: the caller
//   told "refused" for a write that committed). Marked reads go to the
//   primary's read-only pool, which after a failover finds the promoted
//   server by walking the primary's host list. A replica that never was in
//   recovery (a primary listed as a replica) is treated alike.
// - While the primary counts as down (primary_down_after probes missed in a
//   row: a failover is under way) the lag bound is not applied: the primary
//   cannot serve the read, so sending it there trades a stale answer for an
//   error. And the estimate itself grows with the clock from the last sample
//   the dead primary gave, although nothing is being written that the
//   replica could miss. One missed probe is not enough: a primary slow for a
//   moment would lift the bound for replicas minutes behind.
// - A read whose server is unreachable runs again elsewhere, each server at
//   most once, replicas before the primary: a marked request only reads, so
//   nothing ran (a standby refuses writes, the read-only pool too). For a
//   re-run a replica's latest good probe need not be recent (a loaded
//   machine delays probes): the read has just failed on the only other
//   candidate, and a replica really gone fails the re-run, which then ends.
// - Round-robin over eligible replicas: the replicas' pools balance within
//   themselves; across servers an even share is the simple, predictable rule.
#include "core/routing/replica_tracker.hpp"

#include <pgpipe/error.hpp>

#include <algorithm>
#include <string>

namespace pgpipe {

void validate(const read_routing_params& p) {
  auto reject = [](const std::string& m) {
    throw error(make_error_code(errc::bad_params), "read_routing_params." + m);
  };
  if (p.probe_interval.count() <= 0)
    reject("probe_interval (" + std::to_string(p.probe_interval.count()) + "ms) must be positive");
  if (p.probe_timeout.count() <= 0)
    reject("probe_timeout (" + std::to_string(p.probe_timeout.count()) + "ms) must be positive");
  if (p.max_lag && p.max_lag->count() < 0)
    reject("max_lag (" + std::to_string(p.max_lag->count()) + "ms) must not be negative");
}

namespace detail {

std::string replica_name(const read_routing_params& params, std::size_t i) {
  if (i < params.replica_names.size() && !params.replica_names[i].empty()) return params.replica_names[i];
  return "replica" + std::to_string(i);
}

bool server_unreachable(const std::error_code& ec) {
  if (!ec) return false;
  if (ec == errc_condition::connection_lost || ec == errc_condition::connect_error) return true;
  // A SQLSTATE is the server's answer: only those saying it is going away
  // or not up yet count. A class-08 code comes over a live connection (08P01:
  // a Bind with the wrong parameter count is the caller's mistake); both
  // drivers report a connection that is gone as errc::connection_lost.
  const std::string state = sqlstate_of(ec);
  return state == "57P01" || state == "57P02" || state == "57P03";
}

replica_tracker::replica_tracker(std::size_t replicas, read_routing_params params)
    : params_(std::move(params)), replicas_(replicas) {}

void replica_tracker::primary_probed(time_point sent, std::uint64_t wal_lsn) {
  primary_misses_ = 0;
  ++stats_.primary_probes_ok;
  // A position going backwards is another server (a failover to a standby
  // that had not received everything): the old history means nothing there.
  if (!history_.empty() && wal_lsn < history_.back().lsn) history_.clear();
  // An idle primary answers the same position every time: keep the latest
  // time it was seen there, since a replica at that position has everything
  // the primary had until then.
  if (!history_.empty() && history_.back().lsn == wal_lsn) {
    history_.back().at = sent;
    return;
  }
  history_.push_back({sent, wal_lsn});
  if (history_.size() > max_history) history_.pop_front();
}

void replica_tracker::primary_probe_failed() {
  ++primary_misses_;
  ++stats_.primary_probes_failed;
}

std::chrono::milliseconds replica_tracker::lag_at(std::uint64_t replay_lsn, time_point now) const {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  if (replay_lsn >= history_.back().lsn) return milliseconds{0};
  // The first sample the replica has not reached; the primary got past the
  // replica's position between the sample before it and this one.
  auto after = std::upper_bound(history_.begin(), history_.end(), replay_lsn,
                                [](std::uint64_t lsn, const sample& s) { return lsn < s.lsn; });
  if (after == history_.begin()) return std::max(milliseconds{0}, duration_cast<milliseconds>(now - after->at));
  const sample& before = *(after - 1);
  // Linear in WAL bytes between the two samples: exact for a steady write
  // rate, and always between the two samples' ages.
  const double fraction =
      static_cast<double>(replay_lsn - before.lsn) / static_cast<double>(after->lsn - before.lsn);
  const auto span = after->at - before.at;
  const auto reached = before.at + duration_cast<clock::duration>(span * fraction);
  return std::max(milliseconds{0}, duration_cast<milliseconds>(now - reached));
}

void replica_tracker::replica_probed(std::size_t i, time_point sent, time_point now, bool in_recovery,
                                     std::uint64_t replay_lsn) {
  auto& r = replicas_.at(i);
  ++r.probes_ok;
  r.probed_ok = true;
  r.last_ok_sent = sent;
  r.last_ok_at = now;
  r.in_recovery = in_recovery;
  if (!in_recovery) {
    r.lag = std::chrono::milliseconds{0};
    r.lag_bytes = 0;
  } else if (history_.empty()) {
    r.lag.reset();
    r.lag_bytes.reset();
  } else {
    r.lag = lag_at(replay_lsn, now);
    r.lag_bytes = replay_lsn >= history_.back().lsn ? 0 : history_.back().lsn - replay_lsn;
  }
}

void replica_tracker::replica_probe_failed(std::size_t i) {
  auto& r = replicas_.at(i);
  r.probed_ok = false;
  ++r.probes_failed;
}

void replica_tracker::replica_read_failed(std::size_t i, time_point now) {
  auto& r = replicas_.at(i);
  if (!r.read_failed_at || *r.read_failed_at < now) r.read_failed_at = now;
}

bool replica_tracker::healthy(std::size_t i, time_point now) const {
  const auto& r = replicas_.at(i);
  if (!r.probed_ok) return false;
  if (r.read_failed_at && r.last_ok_sent <= *r.read_failed_at) return false;
  return now - r.last_ok_at <= 3 * params_.probe_interval + params_.probe_timeout;
}

bool replica_tracker::within_lag_bound(const replica& r) const {
  if (!params_.max_lag || primary_misses_ >= primary_down_after) return true;
  return r.lag && *r.lag <= *params_.max_lag;
}

bool replica_tracker::may_take_rerun(std::size_t i) const {
  const auto& r = replicas_[i];
  if (!r.probed_ok || !r.in_recovery) return false;
  if (r.read_failed_at && r.last_ok_sent <= *r.read_failed_at) return false;
  return within_lag_bound(r);
}

std::optional<std::size_t> replica_tracker::route_read(time_point now) {
  const std::size_t n = replicas_.size();
  bool any_healthy = false;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = (next_ + k) % n;
    auto& r = replicas_[i];
    if (!r.in_recovery || !healthy(i, now)) continue;
    any_healthy = true;
    if (!within_lag_bound(r)) {
      ++r.skipped_for_lag;
      continue;
    }
    next_ = (i + 1) % n;
    ++r.reads;
    ++stats_.reads_to_replica;
    return i;
  }
  ++(any_healthy ? stats_.reads_to_primary_lag : stats_.reads_to_primary_no_replica);
  return std::nullopt;
}

read_route replica_tracker::reroute(const read_route& failed, time_point now, read_failures& f) {
  if (failed.where == read_route::to::replica) {
    replica_read_failed(failed.replica, now);
    f.replicas.push_back(failed.replica);
  } else if (failed.where == read_route::to::primary) {
    f.primary = true;
  }
  const std::size_t n = replicas_.size();
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = (next_ + k) % n;
    if (std::find(f.replicas.begin(), f.replicas.end(), i) != f.replicas.end()) continue;
    if (!may_take_rerun(i)) continue;
    next_ = (i + 1) % n;
    ++replicas_[i].reads;
    ++stats_.reads_retried_on_replica;
    return {read_route::to::replica, i};
  }
  if (!f.primary) {
    ++stats_.reads_retried_on_primary;
    return {read_route::to::primary, 0};
  }
  return {read_route::to::nowhere, 0};
}

read_routing_stats replica_tracker::snapshot(time_point now) const {
  read_routing_stats s = stats_;
  s.replicas.clear();
  for (std::size_t i = 0; i < replicas_.size(); ++i) {
    const auto& r = replicas_[i];
    replica_stats out;
    out.name = replica_name(params_, i);
    out.healthy = healthy(i, now);
    out.in_recovery = r.in_recovery;
    out.lag = r.lag;
    out.lag_bytes = r.lag_bytes;
    out.reads = r.reads;
    out.skipped_for_lag = r.skipped_for_lag;
    out.probes_ok = r.probes_ok;
    out.probes_failed = r.probes_failed;
    s.replicas.push_back(std::move(out));
  }
  return s;
}

}  // namespace detail
}  // namespace pgpipe
