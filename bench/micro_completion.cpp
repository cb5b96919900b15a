// What a completion token costs a pgpipe operation, with no I/O. A fake query_target completes every query the way a connection
// does: one post to the loop, then detail::completion_impl::complete()
// dispatched from the loop. What is measured is therefore pgpipe's own
// initiation (async_initiate, type erasure, the query_spec) and completion
// path, plus what each token adds on top: a callback, use_awaitable,
// use_future (a second thread waits on the future), deferred; a three-step
// chain and a two-branch join in each style.
// The error-code forms a coroutine can await side by side
// (as_tuple(use_awaitable), use_promise, deferred): each reports allocs_per_op, the global operator new calls per
// operation, counted by the replacement below.
// Items = completed operations (chains and joins: completed chains/joins).
#include <pgpipe/detail/async_glue.hpp>

#include <benchmark/benchmark.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/experimental/promise.hpp>
#include <boost/asio/experimental/use_promise.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <array>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <thread>
#include <vector>

// Every allocation of the process goes through these, so a benchmark can
// report how many operator new calls one operation makes.
namespace {
std::atomic<std::uint64_t> g_news{0};
}  // namespace

// g++ sees free() of a pointer from operator new once both are inlined, and
// that is these functions' contract, not a mismatch.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace {

namespace asio = boost::asio;
using pgpipe::detail::completion;
using pgpipe::detail::query_spec;
using pgpipe::result;

constexpr std::size_t batch = 1000;  // operations per benchmark iteration

// Completes each query on the loop, as a connection completes a request it
// has read: never inline in the initiating function (the driver's rule).
class loop_target final : public pgpipe::detail::query_target {
 public:
  explicit loop_target(asio::io_context& io) : io_(io), ex_(io.get_executor()) {}
  void submit_query(query_spec, std::unique_ptr<completion<result>> done, asio::cancellation_slot) override {
    asio::post(io_, [this, d = std::move(done)]() mutable { d->complete(ex_, false, {}, result{}); });
  }

 private:
  asio::io_context& io_;
  asio::any_io_executor ex_;
};

struct fixture {
  asio::io_context io{1};
  std::shared_ptr<pgpipe::detail::query_target> target = std::make_shared<loop_target>(io);
  template <class Token>
  auto query(Token&& token) {
    return pgpipe::detail::initiate_query(target, query_spec{"select 1", {}, std::nullopt},
                                          std::forward<Token>(token));
  }
  void run() {
    io.run();
    io.restart();
  }
};

using done_t = std::tuple<std::error_code, result>;

// Reports operator new calls per completed operation over the timed loop.
class alloc_counter {
 public:
  explicit alloc_counter(benchmark::State& st, std::size_t ops_per_iteration = batch)
      : st_(st), per_iteration_(ops_per_iteration) {}
  void start() { begin_ = g_news.load(std::memory_order_relaxed); }
  ~alloc_counter() {
    const auto ops = static_cast<double>(st_.iterations()) * static_cast<double>(per_iteration_);
    if (ops > 0) {
      st_.counters["allocs_per_op"] =
          static_cast<double>(g_news.load(std::memory_order_relaxed) - begin_) / ops;
    }
  }

 private:
  benchmark::State& st_;
  std::size_t per_iteration_;
  std::uint64_t begin_ = 0;
};

// Per iteration: `coroutines` coroutines of one form spawned at once, each
// awaiting `awaits` operations, after one warm-up round (Asio's per-thread
// recycling caches fill once). Items = awaits.
template <class Loop>
void run_coroutines(benchmark::State& st, Loop loop, std::size_t coroutines, std::size_t awaits) {
  fixture f;
  auto round = [&] {
    for (std::size_t i = 0; i < coroutines; ++i) asio::co_spawn(f.io, loop(f, awaits), asio::detached);
    f.run();
  };
  round();
  alloc_counter allocs(st, coroutines * awaits);
  allocs.start();
  for (auto _ : st) round();
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * coroutines * awaits));
}

// Runs `batch` awaits of one form in one coroutine per iteration.
template <class Loop>
void run_awaits(benchmark::State& st, Loop loop) {
  run_coroutines(st, loop, 1, batch);
}

// --- one operation ---------------------------------------------------------

struct callback_chain {
  fixture* f;
  std::size_t* left;
  void operator()(std::error_code ec, result) const {
    benchmark::DoNotOptimize(ec);
    if (--*left > 0) f->query(*this);
  }
};

void one_callback(benchmark::State& st) {
  fixture f;
  alloc_counter allocs(st);
  allocs.start();
  for (auto _ : st) {
    std::size_t left = batch;
    f.query(callback_chain{&f, &left});
    f.run();
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * batch));
}
BENCHMARK(one_callback);

asio::awaitable<void> awaitable_loop(fixture& f, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    result r = co_await f.query(asio::use_awaitable);  // with_diagnostics: a failure would throw
    benchmark::DoNotOptimize(r.failed());
  }
}

