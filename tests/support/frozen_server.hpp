// A whole PostgreSQL server hung: its postmaster and every process it
// started get SIGSTOP (the kernel still completes TCP handshakes on the
// listen socket, so a client connects and then hears nothing, as with a
// hung machine), and SIGCONT when the guard goes. For tests of what a client
// does when a server stops answering without closing anything.
#pragma once

#include "devcluster/devcluster.hpp"

#include <csignal>
#include <dirent.h>
#include <fstream>
#include <string>
#include <sys/types.h>
#include <vector>

namespace pgpipe::test {

class frozen_server {
 public:
  /// Stops the postmaster first (it forks no new backend meanwhile), then
  /// each of its children.
  explicit frozen_server(const devcluster::cluster& server) {
    const pid_t postmaster = server.postmaster_pid();
    ::kill(postmaster, SIGSTOP);
    pids_.push_back(postmaster);
    for (pid_t child : children_of(postmaster)) {
      ::kill(child, SIGSTOP);
      pids_.push_back(child);
    }
  }
  /// SIGCONT to each, the postmaster last.
  ~frozen_server() { thaw(); }
  frozen_server(const frozen_server&) = delete;
  frozen_server& operator=(const frozen_server&) = delete;

  /// Idempotent.
  void thaw() {
    for (auto it = pids_.rbegin(); it != pids_.rend(); ++it) ::kill(*it, SIGCONT);
    pids_.clear();
  }

 private:
  static std::vector<pid_t> children_of(pid_t parent) {
    std::vector<pid_t> out;
    DIR* d = ::opendir("/proc");
    if (!d) return out;
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream stat("/proc/" + name + "/stat");
      std::string line;
      if (!std::getline(stat, line)) continue;
      // pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
      const auto close = line.rfind(')');
      if (close == std::string::npos) continue;
      char state = 0;
      long ppid = 0;
      if (std::sscanf(line.c_str() + close + 1, " %c %ld", &state, &ppid) == 2 && ppid == parent)
        out.push_back(static_cast<pid_t>(std::stol(name)));
    }
    ::closedir(d);
    return out;
  }
  std::vector<pid_t> pids_;
};

}  // namespace pgpipe::test
