// Read routing with the async driver (pgpipe::async_read_router): a query marked
// read-only (query_options::read_only) goes to a healthy streaming replica
// within the lag bound; everything else goes to the primary. A marked
// statement that writes fails with 25006 wherever it runs.
//
//   example_read_routing_async PRIMARY_CONNINFO REPLICA_CONNINFO
//
// The replica is a streaming hot standby of the primary (docs/scaling.md,
// "Read replicas").
#include <pgpipe/pgpipe.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <chrono>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace asio = boost::asio;

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

// pg_is_in_recovery() where the router sends the query: true on a standby.
asio::awaitable<bool> in_recovery(pgpipe::async_read_router& router, pgpipe::query_options opts) {
  auto [ec, r] = co_await router.async_query(opts, "select pg_is_in_recovery()", asio::as_tuple(asio::use_awaitable));
  if (ec) throw pgpipe::error(ec, r.diag());
  co_return r.value<bool>();
}

asio::awaitable<int> run(pgpipe::async_read_router& router) {
  const bool marked_on_standby = co_await in_recovery(router, {.read_only = true});
  const bool unmarked_on_standby = co_await in_recovery(router, {});
  std::cout << "marked read ran on a standby: " << std::boolalpha << marked_on_standby << '\n';
  std::cout << "unmarked query ran on a standby: " << unmarked_on_standby << '\n';

  // The marker promises the statement writes nothing; one that writes is refused.
  auto [ec, r] = co_await router.async_query({.read_only = true}, "create table pgpipe_example_refused(n int)",
                                             asio::as_tuple(asio::use_awaitable));
  std::cout << "marked write: " << (ec ? r.diag().to_string() : std::string("ran")) << '\n';
  const bool refused = pgpipe::sqlstate_of(ec) == "25006";
  co_return marked_on_standby && !unmarked_on_standby && refused ? 0 : 1;
}

// A router sends marked reads to a replica once its probes have found it
// healthy and measured its lag; until then they run on the primary. This
// program wants to show a read on the replica, so it waits for that first
// (bounded, checking the router's stats).
void wait_until_replica_eligible(const pgpipe::async_read_router& router, std::chrono::seconds bound) {
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
    std::vector<pgpipe::async_client> replicas;
    replicas.emplace_back(params_for(argv[2]), pgpipe::async_client_options{.loops = 1});
    pgpipe::read_routing_params routing;
    routing.probe_interval = std::chrono::milliseconds(100);
    routing.max_lag = std::chrono::seconds(5);
    routing.replica_names = {"standby"};
    pgpipe::async_read_router router(pgpipe::async_client(params_for(argv[1]), {.loops = 1}), std::move(replicas), routing);
    wait_until_replica_eligible(router, std::chrono::seconds(30));

    // The queries run in a coroutine on the primary client's loop; main waits for it.
    const int status = asio::co_spawn(router.primary().get_executor(), run(router), asio::use_future).get();
    std::cout << pgpipe::to_prometheus(router.stats());
    return status;
  } catch (const pgpipe::error& e) {
    std::cerr << "failed: " << e.code().message() << ": " << e.diag().to_string() << '\n';
  } catch (const std::exception& e) {
    std::cerr << "failed: " << e.what() << '\n';
  }
  return 1;
}
