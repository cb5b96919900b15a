// What blocking_pool's hand-out check costs per query:
// the liveness probe of an idle connection (pooled_connection::looks_alive,
// one poll() with a zero timeout on its socket) against the test that lets a
// connection given back moments ago skip it (one steady_clock read and a
// compare). A connected socket pair stands in for the server connection:
// the probe's cost is the system call, not what is at the other end.
// (POLLRDHUP needs _GNU_SOURCE, which g++ defines.)
#include <benchmark/benchmark.h>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

namespace {

struct socket_pair {
  int fd[2] = {-1, -1};
  socket_pair() {
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fd) != 0) throw std::runtime_error("socketpair failed");
  }
  ~socket_pair() {
    ::close(fd[0]);
    ::close(fd[1]);
  }
};

// The probe looks_alive() runs on an idle, healthy connection.
void BM_probe_poll(benchmark::State& state) {
  socket_pair s;
  for (auto _ : state) {
    pollfd p{};
    p.fd = s.fd[0];
    p.events = POLLIN | POLLRDHUP;
    benchmark::DoNotOptimize(::poll(&p, 1, 0));
  }
}
BENCHMARK(BM_probe_poll);

// The bypass: was the connection given back less than 250 us ago?
void BM_probe_bypass(benchmark::State& state) {
  const auto returned_at = std::chrono::steady_clock::now();
  for (auto _ : state) {
    const bool just_returned = std::chrono::steady_clock::now() - returned_at < std::chrono::microseconds{250};
    benchmark::DoNotOptimize(just_returned);
  }
}
BENCHMARK(BM_probe_bypass);

}  // namespace

BENCHMARK_MAIN();
