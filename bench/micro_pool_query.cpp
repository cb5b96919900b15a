// What one query costs the client through the whole async path: the pool's
// grant (async_client::async_query), the connection's FIFO and libpq's
// pipeline, the completion back to a callback, against a real server (a
// throwaway one, started here). Everything runs on the benchmark's thread:
// the client lives on the caller's io_context, so callgrind's count inside
// the benchmark function is the client's own work:
//
//   valgrind --tool=callgrind --toggle-collect='*measured_batches*' build/bench/pgpipe_micro_pool_query --benchmark_filter=counted
//
// then instructions per query = the count inside measured_batches / 6,400
// (the `counted` run: 100 iterations of 64 queries, after a warm-up batch
// outside the count).
//
// An iteration starts `batch` queries at once on a pool of one connection
// and runs the loop until every callback ran. Items = queries. The
// mallocs_per_query counter is every malloc/calloc/realloc of the process
// (libpq's included) while the iterations ran, divided by the queries: the
// executable's own malloc is what libpq and operator new call.
#include "devcluster/devcluster.hpp"
#include "malloc_count.hpp"

#include <pgpipe/async_client.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>

namespace {

namespace asio = boost::asio;

struct server {
  pgpipe::devcluster::cluster pg;
  asio::io_context io;
  std::unique_ptr<pgpipe::async_client> client;
  server() {
    pg.start();
    pgpipe::pool_params p;
    p.conninfo = pg.conninfo();
    p.max_size = 1;
    p.min_size = 1;
    client = std::make_unique<pgpipe::async_client>(p, io);
  }
};

server& shared_server() {
  static server s;
  return s;
}

// Starts `batch` queries and runs the loop until all of them completed.
void run_batch(server& s, int batch) {
  int done = 0;
  int failed = 0;
  for (int i = 0; i < batch; ++i) {
    s.client->async_query("select $1::int", i, [&done, &failed](std::error_code ec, pgpipe::result) {
      ++done;
      if (ec) ++failed;
    });
  }
  s.io.restart();
  while (done < batch) s.io.run_one();
  if (failed != 0) throw std::runtime_error("a query failed");
}

// Apart, so that callgrind can count it alone (--toggle-collect).
[[gnu::noinline]] void measured_batches(benchmark::State& state, server& s, int batch) {
  for (auto _ : state) run_batch(s, batch);
}

void pool_query(benchmark::State& state) {
  server& s = shared_server();
  const int batch = static_cast<int>(state.range(0));
  run_batch(s, batch);  // connected, the statement prepared, buffers grown
  pgpipe::bench::malloc_count::start();
  measured_batches(state, s, batch);
  const auto allocations = pgpipe::bench::malloc_count::stop();
  const auto queries = static_cast<double>(state.iterations() * batch);
  state.counters["mallocs_per_query"] = static_cast<double>(allocations) / queries;
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(pool_query)->Arg(1)->Arg(64)->MeasureProcessCPUTime()->UseRealTime();
// A fixed count for callgrind.
BENCHMARK(pool_query)->Name("counted")->Arg(64)->Iterations(100)->MeasureProcessCPUTime()->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
