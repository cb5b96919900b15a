#include "devcluster/server_process.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <grp.h>
#include <mutex>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <sstream>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <ctime>
#include <unistd.h>

namespace pgpipe::devcluster {
namespace {

std::string errno_text(const std::string& what, int err) { return what + ": " + std::strerror(err); }

[[noreturn]] void throw_errno(const std::string& what) { throw std::runtime_error(errno_text(what, errno)); }

// Everything the forked child needs, built before fork() because between
// fork() and exec() only async-signal-safe calls are allowed (the parent may
// have other threads holding malloc's lock).
struct exec_plan {
  std::vector<std::string> args;
  std::vector<char*> argv;
  std::vector<std::string> env;
  std::vector<char*> envp;
  std::string cwd;
  std::vector<gid_t> groups;

  exec_plan(const std::vector<std::string>& a, const std::string& dir, const std::vector<std::string>& extra_env = {})
      : args(a), env(server_environment(dir)), cwd(dir) {
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    if (args.empty() || args[0].empty() || args[0][0] != '/') {
      throw std::invalid_argument("devcluster: program path must be absolute");
    }
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    for (auto& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    if (server_user().switch_user) groups = server_groups();
  }

  // The server user's supplementary groups, resolved once (on the first
  // cluster, before any test starts event loops): getgrouplist goes through
  // NSS, whose libnss_systemd opens and closes a socket TSan cannot see being
  // created, so doing it on every restart, while a driver's loops close and
  // reuse socket fd numbers, made TSan report races on the fd numbers.
  static const std::vector<gid_t>& server_groups() {
    static const std::vector<gid_t> cached = [] {
      const auto& acct = server_user();
      std::vector<gid_t> g(32);
      int n = static_cast<int>(g.size());
      if (getgrouplist(acct.name.c_str(), acct.gid, g.data(), &n) < 0) {
        g.resize(static_cast<std::size_t>(n));
        if (getgrouplist(acct.name.c_str(), acct.gid, g.data(), &n) < 0) n = 0;
      }
      g.resize(static_cast<std::size_t>(n));
      if (g.empty()) g.push_back(acct.gid);
      return g;
    }();
    return cached;
  }
};

// Child side of fork(): async-signal-safe calls only. Reports (step, errno)
// through report_fd (close-on-exec, so a successful exec closes it silently).
[[noreturn]] void child_fail(int report_fd, int step) {
  int msg[2] = {step, errno};
  ssize_t ignored = write(report_fd, msg, sizeof msg);
  (void)ignored;
  _exit(127);
}

[[noreturn]] void exec_child(const exec_plan& plan, int in_fd, int out_fd, int report_fd) {
  auto fail = [report_fd](int step) { child_fail(report_fd, step); };
  // The parent may block or ignore signals (test runners, Asio); a server
  // must start with default dispositions and an empty mask.
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    sigaction(sig, &sa, nullptr);
  }
  if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0) fail(1);
  // Do not hand the test's sockets and pipes to a long-lived server.
  if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    for (int fd = 3; fd < 1024; ++fd) {
      if (fd != report_fd) close(fd);
    }
  }
  const auto& acct = server_user();
  if (acct.switch_user) {
    if (setgroups(plan.groups.size(), plan.groups.data()) != 0) fail(2);
    if (setgid(acct.gid) != 0) fail(3);
    if (setuid(acct.uid) != 0) fail(4);
  }
  if (chdir(plan.cwd.c_str()) != 0) fail(5);
  execve(plan.argv[0], plan.argv.data(), plan.envp.data());
  child_fail(report_fd, 6);
}

const char* step_name(int step) {
  switch (step) {
    case 1: return "dup2";
    case 2: return "setgroups";
    case 3: return "setgid";
    case 4: return "setuid";
    case 5: return "chdir";
    default: return "execve";
  }
}

// fork + exec; returns the pid once exec succeeded (or throws).
pid_t spawn(const exec_plan& plan, int in_fd, int out_fd) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) throw_errno("devcluster: pipe2");
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(report[0]);
    close(report[1]);
    throw std::runtime_error(errno_text("devcluster: fork", err));
  }
  if (pid == 0) {
    close(report[0]);
    exec_child(plan, in_fd, out_fd, report[1]);
  }
  close(report[1]);
  int msg[2] = {0, 0};
  ssize_t n;
  do {
    n = read(report[0], msg, sizeof msg);
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n == static_cast<ssize_t>(sizeof msg)) {
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    throw std::runtime_error("devcluster: cannot start " + plan.args[0] + " as " + server_user().name + " (" +
                             step_name(msg[0]) + "): " + std::strerror(msg[1]));
  }
  return pid;
}

