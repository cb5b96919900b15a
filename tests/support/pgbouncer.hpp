// A PgBouncer process in front of a devcluster, for tests of pooling through
// a bouncer (session and transaction pooling). Debian's 1.18 by default; the
// environment variable PGPIPE_PGBOUNCER_BIN names another build (CI runs the
// same suites against 1.25, built by .ci/pgbouncer-125).
#pragma once

#include "devcluster/devcluster.hpp"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace pgpipe::test {

struct pgbouncer_params {
  /// "session", "transaction" or "statement".
  std::string pool_mode = "session";
  int default_pool_size = 20;
  int max_client_conn = 200;
  /// Extra [pgbouncer] settings, written as `key = value`.
  std::map<std::string, std::string> settings;
  /// More auth_file entries after the superuser's: user name and what
  /// PgBouncer checks the client against (a SCRAM verifier, e.g. one made by
  /// `pgpipe-scram verifier`; the server role must hold the same verifier so
  /// PgBouncer can log in to the server with the client's SCRAM keys).
  std::vector<std::pair<std::string, std::string>> users;
};

/// The version of a PgBouncer binary, from `pgbouncer --version`.
struct pgbouncer_version {
  int major = 0;
  int minor = 0;
  int patch = 0;
  /// 1.21 and later rewrite protocol-level named statements per server
  /// connection when max_prepared_statements > 0.
  bool tracks_prepared_statements() const noexcept { return major > 1 || (major == 1 && minor >= 21); }
  std::string to_string() const;
};

/// Starts binary_path() (as `postgres` when root) on a free port of
/// 127.0.0.1, forwarding every database to `server`. Clients authenticate
/// with scram-sha-256 against an auth_file holding the superuser's SCRAM
/// verifier copied from pg_authid, so the cluster's user and password work
/// unchanged and PgBouncer logs in to the server with the client's SCRAM
/// keys. The superuser is also PgBouncer's admin user (database "pgbouncer").
/// The destructor stops the process and removes its directory. The cluster
/// must outlive it. Not thread-safe (one owner).
class pgbouncer_instance {
 public:
  explicit pgbouncer_instance(const devcluster::cluster& server, pgbouncer_params params = {});
  ~pgbouncer_instance();
  pgbouncer_instance(const pgbouncer_instance&) = delete;
  pgbouncer_instance& operator=(const pgbouncer_instance&) = delete;

  int port() const noexcept;
  pid_t pid() const noexcept;
  /// "host=127.0.0.1 port=<bouncer> user=U password=W dbname=D".
  std::string conninfo(std::string_view dbname = "postgres") const;
  /// Run an admin console command ("SHOW POOLS", "SHOW SERVERS", "RECONNECT")
  /// and return its rows as text. Throws std::runtime_error.
  std::vector<std::vector<std::string>> admin(const std::string& command) const;
  /// Path of PgBouncer's log (its stderr).
  std::string log_path() const;
  /// Stop the process (SIGTERM, SIGKILL after a deadline). Idempotent.
  void stop();

  /// The PgBouncer every instance runs: $PGPIPE_PGBOUNCER_BIN when set
  /// (it must be executable by the user the process runs as), else
  /// Debian's /usr/sbin/pgbouncer.
  static std::string binary_path();
  /// binary_path()'s version, asked once. Throws std::runtime_error when the
  /// binary cannot be run or its answer is not a version.
  static pgbouncer_version version();

 private:
  struct state;
  std::unique_ptr<state> s_;
};

}  // namespace pgpipe::test
