// blocking_executor + blocking_pool: how an Asio application calls the
// blocking driver (and how pgpipe-bench's `blocking` driver runs).
#include <pgpipe/blocking_executor.hpp>
#include <pgpipe/blocking_pool.hpp>

#include "support/cluster_fixture.hpp"
#include "support/use_future_ec.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <string>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pgpipe::test::shared_cluster;

TEST(blocking_executor_with_pool, many_coroutines_share_few_workers_and_connections) {
  pgpipe::pool_params p;
  p.conninfo = shared_cluster().conninfo();
  p.max_size = 4;
  pgpipe::blocking_pool pool{p};
  pgpipe::blocking_executor workers{p};
  ASSERT_EQ(workers.thread_count(), 4u);

  constexpr int callers = 200;
  constexpr int per_caller = 10;
  asio::io_context ctx;
  std::atomic<int> ok{0};
  std::atomic<int> bad{0};
  for (int c = 0; c < callers; ++c) {
    asio::co_spawn(
        ctx,
        [&, c]() -> asio::awaitable<void> {
          for (int i = 0; i < per_caller; ++i) {
            const int v = c * 100 + i;
            auto [ec, rows] = co_await workers.async_run(
                [&pool, v] { return pool.exec("select $1::int + 1", v); }, asio::as_tuple(asio::use_awaitable));
            if (!ec && rows.size() == 1 && rows[0][0].get<int>() == v + 1) {
              ++ok;
            } else {
              ++bad;
            }
          }
        },
        asio::detached);
  }
  ctx.run();  // returns once every caller finished: pending calls keep it running
  EXPECT_EQ(ok.load(), callers * per_caller);
  EXPECT_EQ(bad.load(), 0);
  const auto s = pool.stats();
  EXPECT_LE(s.connects, 4u);
  EXPECT_EQ(s.completed, static_cast<std::uint64_t>(callers * per_caller));
}

TEST(blocking_executor_with_pool, server_error_reaches_the_caller_with_diagnostics) {
  pgpipe::pool_params p;
  p.conninfo = shared_cluster().conninfo();
  p.max_size = 1;
  pgpipe::blocking_pool pool{p};
  pgpipe::blocking_executor workers{p};
  pgpipe::diagnostics diag;
  auto f = workers.async_run([&] { return pool.exec("select 1/0"); }, diag, pgpipe::test::use_future_ec);
  auto [ec, rows] = f.get();
  EXPECT_EQ(ec, pgpipe::make_sqlstate("22012"));
  EXPECT_EQ(diag.sqlstate, "22012");
  EXPECT_EQ(diag.message, "division by zero");
  EXPECT_TRUE(rows.empty());
}

}  // namespace