int open_dev_null() {
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("devcluster: open /dev/null");
  return fd;
}

int status_to_exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

int pidfd_open_checked(pid_t pid) noexcept {
#ifdef SYS_pidfd_open
  long fd = syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    return static_cast<int>(fd);
  }
#endif
  (void)pid;
  return -1;
}

const server_account& server_user() {
  static const server_account account = [] {
    server_account a;
    if (geteuid() != 0) {
      a.uid = geteuid();
      a.gid = getegid();
      if (const passwd* pw = getpwuid(a.uid)) a.name = pw->pw_name;
      else a.name = std::to_string(a.uid);
      return a;
    }
    passwd pw{};
    passwd* result = nullptr;
    std::vector<char> buf(16384);
    if (getpwnam_r("postgres", &pw, buf.data(), buf.size(), &result) != 0 || result == nullptr) {
      throw std::runtime_error(
          "devcluster: running as root but there is no `postgres` user to run the server as "
          "(install postgresql or create the user)");
    }
    a.uid = pw.pw_uid;
    a.gid = pw.pw_gid;
    a.name = pw.pw_name;
    a.switch_user = true;
    return a;
  }();
  return account;
}

void chown_to_server_user(const std::string& path, bool recursive) {
  const auto& acct = server_user();
  if (!acct.switch_user) return;
  if (lchown(path.c_str(), acct.uid, acct.gid) != 0) throw_errno("devcluster: chown " + path);
  if (!recursive) return;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(path, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (lchown(it->path().c_str(), acct.uid, acct.gid) != 0) throw_errno("devcluster: chown " + it->path().string());
  }
  if (ec) throw std::runtime_error("devcluster: walk " + path + ": " + ec.message());
}

const std::string& temp_root() {
  static const std::string root = [] {
    if (const char* env = std::getenv("PGPIPE_DEVCLUSTER_TMPDIR"); env && *env) return std::string(env);
    struct statvfs vfs {};
    struct stat st {};
    if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK | X_OK) == 0 &&
        statvfs("/dev/shm", &vfs) == 0 &&
        static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize >= (1ULL << 30)) {
      return std::string("/dev/shm");
    }
    return std::string("/tmp");
  }();
  return root;
}

std::string make_temp_dir(const std::string& prefix) {
  std::string templ = temp_root() + "/" + prefix + "XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) throw_errno("devcluster: mkdtemp " + templ);
  try {
    chown_to_server_user(templ);
  } catch (...) {
    remove_tree(templ);
    throw;
  }
  return templ;
}

void remove_tree(const std::string& path) noexcept {
  if (path.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

int find_free_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw_errno("devcluster: socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int err = errno;
    close(fd);
    throw std::runtime_error(errno_text("devcluster: find a free port", err));
  }
  close(fd);
  return ntohs(addr.sin_port);
}

std::vector<std::string> server_environment(const std::string& home) {
  return {"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C", "LANG=C", "TZ=UTC", "HOME=" + home};
}

command_result run_as_server_user(const std::vector<std::string>& argv, const std::string& cwd,
                                  std::chrono::milliseconds timeout, const std::vector<std::string>& extra_env) {
  exec_plan plan(argv, cwd, extra_env);
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) throw_errno("devcluster: pipe2");
  int in_fd = -1;
  pid_t pid = -1;
  try {
    in_fd = open_dev_null();
    pid = spawn(plan, in_fd, out[1]);
  } catch (...) {
    if (in_fd >= 0) close(in_fd);
    close(out[0]);
    close(out[1]);
    throw;
  }
  close(in_fd);
  close(out[1]);

  command_result result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      timed_out = true;
      break;
    }
    ssize_t n = read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the program (and anything it forked) closed the pipe
    result.output.append(buf, static_cast<std::size_t>(n));
  }
  close(out[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    throw std::runtime_error("devcluster: " + argv[0] + " timed out after " + std::to_string(timeout.count()) +
                             " ms; output: " + result.output);
  }
  result.exit_code = status_to_exit_code(status);
  return result;
}

