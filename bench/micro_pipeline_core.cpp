// What one query costs in the async connection's state machine, no I/O:
// submit, write pass, the shell's reading of its results (Execute's rows,
// two command ends, Sync) and the actions taken, with a named statement
// already cached, as at steady state in pgpipe-bench. `in_flight` requests
// stay written, as on a busy pipelined connection.
//
// Ways of handing the core the request's SQL text (its statement-cache
// key), to show what lending it saves per query:
//  - borrowed: the shell lends the text its request holds (sql_key with an
//    owner reference), as pipelined_connection does;
//  - copied: the core gets its own copy of the text per query (an owning
//    sql_key: the copy plus one shared block). Callgrind on pgpipe-bench
//    gives the difference on the whole query path (docs/benchmarks-log.md);
//  - typed_parts: borrowed, with parameter types in the key.
// Plus the statement cache's lookups of one query alone.
#include "async/sansio/pipeline_core.hpp"
#include "core/statements/statement_cache.hpp"

#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace pgpipe::detail;

// The bench's lookup: long enough that a copy of it allocates.
const std::string lookup_sql = "select ten, so_luong from san_pham where ma = $1";

struct owner_request {
  std::string sql = lookup_sql;
  std::vector<unsigned> types{23};  // one int4 parameter, as the bench's lookup
};

// typed_parts: a request whose parameter is sent typed; its key is the text
// and the types, lent in two parts, as pipelined_connection does.
enum class key_mode { borrowed, copied, typed_parts };

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
    const std::string_view type_bytes(reinterpret_cast<const char*>(owner->types.data()),
                                      owner->types.size() * sizeof(unsigned));
    switch (mode) {
      case key_mode::borrowed:
        r.sql = sql_key(owner->sql, owner);
        break;
      case key_mode::copied:
        r.sql = std::string(owner->sql);
        break;
      case key_mode::typed_parts:
        r.sql = sql_key(owner->sql, owner, type_bytes);
        break;
    }
    r.param_count = 1;
    r.pooled = true;
    core.submit(next++, std::move(r));
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
void BM_pipeline_core_query_typed_parts_key(benchmark::State& s) { one_query_cycle(s, key_mode::typed_parts); }
BENCHMARK(BM_pipeline_core_query_borrowed_key)->Arg(1)->Arg(25);
BENCHMARK(BM_pipeline_core_query_copied_key)->Arg(1)->Arg(25);
BENCHMARK(BM_pipeline_core_query_typed_parts_key)->Arg(1)->Arg(25);

// A query's three statement-cache lookups (get at its send, use when it is
// named, use when it is done), by the borrowed text:
//  - rehashed: the text hashed at every lookup;
//  - hashed_once: the hash the request's sql_key computed once, reused, as
//    pipeline_core does.
void statement_cache_query(benchmark::State& state, bool hash_once) {
  statement_cache cache(1000);
  for (int i = 0; i < 50; ++i) (void)cache.put(lookup_sql + " -- " + std::to_string(i), true);
  const std::string name = *cache.put(lookup_sql, true);
  const std::string_view text = lookup_sql;
  for (auto _ : state) {
    if (hash_once) {
      const statement_key key(text);
      benchmark::DoNotOptimize(cache.get(key));
      cache.use(key, name, +1);
      cache.use(key, name, -1);
    } else {
      benchmark::DoNotOptimize(cache.get(text));
      cache.use(text, name, +1);
      cache.use(text, name, -1);
    }
  }
}
// Making a typed request's key: the text and the types joined into one
// string per request, then hashed (an allocation and a copy of the text),
// against hashing the two parts where the request holds them.
void BM_typed_key_joined(benchmark::State& state) {
  const owner_request req;
  const std::string_view types(reinterpret_cast<const char*>(req.types.data()), req.types.size() * sizeof(unsigned));
  for (auto _ : state) {
    std::string key;
    key.reserve(req.sql.size() + 1 + types.size());
    key.append(req.sql).push_back('\0');
    key.append(types);
    benchmark::DoNotOptimize(std::hash<std::string_view>{}(key));
    benchmark::DoNotOptimize(key.data());
  }
}
void BM_typed_key_parts(benchmark::State& state) {
  const owner_request req;
  const std::string_view types(reinterpret_cast<const char*>(req.types.data()), req.types.size() * sizeof(unsigned));
  for (auto _ : state) benchmark::DoNotOptimize(statement_key(req.sql, types).hash);
}
BENCHMARK(BM_typed_key_joined);
BENCHMARK(BM_typed_key_parts);

void BM_statement_cache_query_rehashed(benchmark::State& s) { statement_cache_query(s, false); }
void BM_statement_cache_query_hashed_once(benchmark::State& s) { statement_cache_query(s, true); }
BENCHMARK(BM_statement_cache_query_rehashed);
BENCHMARK(BM_statement_cache_query_hashed_once);

}  // namespace

BENCHMARK_MAIN();