void one_use_awaitable(benchmark::State& st) { run_awaits(st, awaitable_loop); }
BENCHMARK(one_use_awaitable);

// --- the error-code forms a coroutine can await ------------------------------

asio::awaitable<void> as_tuple_loop(fixture& f, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    auto [ec, r] = co_await f.query(asio::as_tuple(asio::use_awaitable));
    benchmark::DoNotOptimize(ec);
    benchmark::DoNotOptimize(r.failed());
  }
}
void one_as_tuple_use_awaitable(benchmark::State& st) { run_awaits(st, as_tuple_loop); }
BENCHMARK(one_as_tuple_use_awaitable);

// redirect_error(use_awaitable, ec) is not among them: Asio 1.81 strips only a
// boost::system::error_code from the signature, so with pgpipe's
// std::error_code it passes the signature through, never writes `ec`, and
// the await gives the same tuple as as_tuple(use_awaitable).

asio::awaitable<void> use_promise_loop(fixture& f, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    auto [ec, r] = co_await f.query(asio::experimental::use_promise);
    benchmark::DoNotOptimize(ec);
    benchmark::DoNotOptimize(r.failed());
  }
}
void one_use_promise(benchmark::State& st) { run_awaits(st, use_promise_loop); }
BENCHMARK(one_use_promise);

// co_await of a deferred operation: Asio 1.81's awaitable starts it with a
// handler that resumes the awaiting coroutine (no frame of its own).
asio::awaitable<void> deferred_loop(fixture& f, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    auto [ec, r] = co_await f.query(asio::deferred);
    benchmark::DoNotOptimize(ec);
    benchmark::DoNotOptimize(r.failed());
  }
}
void one_deferred_awaited(benchmark::State& st) { run_awaits(st, deferred_loop); }
BENCHMARK(one_deferred_awaited);

// --- many logical clients at once --------------------------------------------

// pgpipe-bench's shape: `clients` logical clients, each in a closed loop, so
// the loop goes through every client's state between two queries of one
// client, as it goes through 500 in the bench's default run. What a query
// costs here beyond the one_ forms above is each client's state falling out
// of the caches between its turns: a callback's record, a coroutine's frames
// (callgrind --cache-sim=yes counts the misses).
constexpr std::size_t clients = 500;
constexpr std::size_t rounds = 64;  // queries per client per iteration

struct client_record {
  std::size_t left = 0;
};

struct record_callback {
  fixture* f;
  client_record* c;
  void operator()(std::error_code ec, result) const {
    benchmark::DoNotOptimize(ec);
    if (--c->left > 0) f->query(*this);
  }
};

void many_callback(benchmark::State& st) {
  fixture f;
  std::vector<client_record> records(clients);
  alloc_counter allocs(st, clients * rounds);
  allocs.start();
  for (auto _ : st) {
    for (auto& c : records) {
      c.left = rounds;
      f.query(record_callback{&f, &c});
    }
    f.run();
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * clients * rounds));
}
BENCHMARK(many_callback);

// One coroutine per client, spawned per iteration (one co_spawn per `rounds`
// awaits).
void many_deferred_awaited(benchmark::State& st) { run_coroutines(st, deferred_loop, clients, rounds); }
BENCHMARK(many_deferred_awaited);

// The same clients awaiting an operation that carries only a pointer until
// it starts (its query_spec built by the initiation, after the suspension,
// and no shared_ptr copied): against many_deferred_awaited, what the encoded
// query and target that a deferred operation keeps in the awaiting frame
// cost. Not a form a user can write: the arguments must be copied at the call.
template <class Token>
auto query_light(fixture& f, Token&& token) {
  return asio::async_initiate<Token, void(std::error_code, result)>(
      [](auto handler, pgpipe::detail::query_target* t) {
        using H = decltype(handler);
        auto slot = asio::get_associated_cancellation_slot(handler);
        t->submit_query(query_spec{"select 1", {}, std::nullopt},
                        std::make_unique<pgpipe::detail::completion_impl<result, H>>(std::move(handler)), slot);
      },
      token, f.target.get());
}

asio::awaitable<void> light_loop(fixture& f, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    auto [ec, r] = co_await query_light(f, asio::deferred);
    benchmark::DoNotOptimize(ec);
    benchmark::DoNotOptimize(r.failed());
  }
}

void many_deferred_light(benchmark::State& st) { run_coroutines(st, light_loop, clients, rounds); }
BENCHMARK(many_deferred_light);

void one_use_future(benchmark::State& st) {
  fixture f;
  auto work = asio::make_work_guard(f.io);
  std::thread loop([&] { f.io.run(); });
  for (auto _ : st) {
    for (std::size_t i = 0; i < batch; ++i) {
      auto fut = f.query(asio::use_future);
      const result r = fut.get();
      benchmark::DoNotOptimize(r.failed());
    }
  }
  work.reset();
  loop.join();
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * batch));
}
BENCHMARK(one_use_future)->UseRealTime();

