// What one query costs in the async connection's state machine, no I/O:
// submit, write pass, the shell's reading of its results (Execute's rows,
// two command ends, Sync) and the actions taken, with a named statement
// already cached, as at steady state in pgpipe-bench. `in_flight` requests
// stay written, as on a busy pipelined connection.
//
// Two ways of handing the core the request's SQL text (its statement-cache
// key), to show what lending it saves per query:
//  - borrowed: the shell lends the text its request holds (sql_key with an
//    owner reference), as pipelined_connection does;
//  - copied: the core gets its own copy of the text per query (an owning
//    sql_key: the copy plus one shared block). Callgrind on pgpipe-bench
//    gives the difference on the whole query path (docs/benchmarks.md).
// Plus the statement cache's lookup alone.
#include "async/sansio/pipeline_core.hpp"
#include "async/sansio/statement_cache.hpp"

#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

namespace {

using namespace pgpipe::detail;

// The bench's lookup: long enough that a copy of it allocates.
const std::string lookup_sql = "select ten, so_luong from san_pham where ma = $1";

struct owner_request {
  std::string sql = lookup_sql;
};

enum class key_mode { borrowed, copied };

void one_query_cycle(benchmark::State& state, key_mode mode) {
  const auto in_flight = static_cast<std::size_t>(state.range(0));
  pipeline_params p;
  p.depth = 128;
  pipeline_core core(p);
  std::vector<pipe_action> actions;
  const auto now = pool_clock::now();
  pipe_id next = 1;
  // The shell's requests: one owner per query, as query_request is.
  auto submit = [&] {
    auto owner = std::make_shared<owner_request>();
    pipe_request r;
    if (mode == key_mode::borrowed) {
      r.sql = sql_key(owner->sql, owner);
    } else {
      r.sql = std::string(owner->sql);
    }
    r.param_count = 1;
    r.pooled = true;
    core.submit(now, next++, std::move(r));
  };
  // The server's answer to the head: Execute's rows, its command end, the Sync.
  auto answer_head = [&] {
    (void)core.on_result(pipe_result::rows);
    core.on_command_end();
    core.on_sync(now, tx_state::idle);
  };
  // Warm up: the statement is cached (its Parse answered), `in_flight` written.
  submit();
  core.write_pass(now);
  core.on_result(pipe_result::command_ok);
  core.on_command_end();
  answer_head();
  core.take_actions(actions);
  for (std::size_t i = 0; i < in_flight; ++i) submit();
  core.write_pass(now);
  core.take_actions(actions);
  for (auto _ : state) {
    answer_head();
    submit();
    core.write_pass(now);
    core.take_actions(actions);
    benchmark::DoNotOptimize(actions.data());
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_pipeline_core_query_borrowed_key(benchmark::State& s) { one_query_cycle(s, key_mode::borrowed); }
void BM_pipeline_core_query_copied_key(benchmark::State& s) { one_query_cycle(s, key_mode::copied); }
BENCHMARK(BM_pipeline_core_query_borrowed_key)->Arg(1)->Arg(25);
BENCHMARK(BM_pipeline_core_query_copied_key)->Arg(1)->Arg(25);

// The cache lookup send() does per query, by the borrowed text.
void BM_statement_cache_find(benchmark::State& state) {
  statement_cache cache(1000);
  for (int i = 0; i < 50; ++i) cache.add(lookup_sql + " -- " + std::to_string(i));
  cache.add(lookup_sql);
  const std::string_view key = lookup_sql;
  for (auto _ : state) benchmark::DoNotOptimize(cache.find(key));
}
BENCHMARK(BM_statement_cache_find);

}  // namespace

BENCHMARK_MAIN();
