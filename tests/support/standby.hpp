// A streaming hot standby of a devcluster primary, for tests of multi-host
// connection strings, target_session_attrs and read routing.
#pragma once

#include "devcluster/devcluster.hpp"

#include <chrono>
#include <memory>
#include <string>

namespace pgpipe::test {

/// pg_basebackup -R of `primary` into a new temporary directory, started as
/// a hot standby on its own free port. Same superuser and password as the
/// primary. Stopped (immediate) and removed by the destructor. The primary
/// must outlive the standby. Not thread-safe (one owner); the cluster
/// accessor's query functions are safe from several threads.
class standby_instance {
 public:
  explicit standby_instance(devcluster::cluster& primary, devcluster::cluster_params params = {});
  ~standby_instance();
  standby_instance(const standby_instance&) = delete;
  standby_instance& operator=(const standby_instance&) = delete;

  /// The standby as a devcluster (conninfo, query, stop, restart, promote...).
  devcluster::cluster& cluster() noexcept { return *standby_; }
  int port() const noexcept { return standby_->port(); }
  std::string conninfo(std::string_view dbname = "postgres") const { return standby_->conninfo(dbname); }

  /// Blocks until the standby has replayed everything the primary had
  /// written when the call started (pg_current_wal_lsn), polling with a
  /// deadline. Throws std::runtime_error on timeout.
  void wait_for_replay(std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
  /// Blocks until the standby's WAL receiver reports that it is streaming.
  void wait_for_streaming(std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;

 private:
  devcluster::cluster& primary_;
  std::unique_ptr<devcluster::cluster> standby_;
};

}  // namespace pgpipe::test
