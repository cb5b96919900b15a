// Sweeping what killed test processes left behind: their directories and the
// servers still running in them (write_owner_file, sweep_stale_dirs in
// server_process.hpp), and the /proc walks that needs.
#include "devcluster/server_process.hpp"

#include <cerrno>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <poll.h>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace pgpipe::devcluster {

namespace {

// Field 22 of /proc/<pid>/stat: start time in clock ticks since boot; with
// the pid it names a process even after pid reuse. 0 when unknown.
unsigned long long process_start_time(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return 0;
  auto close_paren = line.rfind(')');
  if (close_paren == std::string::npos) return 0;
  std::istringstream rest(line.substr(close_paren + 1));
  std::string field;
  for (int i = 3; i < 22 && rest >> field;) ++i;
  unsigned long long start = 0;
  rest >> start;
  return start;
}

bool mentions(pid_t pid, const std::string& dir) {
  std::error_code ec;
  auto cwd = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/cwd", ec).string();
  if (!ec && cwd.rfind(dir, 0) == 0) return true;
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return cmdline.find(dir) != std::string::npos;
}

bool any_process_mentions(const std::string& dir) {
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (mentions(static_cast<pid_t>(std::stol(name)), dir)) return true;
  }
  return false;
}

void stop_foreign(pid_t pid, int signo) {
  for (pid_t child : child_pids(pid)) kill(child, SIGCONT);
  int fd = pidfd_open_checked(pid);
  kill(pid, signo);
  if (fd >= 0) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0) {
      for (pid_t child : child_pids(pid)) kill(child, SIGKILL);
      kill(pid, SIGKILL);
      poll(&p, 1, 10000);
    }
    close(fd);
  } else {
    kill(pid, SIGKILL);
  }
}

}  // namespace

void write_owner_file(const std::string& dir) {
  const pid_t self = getpid();
  write_file_for_server(dir + "/owner", std::to_string(self) + " " + std::to_string(process_start_time(self)) + "\n",
                        0644);
}

void sweep_stale_dirs(const std::string& prefix, const std::string& pidfile, int signo) noexcept {
  try {
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator(temp_root(), ec);
         !ec && it != std::filesystem::directory_iterator();
         it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.rfind(prefix, 0) != 0) continue;
      const std::string dir = it->path().string();
      struct stat st {};
      // Only directories made for the same server account.
      if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != server_user().uid) continue;
      const std::string owner_path = dir + "/owner";
      if (lstat(owner_path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
        // No owner file: being created right now, or left by a process
        // killed before it wrote one. Only an old one nobody uses is stale.
        struct stat dst {};
        const bool old = lstat(dir.c_str(), &dst) == 0 && dst.st_mtime + 600 < time(nullptr);
        if (old && !any_process_mentions(dir)) remove_tree(dir);
        continue;
      }
      std::ifstream owner(owner_path);
      long owner_pid = 0;
      unsigned long long owner_start = 0;
      if (!(owner >> owner_pid >> owner_start) || owner_pid <= 0) continue;
      const bool alive = kill(static_cast<pid_t>(owner_pid), 0) == 0 || errno == EPERM;
      if (alive && process_start_time(static_cast<pid_t>(owner_pid)) == owner_start) continue;
      std::ifstream pf(dir + "/" + pidfile);
      long server_pid = 0;
      if (pf >> server_pid && server_pid > 0 && mentions(static_cast<pid_t>(server_pid), dir)) {
        stop_foreign(static_cast<pid_t>(server_pid), signo);
      }
      remove_tree(dir);
    }
  } catch (...) {
    // Best effort: a sweep must never break the test that triggered it.
  }
}

std::vector<pid_t> child_pids(pid_t parent) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(it->path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    auto close_paren = line.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream rest(line.substr(close_paren + 1));
    std::string state;
    long ppid = 0;
    if (rest >> state >> ppid && ppid == parent) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

}  // namespace pgpipe::devcluster