background_process::background_process(const std::vector<std::string>& argv, const std::string& cwd,
                                       const std::string& log_path) {
  exec_plan plan(argv, cwd);
  int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) throw_errno("devcluster: open " + log_path);
  int in_fd = -1;
  try {
    chown_to_server_user(log_path);
    in_fd = open_dev_null();
    pid_ = spawn(plan, in_fd, log_fd);
  } catch (...) {
    if (in_fd >= 0) close(in_fd);
    close(log_fd);
    throw;
  }
  close(in_fd);
  close(log_fd);
  owner_ = getpid();
  pidfd_ = pidfd_open_checked(pid_);
}

background_process::~background_process() { stop(SIGKILL, std::chrono::milliseconds(0)); }

background_process::background_process(background_process&& other) noexcept
    : pid_(other.pid_), owner_(other.owner_), pidfd_(other.pidfd_), status_(other.status_) {
  other.pid_ = -1;
  other.pidfd_ = -1;
  other.status_.reset();
}

background_process& background_process::operator=(background_process&& other) noexcept {
  if (this != &other) {
    stop(SIGKILL, std::chrono::milliseconds(0));
    pid_ = other.pid_;
    owner_ = other.owner_;
    pidfd_ = other.pidfd_;
    status_ = other.status_;
    other.pid_ = -1;
    other.pidfd_ = -1;
    other.status_.reset();
  }
  return *this;
}

void background_process::reset() noexcept {
  if (pidfd_ >= 0) close(pidfd_);
  pidfd_ = -1;
}

bool background_process::running() noexcept {
  if (pid_ < 0 || status_) return false;
  if (owner_ != getpid()) return kill(pid_, 0) == 0;
  return !wait_for_exit(std::chrono::milliseconds(0)).has_value();
}

std::optional<int> background_process::wait_for_exit(std::chrono::milliseconds timeout) {
  if (pid_ < 0) return 0;
  if (status_) return status_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      status_ = status;
      reset();
      return status_;
    }
    if (r < 0 && errno == ECHILD) {
      // Someone else reaped it (a SIGCHLD handler in the test process).
      status_ = 0;
      reset();
      return status_;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    if (pidfd_ >= 0) {
      // The pidfd becomes readable when the process exits: an event, not a poll.
      pollfd p{pidfd_, POLLIN, 0};
      poll(&p, 1, static_cast<int>(left.count()));
    } else {
      // Old kernel without pidfd: short naps until the deadline.
      std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(5)));
    }
  }
}

void background_process::signal(int signo) const {
  if (pid_ < 0 || status_) return;
  if (kill(pid_, signo) != 0 && errno != ESRCH) throw_errno("devcluster: kill");
}

void background_process::stop(int signo, std::chrono::milliseconds grace) noexcept {
  if (pid_ < 0) return;
  // In a fork()ed child (a death test, a test that forks) the server is
  // the parent's: leave it alone.
  if (!status_ && owner_ == getpid()) {
    // A backend a test SIGSTOPped would never act on the shutdown signal.
    for (pid_t child : child_pids(pid_)) kill(child, SIGCONT);
    kill(pid_, SIGCONT);
    kill(pid_, signo);
    if (!wait_for_exit(grace)) {
      for (pid_t child : child_pids(pid_)) kill(child, SIGKILL);
      kill(pid_, SIGKILL);
      wait_for_exit(std::chrono::seconds(30));
    }
  }
  reset();
  pid_ = -1;
}

std::string file_tail(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  auto size = static_cast<std::size_t>(in.tellg());
  std::size_t start = size > max_bytes ? size - max_bytes : 0;
  in.seekg(static_cast<std::streamoff>(start));
  std::string out(size - start, '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  return out;
}

void write_file_for_server(const std::string& path, const std::string& contents, unsigned mode) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw_errno("devcluster: open " + path);
  std::size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      throw std::runtime_error(errno_text("devcluster: write " + path, err));
    }
    done += static_cast<std::size_t>(n);
  }
  if (fchmod(fd, static_cast<mode_t>(mode)) != 0) {
    int err = errno;
    close(fd);
    throw std::runtime_error(errno_text("devcluster: chmod " + path, err));
  }
  close(fd);
  chown_to_server_user(path);
}

}  // namespace pgpipe::devcluster
