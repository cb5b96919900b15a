// A Patroni cluster on loopback for failover tests: one etcd and three
// PostgreSQL 15 nodes under Patroni (Debian's patroni 3.0, etcd-server 3.4),
// each on free ports, run as the server account.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace pgpipe::test {

/// One member as `patronictl list` sees it.
struct patroni_member {
  std::string name;
  std::string role;   // "Leader", "Replica", "Sync Standby"
  std::string state;  // "running", "streaming", "starting", "stopped"...
  int timeline = 0;
};

/// Starts etcd and three Patroni nodes in synchronous mode (a COMMIT returns
/// once a standby has its WAL; only that standby may be promoted) and waits
/// (90 s at most) for a leader, two running replicas and a synchronous one; throws std::runtime_error with the logs' tails
/// otherwise. The superuser `postgres` has a SCRAM password (password()).
/// The destructor stops everything and removes the directory. Not
/// thread-safe (one owner).
class patroni_cluster {
 public:
  patroni_cluster();
  ~patroni_cluster();
  patroni_cluster(const patroni_cluster&) = delete;
  patroni_cluster& operator=(const patroni_cluster&) = delete;

  /// Multi-host conninfo over the three nodes:
  /// "host=127.0.0.1,127.0.0.1,127.0.0.1 port=a,b,c ... target_session_attrs=<attrs>".
  std::string conninfo(std::string_view target_session_attrs) const;
  /// conninfo of one node.
  std::string node_conninfo(const std::string& name) const;
  const std::string& password() const;
  /// patronictl list; throws when it fails.
  std::vector<patroni_member> members() const;
  /// The leader's name, or "" when there is none.
  std::string leader() const;
  /// Waits until a leader other than `not_this` (any when empty) runs,
  /// every other member runs as a replica and one is its synchronous standby
  /// (the cluster runs Patroni's synchronous_mode), or `timeout` (throws
  /// std::runtime_error with describe()). Returns the leader.
  std::string wait_for_healthy(const std::string& not_this, std::chrono::seconds timeout) const;
  /// patronictl switchover --force to `candidate`; throws on failure.
  void switchover(const std::string& leader, const std::string& candidate) const;
  /// The member's postmaster pid (postmaster.pid), or -1.
  pid_t postmaster_pid(const std::string& name) const;
  /// SIGSTOP (true) or SIGCONT (false) the member's Patroni, its postmaster
  /// and the postmaster's children: the node hangs as behind a dead network.
  void freeze(const std::string& name, bool stop);
  /// Text for failure messages: the members and each log's tail.
  std::string describe() const;

 private:
  struct state;
  std::unique_ptr<state> s_;
};

}  // namespace pgpipe::test
