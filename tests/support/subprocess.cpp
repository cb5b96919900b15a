#include "support/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

extern char** environ;

namespace pgpipe::test {

subprocess_result run_program(const std::string& program, const std::vector<std::string>& args,
                              const std::optional<std::string>& input, const std::map<std::string, std::string>& env,
                              const std::vector<std::string>& drop_env, int timeout_s) {
  subprocess_result r;
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    r.err = "pipe2 failed";
    return r;
  }
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    bool drop = env.count(key) != 0;
    for (const auto& d : drop_env) drop = drop || key == d;
    if (!drop) envs.push_back(kv);
  }
  for (const auto& [k, v] : env) envs.push_back(k + "=" + v);
  // Built before fork: the child only calls async-signal-safe functions.
  std::vector<char*> argv{const_cast<char*>(program.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (input) {
      dup2(in[0], 0);
    } else {
      const int null = open("/dev/null", O_RDONLY);
      dup2(null, 0);
    }
    dup2(out[1], 1);
    dup2(err[1], 2);
    execve(program.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  // A program that exits without reading its stdin must not kill us.
  signal(SIGPIPE, SIG_IGN);
  if (input && !input->empty()) {
    [[maybe_unused]] const ssize_t n = write(in[1], input->data(), input->size());
  }
  close(in[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool killed = false;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      kill(pid, SIGKILL);
      killed = true;
      break;
    }
    if (poll(fds, 2, static_cast<int>(left)) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<std::size_t>(n));
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = !killed && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (killed) r.err += "\n[killed after " + std::to_string(timeout_s) + " s]";
  return r;
}

}  // namespace pgpipe::test
