// What deciding "may this statement run on a shared connection / does it
// change the session" costs per statement (core/sql/shared_statement.hpp).
// Every query on the shared path and every statement sent on a lease is
// checked once, on the caller's thread: TPC-B's seven statements per
// transaction, the select workload's one per query.
#include "core/sql/shared_statement.hpp"
#include "tpcb.hpp"

#include <benchmark/benchmark.h>


namespace {

using pgpipe::detail::check_shared_statement;

// One TPC-B transaction as async_transaction_batch sends it: BEGIN, the
// bench's five statements (bench/tpcb.hpp), COMMIT.
void check_tpcb() {
  benchmark::DoNotOptimize(check_shared_statement("BEGIN"));
  for (const char* sql : pgpipe::bench::tpcb_statements) benchmark::DoNotOptimize(check_shared_statement(sql));
  benchmark::DoNotOptimize(check_shared_statement("COMMIT"));
}

void BM_check_shared_statement_tpcb(benchmark::State& state) {
  for (auto _ : state) check_tpcb();
  state.SetItemsProcessed(state.iterations() * 7);
}

void BM_check_shared_statement_select(benchmark::State& state) {
  for (auto _ : state)
    benchmark::DoNotOptimize(check_shared_statement("select ten, so_luong from san_pham where ma = $1"));
  state.SetItemsProcessed(state.iterations());
}

void BM_check_shared_statement_refused(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(check_shared_statement("set search_path = app, public"));
    benchmark::DoNotOptimize(check_shared_statement("create temporary table scratch (a int)"));
  }
  state.SetItemsProcessed(state.iterations() * 2);
}

}  // namespace

BENCHMARK(BM_check_shared_statement_tpcb);
BENCHMARK(BM_check_shared_statement_select);
BENCHMARK(BM_check_shared_statement_refused);
BENCHMARK_MAIN();