struct deferred_chain {
  fixture* f;
  std::size_t* left;
  void operator()(std::error_code ec, result) const {
    benchmark::DoNotOptimize(ec);
    if (--*left > 0) f->query(asio::deferred)(*this);
  }
};

void one_deferred(benchmark::State& st) {
  fixture f;
  for (auto _ : st) {
    std::size_t left = batch;
    f.query(asio::deferred)(deferred_chain{&f, &left});
    f.run();
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * batch));
}
BENCHMARK(one_deferred);

// --- three steps, each started when the previous one completed -------------

struct callback_three {
  fixture* f;
  std::size_t* left;
  void operator()(std::error_code, result) const {
    f->query([*this](std::error_code, result) {
      f->query([*this](std::error_code ec, result) {
        benchmark::DoNotOptimize(ec);
        if (--*left > 0) f->query(*this);
      });
    });
  }
};

void chain3_callback(benchmark::State& st) {
  fixture f;
  for (auto _ : st) {
    std::size_t left = batch;
    f.query(callback_three{&f, &left});
    f.run();
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * batch));
}
BENCHMARK(chain3_callback);

asio::awaitable<void> awaitable_three(fixture& f, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    result a = co_await f.query(asio::use_awaitable);
    result b = co_await f.query(asio::use_awaitable);
    result c = co_await f.query(asio::use_awaitable);
    benchmark::DoNotOptimize(c.failed());
  }
}

void chain3_use_awaitable(benchmark::State& st) {
  fixture f;
  for (auto _ : st) {
    asio::co_spawn(f.io, awaitable_three(f, batch), asio::detached);
    f.run();
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * batch));
}
BENCHMARK(chain3_use_awaitable);

// deferred(fn) as the token: fn returns the next deferred operation, so the
// three steps are one composed operation started by the final handler.
struct deferred_three {
  fixture* f;
  std::size_t* left;
  void operator()(std::error_code ec, result) const {
    benchmark::DoNotOptimize(ec);
    if (--*left > 0) start(*f, *this);
  }
  static void start(fixture& f, const deferred_three& next) {
    f.query(asio::deferred([&f](std::error_code, result) {
      return f.query(asio::deferred([&f](std::error_code, result) { return f.query(asio::deferred); }));
    }))(next);
  }
};

void chain3_deferred(benchmark::State& st) {
  fixture f;
  for (auto _ : st) {
    std::size_t left = batch;
    deferred_three::start(f, deferred_three{&f, &left});
    f.run();
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * batch));
}
BENCHMARK(chain3_deferred);

// --- two operations at once, continue when both completed -------------------

// Each join starts the next one when both its branches completed, so every
// style runs its whole batch inside one run() of the loop.
struct callback_join {
  fixture* f;
  std::size_t* left;
  void start() const {
    auto pending = std::make_shared<int>(2);
    auto on_done = [pending, self = *this](std::error_code ec, result) {
      benchmark::DoNotOptimize(ec);
      if (--*pending == 0 && --*self.left > 0) self.start();
    };
    f->query(on_done);
    f->query(on_done);
  }
};

void join2_callback(benchmark::State& st) {
  fixture f;
  for (auto _ : st) {
    std::size_t left = batch;
    callback_join{&f, &left}.start();
    f.run();
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * batch));
}
BENCHMARK(join2_callback);

struct group_join {
  fixture* f;
  std::size_t* left;
  void start() const {
    asio::experimental::make_parallel_group(f->query(asio::deferred), f->query(asio::deferred))
        .async_wait(asio::experimental::wait_for_all(),
                    [self = *this](std::array<std::size_t, 2>, std::error_code a, result, std::error_code b, result) {
                      benchmark::DoNotOptimize(a);
                      benchmark::DoNotOptimize(b);
                      if (--*self.left > 0) self.start();
                    });
  }
};

void join2_parallel_group(benchmark::State& st) {
  fixture f;
  for (auto _ : st) {
    std::size_t left = batch;
    group_join{&f, &left}.start();
    f.run();
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * batch));
}
BENCHMARK(join2_parallel_group);

asio::awaitable<void> awaitable_join(fixture& f, std::size_t n) {
  using namespace asio::experimental::awaitable_operators;
  for (std::size_t i = 0; i < n; ++i) {
    auto both = co_await (f.query(asio::use_awaitable) && f.query(asio::use_awaitable));
    // operator&& flattens the first branch's tuple: (ec, result, (ec, result)).
    benchmark::DoNotOptimize(std::get<0>(both));
  }
}

void join2_awaitable_operators(benchmark::State& st) {
  fixture f;
  for (auto _ : st) {
    asio::co_spawn(f.io, awaitable_join(f, batch), asio::detached);
    f.run();
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * batch));
}
BENCHMARK(join2_awaitable_operators);

}  // namespace

BENCHMARK_MAIN();
