// coroutine: one C++20 coroutine per logical client (co_spawn, each query
// awaited through asio::deferred), the style most new Asio code is written in. The client
// owns its loops exactly as in the callback driver (one io_context per loop
// thread, `loops` of them) and the coroutines are spread over those loops
// (async_client::get_executor(i)), so coroutines and connections share the
// same threads, as in a server application built on Asio. The other shapes
// measure something else than the coroutine style: one io_context run by
// `loops` threads sends every handler through one shared, locked queue that
// the callback driver's loops do not have, and coroutines all on the first
// loop leave it all the callers' work while the other loops only read
// results (both about 0.65x the callback driver at pool 4; see
// docs/benchmarks-log.md, 2026-12-01).
#include "async_common.hpp"
#include "driver.hpp"
#include "query_args.hpp"

#include <pgpipe/async_client.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <thread>

namespace pgpipe::bench {
namespace {

namespace asio = boost::asio;

class coroutine_driver final : public driver {
 public:
  explicit coroutine_driver(driver_params p) : p_(std::move(p)) {}
  ~coroutine_driver() override { close(); }

  void start(measurement& m) override {
    m_ = &m;
    const std::size_t loops = p_.loops ? p_.loops : std::max(1u, std::thread::hardware_concurrency());
    client_ = std::make_unique<pgpipe::async_client>(async_pool_params(p_), pgpipe::async_client_options{.loops = loops});
    // Round-robin over the client's loops, as the callback driver's
    // handlers end up spread by the connections that run them. Queries
    // started on a loop prefer that loop's connections (loop affinity,
    // async_client.hpp), so a coroutine is resumed in its connection's turn,
    // with no post between threads.
    const std::size_t n = client_->loop_count();
    for (std::size_t i = 0; i < p_.concurrency; ++i) {
      asio::co_spawn(client_->get_executor(i % n), logical_client(), asio::detached);
    }
  }

  bool pool_open() const override {
    const auto s = client_->stats();
    return s.idle + s.busy + s.checking >= p_.pool;
  }

  void close() override {
    // The destructor closes the pool, waits for work in flight (the
    // coroutines' last queries) and joins the loops.
    client_.reset();
  }

 private:
  // The frame lives as long as the client (10,000 of them at --concurrency
  // 10000): the generator and the arguments are per thread (draw_args), not
  // in the frame, as the callback driver keeps them out of its records. Each
  // coroutine stays on the loop it was spawned on.
  asio::awaitable<void> logical_client() {
    pgpipe::query_options opts;
    opts.read_only = p_.read_only;
    while (m_->begin_query()) {
      const auto& args = draw_args(p_.work);
      const auto started = bench_clock::now();
      // co_await of the deferred operation: the (error_code, result) pair,
      // so that a failed query is counted rather than thrown (use_awaitable
      // alone throws), and no coroutine frame per query (as_tuple(use_awaitable)
      // makes one; docs/benchmarks.md). One await site, the callback
      // driver's call: every temporary of an await is a slot of the frame.
      auto [ec, res] = co_await async_query_n(*client_, opts, p_.work.sql, args, asio::deferred);
      if (!ec) {
        if (auto bad = consume(res, p_.work.builtin); !bad.empty()) {
          m_->end_query_failed(started, bad);
          continue;
        }
      }
      m_->end_query(started, ec);
    }
  }

  driver_params p_;
  measurement* m_ = nullptr;
  std::unique_ptr<pgpipe::async_client> client_;
};

}  // namespace

std::unique_ptr<driver> make_coroutine_driver(const driver_params& p) { return std::make_unique<coroutine_driver>(p); }

}  // namespace pgpipe::bench
