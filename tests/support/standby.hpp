// A streaming hot standby of a devcluster primary, for tests of multi-host
// connection strings, target_session_attrs and read routing.
#pragma once

#include "devcluster/devcluster.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

/// Skips the calling test, with the reason, when this server cannot have a
/// standby (no pg_basebackup of its major version: the npm server packages
/// ship none). The skip-aware main then exits 77 and ctest shows the binary
/// as skipped, with the reason in its output. Use it first in a test body or
/// SetUp(); GTEST_SKIP only skips when it runs there.
#define PGPIPE_SKIP_WITHOUT_STANDBY()                                                      \
  if (const auto pgpipe_no_standby_ = ::pgpipe::devcluster::cluster::standby_unsupported()) \
  GTEST_SKIP() << *pgpipe_no_standby_

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
