// What the shared pool costs per query: one request + one release on
// pool_core, the work both drivers do under their lock for every query.
// Shapes: the async driver (20 slots of capacity 128, 500 in flight) and the
// blocking driver (20 slots of capacity 1), plus the path through the waiter
// queue when every slot is busy.
#include "core/pool/pool_core.hpp"

#include <benchmark/benchmark.h>

#include <vector>

namespace {

using pgpipe::detail::pool_core;
using pgpipe::detail::request_kind;
using pgpipe::detail::request_outcome;

pool_core open_pool(std::size_t slots, std::size_t capacity, std::size_t max_queued) {
  pgpipe::pool_params p;
  p.conninfo = "host=localhost";
  p.max_size = slots;
  p.min_size = slots;
  p.max_queued = max_queued;
  pool_core core(p, capacity);
  const auto now = pgpipe::detail::pool_clock::now();
  core.start(now);
  for (const auto& a : core.take_actions()) {
    if (a.what == pgpipe::detail::pool_action::kind::open) core.on_open_succeeded(now, a.slot);
  }
  core.take_actions();
  return core;
}

// Keep `in_flight` grants outstanding; each iteration releases the oldest
// and requests a new one (a closed loop at steady state).
void steady_state(benchmark::State& state, std::size_t slots, std::size_t capacity, std::size_t in_flight) {
  auto core = open_pool(slots, capacity, 100'000);
  const auto now = pgpipe::detail::pool_clock::now();
  const auto deadline = now + std::chrono::seconds(30);
  std::vector<pgpipe::detail::slot_id> granted;
  std::vector<pgpipe::detail::waiter_id> queued;
  for (std::size_t i = 0; i < in_flight; ++i) {
    auto o = core.request(now, request_kind::shared, deadline);
    if (o.what == request_outcome::kind::granted) granted.push_back(o.slot);
  }
  core.take_actions();
  std::size_t next = 0;
  for (auto _ : state) {
    const auto slot = granted[next];
    core.release(now, slot, request_kind::shared);
    // A release may grant a queued waiter: that grant stands in for ours.
    auto actions = core.take_actions();
    if (!actions.empty()) {
      granted[next] = actions.front().slot;
    } else {
      auto o = core.request(now, request_kind::shared, deadline);
      if (o.what == request_outcome::kind::granted) granted[next] = o.slot;
      core.take_actions();
    }
    next = (next + 1) % granted.size();
  }
  state.SetItemsProcessed(state.iterations());
}

void async_shape(benchmark::State& s) { steady_state(s, 20, 128, 500); }
void blocking_shape(benchmark::State& s) { steady_state(s, 20, 1, 20); }
BENCHMARK(async_shape);
BENCHMARK(blocking_shape);

// Every slot full and 10,000 waiters queued (the --concurrency 10000 case):
// each release hands the unit to the head waiter, which then re-queues.
void through_the_queue(benchmark::State& state) {
  auto core = open_pool(20, 128, 100'000);
  const auto now = pgpipe::detail::pool_clock::now();
  const auto deadline = now + std::chrono::seconds(30);
  std::vector<pgpipe::detail::slot_id> granted;
  for (std::size_t i = 0; i < 20 * 128; ++i) granted.push_back(core.request(now, request_kind::shared, deadline).slot);
  for (std::size_t i = 0; i < 10'000; ++i) core.request(now, request_kind::shared, deadline);
  core.take_actions();
  std::size_t next = 0;
  for (auto _ : state) {
    core.release(now, granted[next], request_kind::shared);
    for (const auto& a : core.take_actions()) {
      if (a.what == pgpipe::detail::pool_action::kind::grant) granted[next] = a.slot;
    }
    core.request(now, request_kind::shared, deadline);  // the client's next query queues
    next = (next + 1) % granted.size();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(through_the_queue);

}  // namespace

BENCHMARK_MAIN();
