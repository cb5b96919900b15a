// Process plumbing shared by devcluster and the test-support partners
// (pgbouncer, standby): run programs as the server account, start a
// long-running server in the background and stop it with a deadline.
//
// PostgreSQL refuses to run as root, so when the test process is root every
// program started here runs as `postgres` (fork, setgroups/setgid/setuid,
// exec). Otherwise programs run as the current user.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace pgpipe::devcluster {

/// The account server programs run as.
struct server_account {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;
  /// True when the current process must switch to this account (it is root).
  bool switch_user = false;
};

/// The account servers run as: `postgres` when geteuid() == 0, else the
/// current user. Throws std::runtime_error when root and `postgres` is missing.
/// Thread-safe (computed once).
const server_account& server_user();

/// Make `path` owned by the server account (no-op when not switching users).
void chown_to_server_user(const std::string& path, bool recursive = false);

/// Where throwaway directories go: $PGPIPE_DEVCLUSTER_TMPDIR if set, else
/// /dev/shm when it is a writable directory with at least 1 GiB free (a
/// memory file system: copying a data directory there takes ~0.05 s instead
/// of ~1 s on a busy disk), else /tmp. Computed once; thread-safe.
const std::string& temp_root();

/// mkdtemp("<temp_root>/<prefix>XXXXXX"), mode 0700, owned by the server
/// account.
std::string make_temp_dir(const std::string& prefix);

/// Remove a directory tree; never throws (clean-up path).
void remove_tree(const std::string& path) noexcept;

/// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0). The
/// caller must still handle losing the race to another process.
int find_free_port();

/// Minimal environment for server programs: PATH, LC_ALL=C, TZ=UTC (initdb
/// does not scan the zoneinfo tree then), HOME=cwd.
std::vector<std::string> server_environment(const std::string& home);

struct command_result {
  int exit_code = -1;   // exit status, or 128+signal
  std::string output;   // stdout and stderr interleaved
};

/// Run argv[0] (an absolute path) as the server account with cwd `cwd`, wait
/// for it (killing it at the deadline) and return its output. Throws
/// std::runtime_error when it cannot be started or times out.
/// `extra_env` adds NAME=value entries (e.g. PGPASSWORD, kept off the
/// command line that other users can read in /proc).
command_result run_as_server_user(const std::vector<std::string>& argv, const std::string& cwd,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(120),
                                  const std::vector<std::string>& extra_env = {});

/// A background process started as the server account, stdin from
/// /dev/null and stdout/stderr appended to a log file. The owner must stop()
/// it; the destructor kills it (SIGKILL) if it is still running, so nothing
/// leaks. Not thread-safe: one owner.
class background_process {
 public:
  background_process() = default;
  background_process(const std::vector<std::string>& argv, const std::string& cwd, const std::string& log_path);
  ~background_process();
  background_process(background_process&& other) noexcept;
  background_process& operator=(background_process&& other) noexcept;
  background_process(const background_process&) = delete;
  background_process& operator=(const background_process&) = delete;

  pid_t pid() const noexcept { return pid_; }
  /// True until its exit has been observed (and the child reaped).
  bool running() noexcept;
  /// Wait for exit up to `timeout`; returns the exit status (waitpid
  /// encoding) or nullopt when it is still running.
  std::optional<int> wait_for_exit(std::chrono::milliseconds timeout);
  /// kill(2) the process (no-op once it exited).
  void signal(int signo) const;
  /// Send `signo`, wait up to `grace`, then SIGKILL it and its direct
  /// children (a postmaster's backends) and wait for it. Never hangs:
  /// stopped (SIGSTOP) children are continued first.
  void stop(int signo, std::chrono::milliseconds grace) noexcept;

 private:
  void reset() noexcept;
  pid_t pid_ = -1;
  pid_t owner_ = -1;  // after fork() only the process that started it may stop it
  int pidfd_ = -1;
  std::optional<int> status_;
};

/// (stale_dirs.cpp) Record in `dir`/owner that the current process owns `dir`, so a later
/// sweep_stale_dirs() can tell a leftover (its owner died, e.g. a test binary
/// killed by a ctest timeout) from a directory in use.
void write_owner_file(const std::string& dir);

/// Remove leftovers of dead test processes: every <temp_root>/<prefix>* directory
/// with an owner file written by a process that no longer exists. A server
/// still running there (pid on the first line of `dir`/`pidfile`, whose
/// working directory or command line mentions `dir`) is stopped first with
/// `signo`, then SIGKILL. Never throws; best effort.
void sweep_stale_dirs(const std::string& prefix, const std::string& pidfile, int signo) noexcept;

/// pidfd_open(2) of `pid` with FD_CLOEXEC (a descriptor that becomes
/// readable when the process exits), or -1 where the kernel has none.
int pidfd_open_checked(pid_t pid) noexcept;

/// Pids whose parent is `parent` (from /proc).
std::vector<pid_t> child_pids(pid_t parent);

/// Tail (last `max_bytes`) of a text file, "" when unreadable.
std::string file_tail(const std::string& path, std::size_t max_bytes = 4000);

/// Write a file as the current process and hand it to the server account.
void write_file_for_server(const std::string& path, const std::string& contents, unsigned mode);

}  // namespace pgpipe::devcluster
