// The bench records every query into latency_histogram from several
// threads; this checks that recording stays in the nanoseconds, so the
// histogram never becomes what pgpipe-bench measures.
#include "latency.hpp"

#include <benchmark/benchmark.h>

#include <random>

namespace {

void record(benchmark::State& state) {
  static pgpipe::bench::latency_histogram h;
  std::mt19937_64 rng(static_cast<unsigned>(state.thread_index()));
  std::uniform_int_distribution<std::uint64_t> micros(50, 50'000);
  for (auto _ : state) h.record(micros(rng));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(record)->Threads(1)->Threads(2);

void percentile(benchmark::State& state) {
  pgpipe::bench::latency_histogram h;
  for (std::uint64_t v = 0; v < 100'000; ++v) h.record(v % 20'000);
  for (auto _ : state) benchmark::DoNotOptimize(h.percentile(0.99));
}
BENCHMARK(percentile);

}  // namespace

BENCHMARK_MAIN();
