// What a streamed row costs the client, through what users call
// (async_lease::stream, read with async_next) against a real server (a
// throwaway one, started here): 100,000 rows of three columns per
// iteration, with query_options::stream_chunk_rows
//  - 1: single-row mode, one PGresult per row, rows copied into pgpipe's
//    chunks (every libpq; the default);
//  - 64, 256: libpq 17's chunked rows mode, one PGresult per that many rows,
//    handed to the reader as it is.
// Process CPU time (the client's event loop included; the server is another
// process); items = rows. Without libpq 17 at run time the chunked runs are
// skipped, saying why: run with LD_LIBRARY_PATH pointing at a newer libpq.
#include "devcluster/devcluster.hpp"

#include <pgpipe/async_client.hpp>

#include <boost/asio/use_future.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>

namespace {

namespace asio = boost::asio;

constexpr std::int64_t rows_per_stream = 100'000;

struct server {
  pgpipe::devcluster::cluster pg;
  std::unique_ptr<pgpipe::async_client> client;
  server() {
    pg.start();
    pgpipe::pool_params p;
    p.conninfo = pg.conninfo();
    p.max_size = 1;
    client = std::make_unique<pgpipe::async_client>(p, pgpipe::async_client_options{.loops = 1});
  }
};

server& shared_server() {
  static server s;
  return s;
}

void stream_rows(benchmark::State& state) {
  server& s = shared_server();
  pgpipe::query_options opts;
  opts.stream_chunk_rows = static_cast<std::size_t>(state.range(0));
  if (opts.stream_chunk_rows > 1 && !s.client->stats().runtime.fast_paths.chunked_rows) {
    state.SkipWithError("needs libpq 17 or newer at run time (LD_LIBRARY_PATH)");
    return;
  }
  for (auto _ : state) {
    pgpipe::async_lease lease = s.client->async_acquire(asio::use_future).get();
    pgpipe::async_row_stream stream =
        lease.stream(opts, "select g, 'row ' || g, now() from generate_series(1, $1::int) g", rows_per_stream);
    std::int64_t rows = 0;
    for (;;) {
      pgpipe::result chunk = stream.async_next(asio::use_future).get();
      if (chunk.empty()) break;
      rows += static_cast<std::int64_t>(chunk.size());
    }
    if (rows != rows_per_stream) state.SkipWithError("a stream lost rows");
  }
  state.SetItemsProcessed(state.iterations() * rows_per_stream);
}
BENCHMARK(stream_rows)->Arg(1)->Arg(64)->Arg(256)->MeasureProcessCPUTime()->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
