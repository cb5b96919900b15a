// Command-line flags of pgpipe-bench, and the hidden --child mode in which the
// bench re-executes itself to run one driver x pool measurement.
#pragma once

#include <cstddef>
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace pgpipe::bench {

/// bench/peers in the source tree this binary was built from.
std::string default_peers_dir();

/// Drivers in the order they are listed by default.
inline const std::vector<std::string>& default_drivers() {
  static const std::vector<std::string> all{"async", "coroutine", "blocking", "pgbench"};
  return all;
}
/// Every driver --drivers accepts: the defaults and the opt-in ones.
inline const std::vector<std::string>& known_drivers() {
  static const std::vector<std::string> all{"async",           "coroutine",       "blocking",        "pgbench",
                                            "blocking-threads", "async-coalesced", "pgbench-pipeline", "async-pipelined",
                                            "async-pipelined-lease", "tokio-postgres", "jdbc"};
  return all;
}
/// Other clients, run as external programs from --peers DIR (DIR/<name>/run,
/// see bench/peers/README.md): the built-in select only.
inline const std::vector<std::string>& peer_drivers() {
  static const std::vector<std::string> all{"tokio-postgres", "jdbc"};
  return all;
}
inline bool is_peer_driver(const std::string& d) {
  const auto& p = peer_drivers();
  return std::find(p.begin(), p.end(), d) != p.end();
}
/// The drivers of --workload tpcb, in their default order.
inline const std::vector<std::string>& tpcb_drivers() {
  static const std::vector<std::string> all{"async",   "async-pipelined", "coroutine",
                                            "blocking", "pgbench",         "pgbench-pipeline"};
  return all;
}

struct options {
  std::vector<std::string> drivers = default_drivers();
  std::vector<std::size_t> pools{20, 50, 200};
  std::size_t concurrency = 500;
  double duration_s = 10;
  double warmup_s = 2;
  std::size_t repeat = 1;
  std::size_t loops = 0;  ///< async event loops; 0 = hardware concurrency
  /// async driver: the pool starts with this many connections and grows to
  /// the pool size under load (0: every connection opened up front).
  std::size_t grow_from = 0;
  /// async driver: pool_params::growth_connects / growth_interval (ms); unset:
  /// the library's defaults.
  std::optional<std::size_t> growth_connects;
  std::optional<std::size_t> growth_interval_ms;
  std::optional<std::string> conninfo;
  /// --password-file: the server password is read from this file's first
  /// line (read_password_file) and given to libpq as PGPASSWORD, so it is
  /// never on the command line, which any local user can read in /proc.
  std::optional<std::string> password_file;
  /// --no-prepared: unnamed statements in every driver (pool_params::
  /// prepared_statements = false, pgbench -M extended), as PgBouncer in
  /// transaction pool mode needs.
  bool prepared = true;
  /// --observer empty: async drivers run with a query_observer that does
  /// nothing, to measure what installing one costs ("none": no observer).
  bool empty_observer = false;
  std::optional<std::string> sql_file;
  /// --peers: where the peer programs live (DIR/<driver>/run).
  std::string peers_dir = default_peers_dir();
  /// --workload tpcb: pgbench's TPC-B-like transaction on pgbench's tables
  /// at `scale` (tpcb.hpp) instead of one statement.
  bool tpcb = false;
  int scale = 4;
  /// --concurrency was given (tpcb otherwise runs one client per connection).
  bool concurrency_explicit = false;
  bool scale_explicit = false;
  std::optional<std::string> json_file;
  std::optional<std::string> svg_file;
  bool help = false;
  /// Set when the user named --drivers: a driver that cannot run is then an
  /// error instead of being skipped with a note (pgbench not installed).
  bool drivers_explicit = false;

  /// --sweep: find the pool size per driver instead of running --pools
  /// (see sweep.hpp): 1, 2, 4, ... up to sweep_max, until throughput falls.
  bool sweep = false;
  std::size_t sweep_max = 64;
  /// --server-cores: for the rule of thumb (2 x cores) when the server is
  /// not on this machine; 0 = this machine's CPUs when the server is local.
  std::size_t server_cores = 0;
  bool pools_explicit = false;

  // Hidden child mode: run exactly one driver at one pool size and report on
  // result_fd. The conninfo comes from the environment (see child.hpp), never
  // from argv, which any local user can read in /proc.
  bool child = false;
  int result_fd = -1;
};

/// Parses argv. Throws std::invalid_argument with a message naming the flag.
options parse_options(int argc, const char* const* argv);

/// The first line of `path` (without its line end): a password. Throws
/// std::invalid_argument naming the file (never its content) when it cannot
/// be read or the line is empty.
std::string read_password_file(const std::string& path);

/// Whether `conninfo` (key=value or URI) carries a password: pgpipe-bench
/// then warns that a command line is readable by every local user.
bool conninfo_has_password(const std::string& conninfo);

/// The text printed by --help.
std::string help_text();

/// Logical clients of a run at `pool`: --concurrency, except for tpcb
/// without it, which runs one client per connection as pgbench does (a
/// transaction holds its connection: more clients would only queue).
std::size_t clients_for(const options& o, std::size_t pool);

/// argv for a peer run (without argv[0]): pool, concurrency, warm-up,
/// window and the kernel's clock ticks per second, for /proc/self/stat.
std::vector<std::string> peer_arguments(const options& o, std::size_t pool);

/// argv for a child run (without argv[0]).
std::vector<std::string> child_arguments(const options& o, const std::string& driver, std::size_t pool, int result_fd);

}  // namespace pgpipe::bench
