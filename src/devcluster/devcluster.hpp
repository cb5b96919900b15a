// devcluster: a throwaway PostgreSQL for tests and pgpipe-bench (Debian's 15
// by default, another through PGPIPE_PG_BINDIR; 13 and newer).
//
// initdb into a fresh temporary directory, scram-sha-256 for host and local
// connections with a generated password, a free TCP port on 127.0.0.1 and a
// private Unix socket directory. When the process runs as root the server runs
// as the unprivileged `postgres` user (PostgreSQL refuses root). The
// destructor stops the server (immediate) and removes the directory, so a
// failing test leaves nothing behind. Internal to the project: not installed.
//
// Speed: the first cluster on a machine runs initdb once into a cached
// template (pgpipe-devcluster-template-*); every cluster copies it and
// swaps in its own password at first start. Directories go to /dev/shm when
// it has room (memory: a copy is ~0.05 s, against ~1 s on a busy disk), else
// /tmp; PGPIPE_DEVCLUSTER_TMPDIR overrides.
// Leftovers of test binaries that were killed (no destructor) are swept by
// the next process that creates a cluster.
//
// Thread-safety: query(), query_value(), exec(), backend_pids(),
// terminate_backend(), connection_count() and the accessors may be called
// from several threads at once (each query uses its own connection).
// start/stop/restart/reload and the file writers must not run concurrently
// with each other or with queries that need the server up.
//
// Environment: PGPIPE_PG_BINDIR overrides the server binaries directory
// (initdb, postgres; pg_basebackup of the same major version for standbys,
// from there or /usr/lib/postgresql/<major>/bin);
// PGPIPE_DEVCLUSTER_NO_TEMPLATE=1 runs initdb for every cluster;
// PGPIPE_DEVCLUSTER_KEEP=1 keeps the directory (server log in
// base_dir()/server.log) for post-mortems.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace pgpipe::devcluster {

class cluster;

struct cluster_params {
  int max_connections = 100;
  std::string shared_buffers = "32MB";
  /// Extra postgresql.conf settings, written as `key = 'value'`.
  std::map<std::string, std::string> settings;
  /// pg_hba.conf lines used instead of the default (scram-sha-256 for local
  /// and host 127.0.0.1/32 and ::1/128, every database and user).
  std::optional<std::string> hba;
  /// Superuser name; its password is generated (random, printable ASCII).
  std::string superuser = "pgpipe";
  /// Start the server in the constructor.
  bool start = true;
  /// When set, the data directory is a pg_basebackup (-X stream, -R) of
  /// this running primary instead of a fresh initdb: the cluster is a
  /// streaming hot standby with the primary's superuser and password (its
  /// own port and socket directory). `superuser` is then ignored. The
  /// primary must outlive the constructor; it needs wal_level >= replica and
  /// a replication hba line (both are the defaults).
  const cluster* standby_of = nullptr;
};

enum class stop_mode { smart, fast, immediate };

class cluster {
 public:
  explicit cluster(cluster_params params = {});
  ~cluster();  // stop(immediate) if running, then remove the directory
  cluster(const cluster&) = delete;
  cluster& operator=(const cluster&) = delete;

  /// "host=127.0.0.1 port=P user=U password=W dbname=D" for the superuser.
  std::string conninfo(std::string_view dbname = "postgres") const;
  /// The same without the password (for tests of password handling).
  std::string conninfo_without_password(std::string_view dbname = "postgres") const;
  /// Unix-socket connection string (host=<socket dir>).
  std::string socket_conninfo(std::string_view dbname = "postgres") const;

  const std::string& user() const noexcept;
  const std::string& password() const noexcept;
  int port() const noexcept;
  const std::string& socket_dir() const noexcept;
  const std::string& data_dir() const noexcept;
  /// A directory the server user can read, for certificates and the like.
  const std::string& base_dir() const noexcept;

  /// Start (waits until it accepts connections), stop, restart (same port).
  /// The first start picks a free port (retrying on another one if the
  /// server loses a bind race); later starts keep it and throw if it is
  /// taken. A failed start throws std::runtime_error with the tail of the
  /// server log. stop(): smart waits for clients to leave, fast disconnects
  /// them, immediate crashes the server (committed rows survive: this is a
  /// postmaster crash, not an OS crash). Backends a test SIGSTOPped are
  /// continued first, and after a deadline (60 s, immediate 10 s) everything
  /// is SIGKILLed, so stop() never hangs. No-op when not running.
  void start();
  void stop(stop_mode mode = stop_mode::fast);
  void restart(stop_mode mode = stop_mode::fast);
  bool running() const noexcept;
  /// Re-read pg_hba.conf and postgresql.conf (pg_ctl reload), waits for it.
  void reload();
  /// Replace pg_hba.conf (call reload() or restart() to apply).
  void write_hba(const std::string& contents);
  /// Append settings to postgresql.conf (call reload()/restart() to apply).
  void append_conf(const std::string& lines);
  /// Write a file inside the data directory owned by the server user, with
  /// the given mode (e.g. server.key needs 0600).
  void write_data_file(const std::string& name, const std::string& contents, unsigned mode = 0600);

  /// Run SQL as the superuser over a fresh connection; returns every row of
  /// the last result, each row's fields as text ("" for NULL). Throws
  /// std::runtime_error with the server's message (never the password).
  std::vector<std::vector<std::string>> query(std::string_view sql, std::string_view dbname = "postgres") const;
  /// First field of the first row, or "" when there is none.
  std::string query_value(std::string_view sql, std::string_view dbname = "postgres") const;
  void exec(std::string_view sql, std::string_view dbname = "postgres") const;

  /// pid of the postmaster, and the backend pids serving client connections.
  pid_t postmaster_pid() const;
  std::vector<pid_t> backend_pids(std::string_view application_name = {}) const;
  /// pg_terminate_backend(pid); true when the server signalled it.
  bool terminate_backend(pid_t pid) const;
  /// Send a signal straight to a backend (SIGKILL, SIGSTOP, SIGCONT...).
  void signal_backend(pid_t pid, int signo) const;
  /// Connections the server counts for `dbname` (pg_stat_activity, client
  /// backends only, excluding the querying connection).
  int connection_count(std::string_view dbname = {}) const;

  /// Directory of the PostgreSQL binaries (initdb, pg_ctl, postgres, pgbench).
  static std::string bindir();
  /// Major version of the server in bindir() (13, 15, 18...), from
  /// `postgres --version`, without starting a server. Cached; thread-safe.
  static int server_major();
  /// Why a standby (standby_of) cannot be made with this server, nullopt
  /// when it can: a standby needs a pg_basebackup of the server's major
  /// version, which not every server package ships.
  static std::optional<std::string> standby_unsupported();

  /// Path of the server log (stderr of the postmaster), kept until the
  /// destructor removes the directory.
  std::string log_path() const;
  /// Promote a standby (pg_promote(wait => true)); it becomes a primary.
  void promote();

 private:
  struct state;
  std::unique_ptr<state> s_;
};

}  // namespace pgpipe::devcluster
