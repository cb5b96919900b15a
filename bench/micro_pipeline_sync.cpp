// What a request's Sync costs the client in libpq pipeline mode, against a
// real server (a throwaway one, started here): the async connection writes
// a loop turn's requests one after the other, each with its own Sync, then
// flushes once.
//  - flush_per_sync: PQpipelineSync, which flushes itself: one send() per
//    request (libpq 14-16; what the connection does without libpq 17);
//  - sync_then_one_flush: PQsendPipelineSync (libpq 17+, found at run time),
//    queueing the Sync: one send() per batch.
// An iteration writes `batch` prepared lookups (the shape of pgpipe-bench's
// query) and reads all their results, so both include the server round trip;
// CPU time (thread, user + system) is what the client spends. Items =
// queries. Without libpq 17 at run time the second benchmark is skipped,
// saying why; run with LD_LIBRARY_PATH pointing at a newer libpq.
#include "devcluster/devcluster.hpp"
#include "pq/libpq_features.hpp"

#include <benchmark/benchmark.h>
#include <libpq-fe.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace {

using pgpipe::detail::loaded_libpq_features;

struct server {
  pgpipe::devcluster::cluster pg;
  PGconn* conn = nullptr;
  server() {
    pg.start();
    conn = PQconnectdb(pg.conninfo().c_str());
    if (PQstatus(conn) != CONNECTION_OK) throw std::runtime_error("cannot connect to the throwaway server");
    PGresult* r = PQprepare(conn, "q", "select $1::text", 1, nullptr);
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok || PQenterPipelineMode(conn) != 1) throw std::runtime_error("cannot prepare or enter pipeline mode");
  }
  ~server() { PQfinish(conn); }
};

server& shared_server() {
  static server s;
  return s;
}

// Reads one request's results: its rows, the command's end, the Sync.
void read_one(PGconn* c) {
  for (int i = 0; i < 3; ++i) {
    PGresult* r = PQgetResult(c);
    if (i == 1 ? r != nullptr : r == nullptr) throw std::runtime_error("unexpected result sequence");
    PQclear(r);
  }
}

template <class Sync>
void run(benchmark::State& state, Sync sync) {
  PGconn* c = shared_server().conn;
  const int batch = static_cast<int>(state.range(0));
  const char* values[1] = {"k42"};
  for (auto _ : state) {
    for (int i = 0; i < batch; ++i) {
      if (PQsendQueryPrepared(c, "q", 1, values, nullptr, nullptr, 0) != 1 || sync(c) != 1)
        throw std::runtime_error("send failed");
    }
    if (PQflush(c) != 0) throw std::runtime_error("flush failed");
    for (int i = 0; i < batch; ++i) read_one(c);
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

void BM_flush_per_sync(benchmark::State& state) { run(state, [](PGconn* c) { return PQpipelineSync(c); }); }
BENCHMARK(BM_flush_per_sync)->Arg(1)->Arg(16)->Arg(64);

void BM_sync_then_one_flush(benchmark::State& state) {
  const auto send_sync = loaded_libpq_features().send_pipeline_sync;
  if (!send_sync) {
    state.SkipWithError("the loaded libpq has no PQsendPipelineSync (libpq 17+; set LD_LIBRARY_PATH)");
    return;
  }
  run(state, send_sync);
}
BENCHMARK(BM_sync_then_one_flush)->Arg(1)->Arg(16)->Arg(64);

}  // namespace

// The server is started and connected before any benchmark runs, so that a
// profile of one benchmark (callgrind --toggle-collect) holds no start-up
// or SCRAM handshake.
int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  (void)shared_server();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
