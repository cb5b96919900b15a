// Read routing with the blocking driver (pgpipe::blocking_read_router): a
// statement marked with pgpipe::read_only runs on a healthy streaming
// replica within the lag bound; everything else runs on the primary. A marked
// statement that writes fails with 25006 wherever it runs.
//
//   example_read_routing_blocking PRIMARY_CONNINFO REPLICA_CONNINFO
//
// The replica is a streaming hot standby of the primary (docs/scaling.md,
// "Read replicas").
#include <pgpipe/pgpipe.hpp>

#include <chrono>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace {

pgpipe::pool_params params_for(const char* conninfo) {
  pgpipe::pool_params p;
  p.conninfo = conninfo;
  p.max_size = 2;
  // A read waiting on a dead replica's pool is re-run on the primary only
  // when that wait fails: keep it short.
  p.acquire_timeout = std::chrono::seconds(2);
  return p;
}

// A router sends marked reads to a replica once its probes have found it
// healthy and measured its lag; until then they run on the primary. This
// program wants to show a read on the replica, so it waits for that first
// (bounded, checking the router's stats).
void wait_until_replica_eligible(const pgpipe::blocking_read_router& router, std::chrono::seconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  for (;;) {
    const pgpipe::read_routing_stats s = router.stats();
    if (s.replicas.at(0).healthy && s.replicas.at(0).lag) return;
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("the replica never became healthy");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " PRIMARY_CONNINFO REPLICA_CONNINFO\n";
    return 2;
  }
  try {
    std::vector<std::unique_ptr<pgpipe::blocking_pool>> replicas;
    replicas.push_back(std::make_unique<pgpipe::blocking_pool>(params_for(argv[2])));
    pgpipe::read_routing_params routing;
    routing.probe_interval = std::chrono::milliseconds(100);
    routing.max_lag = std::chrono::seconds(5);
    routing.replica_names = {"standby"};
    pgpipe::blocking_read_router router(std::make_unique<pgpipe::blocking_pool>(params_for(argv[1])),
                                        std::move(replicas), routing);
    wait_until_replica_eligible(router, std::chrono::seconds(30));

    // Statements throw pgpipe::error with the server's SQLSTATE and diagnostics.
    const pgpipe::result marked = router.exec(pgpipe::read_only, "select pg_is_in_recovery()");
    const pgpipe::result unmarked = router.exec("select pg_is_in_recovery()");
    const bool marked_on_standby = marked.value<bool>();
    const bool unmarked_on_standby = unmarked.value<bool>();
    std::cout << "marked read ran on a standby: " << std::boolalpha << marked_on_standby << '\n';
    std::cout << "unmarked statement ran on a standby: " << unmarked_on_standby << '\n';

    // The marker promises the statement writes nothing; one that writes is refused.
    bool refused = false;
    try {
      (void)router.exec(pgpipe::read_only, "create table pgpipe_example_refused(n int)");
      std::cout << "marked write: ran\n";
    } catch (const pgpipe::error& e) {
      refused = pgpipe::sqlstate_of(e.code()) == "25006";
      std::cout << "marked write: " << e.diag().to_string() << '\n';
    }

    std::cout << pgpipe::to_prometheus(router.stats());
    return marked_on_standby && !unmarked_on_standby && refused ? 0 : 1;
  } catch (const pgpipe::error& e) {
    std::cerr << "failed: " << e.code().message() << ": " << e.diag().to_string() << '\n';
  } catch (const std::exception& e) {
    std::cerr << "failed: " << e.what() << '\n';
  }
  return 1;
}
