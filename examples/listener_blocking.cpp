// LISTEN/NOTIFY with the blocking driver (pgpipe::blocking_listener), with a
// timeout: receive(timeout) returns std::nullopt when nothing came within it,
// so a loop can do other work (or stop, as here) between notifications.
//
//   example_listener_blocking "host=... user=... password=... dbname=..."
//   PGPIPE_CONNINFO=... example_listener_blocking
#include <pgpipe/pgpipe.hpp>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <optional>
#include <string>

namespace {

constexpr int sent = 3;
constexpr std::chrono::seconds idle_timeout(1);

int run(const pgpipe::pool_params& params) {
  pgpipe::blocking_listener listener(params);  // its own connection and reader thread
  listener.subscribe("orders");                // returns once the server acknowledged

  // Another session notifies.
  pgpipe::blocking_pool pool(params);
  for (int i = 1; i <= sent; ++i) (void)pool.exec("select pg_notify('orders', $1)", "order " + std::to_string(i));

  int received = 0;
  for (;;) {
    const std::optional<pgpipe::notification> n = listener.receive(idle_timeout);
    if (!n) {
      std::cout << "no notification within " << idle_timeout.count() << " s: stopping\n";
      break;
    }
    if (n->gap) {
      // The connection was lost and is back: notifications may be missing,
      // so a real service re-reads the state it follows here.
      std::cout << "gap: resynchronise\n";
      continue;
    }
    ++received;
    std::cout << "notification on " << n->channel << ": " << n->payload << " (from backend " << n->sender_pid
              << ")\n";
  }
  std::cout << "received " << received << " notifications\n";
  return received == sent ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const char* conninfo = argc > 1 ? argv[1] : std::getenv("PGPIPE_CONNINFO");
  if (!conninfo) {
    std::cerr << "usage: " << argv[0] << " CONNINFO (or set PGPIPE_CONNINFO)\n";
    return 2;
  }
  pgpipe::pool_params params;
  params.conninfo = conninfo;
  params.max_size = 1;
  try {
    return run(params);
  } catch (const pgpipe::error& e) {  // every failure of the listener and the pool
    std::cerr << "failed: " << e.code().message() << ": " << e.diag().to_string() << '\n';
  }
  return 1;
}
