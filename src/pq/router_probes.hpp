// router_probes: the health and lag probes of a read router, shared by both
// drivers' routers (async_read_router, blocking_read_router).
//
// One probe_session (a connection of the router's own) and one thread per
// server: the primary's answers feed the tracker's WAL history, each
// replica's its health, recovery state and lag. Why a thread per server: a
// server that hangs costs its own probe thread a probe timeout and nothing
// else, so the other servers are probed on schedule (a hung primary must not
// make every replica look unhealthy). The threads only start probes and take
// the router's lock to record the answer; no event loop, pool or caller
// waits on them.
#pragma once

#include "core/routing/probe_scheduler.hpp"
#include "core/routing/replica_tracker.hpp"
#include "pq/probe_session.hpp"

#include <pgpipe/pool_params.hpp>
#include <pgpipe/read_routing.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace pgpipe::detail {

class router_probes {
 public:
  /// Starts probing at once: the primary as its pool connects (`primary`'s
  /// conninfo and connect hooks), replica i as `replicas[i]`, every
  /// params.probe_interval, each probe bounded by params.probe_timeout
  /// (connecting and before_connect included). Answers are recorded in
  /// `tracker` under `mu`; both must outlive stop().
  router_probes(const pool_params& primary, const std::vector<pool_params>& replicas,
                const read_routing_params& params, std::mutex& mu, replica_tracker& tracker);
  /// stop().
  ~router_probes();
  router_probes(const router_probes&) = delete;
  router_probes& operator=(const router_probes&) = delete;

  /// Ends every wait of a probe in progress at once and joins the threads.
  /// Idempotent.
  void stop();

 private:
  void probe_primary();
  void probe_replica(std::size_t i);

  std::chrono::milliseconds timeout_;
  std::mutex& mu_;
  replica_tracker& tracker_;
  int wake_fd_ = -1;  // an eventfd, written once by stop()
  std::unique_ptr<probe_session> primary_;
  std::vector<std::unique_ptr<probe_session>> replicas_;
  // Last: started once the sessions exist, stopped (joined) first.
  std::vector<std::unique_ptr<probe_scheduler>> threads_;
};

}  // namespace pgpipe::detail
