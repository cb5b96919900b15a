#include "runner.hpp"

#include "child.hpp"
#include "driver_pgbench.hpp"
#include "report.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>

extern char** environ;

namespace pgpipe::bench {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;

extern "C" void on_signal(int) { g_interrupted = 1; }

using steady = std::chrono::steady_clock;

struct line_reader {
  int fd = -1;
  std::string pending;

  bool open() const { return fd >= 0; }
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  // Reads what is available; returns complete lines (and the rest at EOF).
  std::vector<std::string> read_lines() {
    std::vector<std::string> out;
    char buf[65536];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return out;
    if (n <= 0) {
      if (!pending.empty()) out.push_back(std::move(pending));
      pending.clear();
      close();
      return out;
    }
    pending.append(buf, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (std::size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      out.push_back(pending.substr(start, nl - start));
    }
    pending.erase(0, start);
    return out;
  }
};

std::vector<std::string> merged_environment(const std::vector<std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string item = *e;
    const std::string key = item.substr(0, item.find('='));
    const bool replaced = std::any_of(overrides.begin(), overrides.end(),
                                      [&](const std::string& o) { return o.substr(0, o.find('=')) == key; });
    if (!replaced) env.push_back(item);
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

// fork + exec with the given fd layout. `fds` maps child fd -> parent fd.
// The child gets its own process group (Ctrl-C reaches only the bench, which
// then stops the child itself) and dies with the parent (PDEATHSIG).
pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
            const std::vector<std::pair<int, int>>& fds) {
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // Only async-signal-safe calls from here to exec.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGINT, &dfl, nullptr);
    sigaction(SIGTERM, &dfl, nullptr);
    sigaction(SIGPIPE, &dfl, nullptr);
    for (const auto& [child_fd, parent_fd] : fds) {
      if (dup2(parent_fd, child_fd) < 0) _exit(127);
    }
    execve(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
  return pid;
}

double seconds_of(const timeval& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
}

std::int64_t epoch_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

bool interrupted() noexcept { return g_interrupted != 0; }

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: poll() returns EINTR at once
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, nullptr);
}

run_result run_one(run_context& ctx, const std::string& driver, std::size_t pool, std::size_t round,
                   const std::string& label) {
  const options& o = *ctx.opts;
  run_result r;
  r.driver = driver;
  r.pool = pool;
  r.round = round;
  const bool is_pgbench = driver == "pgbench" || driver == "pgbench-pipeline";
  // pgbench-pipeline: each pgbench transaction is a pipeline of this many queries.
  // (tpcb: the pipeline is the one transaction, counted once.)
  const std::size_t pipeline = driver == "pgbench-pipeline" ? pgbench_pipeline_queries : 1;
  const std::size_t per_txn = ctx.work->tpcb ? 1 : pipeline;
  const bool is_peer = is_peer_driver(driver);
  r.concurrency = is_pgbench ? pool : clients_for(o, pool);
  r.duration_s = o.duration_s;

  const bool tty = isatty(STDERR_FILENO) != 0;
  line_reader main_out, err_out;  // self child: main_out = fd 3; pgbench: stdout, stderr
  pid_t pid = -1;
  pgbench_command pgb;
  std::int64_t spawned_us = 0;
  std::string pgbench_stdout, pgbench_stderr;
  try {
    int p1[2], p2[2] = {-1, -1};
    if (pipe2(p1, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    if (is_pgbench) {
      if (pipe2(p2, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
      const std::string tag = "run_" + driver + "_" + std::to_string(pool) + "_" + std::to_string(round);
      pgb = prepare_pgbench(*ctx.pgbench, ctx.work_dir, tag, *ctx.work, ctx.conninfo, pool, o.warmup_s, o.duration_s,
                            o.prepared, pipeline);
      spawned_us = epoch_us();
      pid = spawn(pgb.argv, merged_environment(pgb.env), {{1, p1[1]}, {2, p2[1]}});
      ::close(p2[1]);
      err_out.fd = p2[0];
    } else if (is_peer) {
      // A peer speaks the child's protocol on its stdout ("R key=value ...");
      // its stderr joins ours. The connection goes through its environment.
      std::vector<std::string> argv{ctx.opts->peers_dir + "/" + driver + "/run"};
      for (auto& a : peer_arguments(o, pool)) argv.push_back(std::move(a));
      auto env = libpq_environment(ctx.conninfo);
      env.push_back("PGAPPNAME=pgpipe-bench-" + driver);
      pid = spawn(argv, merged_environment(env), {{1, p1[1]}, {2, STDERR_FILENO}});
    } else {
      std::vector<std::string> argv{ctx.self_exe};
      for (auto& a : child_arguments(o, driver, pool, 3)) argv.push_back(std::move(a));
      // The child's stdout joins stderr: the parent's stdout carries only the report.
      std::vector<std::string> env{std::string(conninfo_env) + "=" + ctx.conninfo};
      if (ctx.postmaster) env.push_back(std::string(postmaster_env) + "=" + std::to_string(*ctx.postmaster));
      pid = spawn(argv, merged_environment(env), {{3, p1[1]}, {1, STDERR_FILENO}});
    }
    ::close(p1[1]);
    main_out.fd = p1[0];
  } catch (const std::exception& e) {
    main_out.close();
    err_out.close();
    r.ok = false;
    r.failure = e.what();
    return r;
  }

  const int conns_before = ctx.sampler->client_connections();
  const double cpu_before = ctx.postmaster ? server_cpu_seconds(*ctx.postmaster) : 0;
  const auto started = steady::now();
  const auto deadline = started + std::chrono::milliseconds(static_cast<long>((o.warmup_s + o.duration_s) * 1000)) +
                        std::chrono::seconds(150);
  auto next_sample = started;
  std::optional<steady::time_point> term_sent, reaped_at, alarm_at, first_tx;
  bool alarm_sent = false;
  bool reaped = false, got_result = false, timed_out = false;
  int status = 0;
  rusage usage{};
  std::size_t threads_max = 0;
  std::size_t threads_last = 0;
  std::uint64_t rss_last_kb = 0, rss_max_kb = 0;
  int conns_max = 0, conns_last = 0;
  long long last_ms = 0;
  unsigned long long last_count = 0;
  run_result reported;

  // phase: 0 connecting, 1 warm-up, 2 measuring.
  auto progress = [&](double elapsed_s, double qps, int phase) {
    static const char* names[] = {" (connecting)", " (warm-up)", ""};
    std::ostringstream line;
    line << label << "  " << static_cast<int>(elapsed_s) << " s" << names[std::clamp(phase, 0, 2)] << "  "
         << with_commas(qps) << " q/s  threads " << threads_max << "  server conns " << conns_last;
    std::cerr << (tty ? "\r\033[K" : "") << line.str() << (tty ? "" : "\n") << std::flush;
  };

  while (true) {
    if (!reaped) {
      const pid_t w = wait4(pid, &status, WNOHANG, &usage);
      if (w == pid) {
        reaped = true;
        reaped_at = steady::now();
      }
    }
    const bool pipes_open = main_out.open() || err_out.open();
    if (reaped && (!pipes_open || steady::now() - *reaped_at > std::chrono::seconds(2))) break;

    const auto now = steady::now();
    if (!reaped && now >= next_sample) {
      if (auto s = read_tree_status(pid)) {
        threads_max = std::max(threads_max, s->threads);
        threads_last = s->threads;
        rss_last_kb = s->rss_kb;
        rss_max_kb = std::max(rss_max_kb, s->rss_kb);
      }
      conns_last = ctx.sampler->client_connections();
      conns_max = std::max(conns_max, conns_last);
      next_sample += std::chrono::milliseconds(100);
      if (next_sample < now) next_sample = now + std::chrono::milliseconds(100);
    }
    if (!reaped && !term_sent && (interrupted() || now > deadline)) {
      timed_out = !interrupted();
      kill(pid, SIGTERM);
      term_sent = now;
    }
    if (!reaped && term_sent && now - *term_sent > std::chrono::seconds(3)) kill(pid, SIGKILL);
    if (!reaped && alarm_at && !alarm_sent && now >= *alarm_at) {
      kill(pid, SIGALRM);  // pgbench's -T timer: it stops cleanly and flushes its logs
      alarm_sent = true;
    }

    pollfd fds[2];
    nfds_t n = 0;
    line_reader* readers[2];
    for (line_reader* lr : {&main_out, &err_out}) {
      if (lr->open()) {
        fds[n] = {lr->fd, POLLIN, 0};
        readers[n++] = lr;
      }
    }
    const auto wait_ms = std::clamp<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(next_sample - steady::now()).count(), 1, 100);
    if (n == 0) {
      // Pipes closed, child not reaped yet: poll() just sleeps (no event to wait on).
      poll(nullptr, 0, static_cast<int>(wait_ms));
      continue;
    }
    if (poll(fds, n, static_cast<int>(wait_ms)) <= 0) continue;
    for (nfds_t i = 0; i < n; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      line_reader& lr = *readers[i];
      const bool is_err = &lr == &err_out;
      for (const auto& line : lr.read_lines()) {
        if (is_pgbench) {
          if (is_err) {
            if (auto tps = parse_pgbench_progress(line)) {
              // pgbench connects every client before its first transaction.
              // The first line with transactions bounds its first completion
              // from above: warm-up and window end before this + both.
              if (*tps > 0 && !first_tx) {
                first_tx = steady::now();
                alarm_at = *first_tx + std::chrono::milliseconds(static_cast<long>((o.warmup_s + o.duration_s) * 1000) + 300);
              }
              const double since = first_tx ? std::chrono::duration<double>(steady::now() - *first_tx).count() : 0;
              progress(std::chrono::duration<double>(steady::now() - started).count(), *tps * static_cast<double>(per_txn),
                       !first_tx ? 0 : since < o.warmup_s ? 1 : 2);
            } else {
              pgbench_stderr += line + "\n";
            }
          } else {
            pgbench_stdout += line + "\n";
          }
        } else if (line.rfind("P ", 0) == 0) {
          long long ms = 0;
          unsigned long long count = 0;
          int phase = 2;
          if (std::sscanf(line.c_str(), "P %lld %llu %d", &ms, &count, &phase) >= 2 && ms > last_ms) {
            progress(static_cast<double>(ms) / 1000.0,
                     static_cast<double>(count - last_count) * 1000.0 / static_cast<double>(ms - last_ms), phase);
            last_ms = ms;
            last_count = count;
          }
        } else if (line.rfind("R ", 0) == 0) {
          reported = decode_result(line.substr(2));
          got_result = true;
        }
      }
    }
  }
  main_out.close();
  err_out.close();
  if (tty) std::cerr << "\r\033[K" << std::flush;

  if (is_pgbench) {
    read_pgbench_logs(pgb, pid, spawned_us, o.warmup_s, o.duration_s, r);
    r.queries *= per_txn;  // latencies stay per pipeline (per pgbench transaction)
    r.qps *= static_cast<double>(per_txn);
    r.rss_end_mb = static_cast<double>(rss_last_kb) / 1024.0;
    r.threads_end = threads_last;
    const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!clean) {
      r.ok = r.queries > 0 && !interrupted();
      std::string tail = pgbench_stderr.size() > 600 ? pgbench_stderr.substr(pgbench_stderr.size() - 600) : pgbench_stderr;
      r.failure = "pgbench exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) +
                  (tail.empty() ? "" : ": " + tail);
    }
  } else if (got_result) {
    const std::size_t rd = r.round;
    r = reported;
    r.round = rd;
  } else {
    r.ok = false;
    r.failure = "the child exited without a result (status " +
                std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) + ")";
  }
  if (timed_out) {
    r.ok = false;
    r.failure = "timed out" + (r.failure.empty() ? "" : ": " + r.failure);
  }
  if (interrupted()) {
    r.ok = false;
    r.failure = "interrupted";
  }
  r.client_cpu_s = seconds_of(usage.ru_utime) + seconds_of(usage.ru_stime);
  // Peak RSS: the child's own VmHWM (reported) or the kernel's ru_maxrss,
  // whichever is larger (for pgbench only the latter exists).
  r.rss_peak_mb = std::max({r.rss_peak_mb, static_cast<double>(usage.ru_maxrss) / 1024.0,
                            static_cast<double>(rss_max_kb) / 1024.0});
  r.threads_max = std::max(r.threads_max, threads_max);
  r.server_connections_max = conns_max;
  if (ctx.postmaster) {
    // The run's backends exit after the client is gone; their CPU counts
    // once they have. Nothing signals that to us: poll, bounded.
    const auto until = steady::now() + std::chrono::seconds(5);
    while (steady::now() < until && ctx.sampler->client_connections() > conns_before) {
      poll(nullptr, 0, 20);
    }
    r.server_cpu_s = server_cpu_seconds(*ctx.postmaster) - cpu_before;
  }
  return r;
}

}  // namespace pgpipe::bench
