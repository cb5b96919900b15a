// async_client::async_stream against a real server: a stream without a
// lease taken by hand. Its rows arrive in chunks; the lease goes back to the
// pool when the stream is done with (read to the end, or dropped half-read),
// so a pool of one serves the next caller; an acquire failure carries the
// connect error; a statement error comes through async_next.
#include <pgpipe/async_client.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <string>

namespace asio = boost::asio;
using pgpipe::test::app_conninfo;
using pgpipe::test::params_for;
using pgpipe::test::shared_cluster;

namespace {

TEST(async_client_stream, rows_arrive_in_chunks_and_the_lease_goes_back) {
  pgpipe::async_client client(params_for(app_conninfo("client_stream"), 1), {.loops = 1});
  struct seen {
    long long rows = 0, sum = 0;
    int chunks = 0;
    std::string tag, after;
  };
  const seen s = pgpipe::test::run_on(client, [&]() -> asio::awaitable<seen> {
    seen out;
    {
      auto stream = co_await client.async_stream("select g from generate_series(1, $1::int) g", 20000, asio::use_awaitable);
      for (;;) {
        auto chunk = co_await stream.async_next(asio::use_awaitable);
        if (chunk.empty()) {
          out.tag = std::string(chunk.command_tag());
          break;
        }
        ++out.chunks;
        for (const auto& row : chunk) {
          ++out.rows;
          out.sum += row.get<int>(0);
        }
      }
    }
    // The pool has one connection: this query needs the stream's lease back.
    auto r = co_await client.async_query("select 'served'", asio::use_awaitable);
    out.after = r.value<std::string>();
    co_return out;
  }());
  EXPECT_EQ(s.rows, 20000);
  EXPECT_EQ(s.sum, 20000LL * 20001 / 2);
  EXPECT_GT(s.chunks, 1) << "one chunk: not streamed";
  EXPECT_EQ(s.tag, "SELECT 20000");
  EXPECT_EQ(s.after, "served");
}

TEST(async_client_stream, a_stream_dropped_half_read_gives_its_connection_back) {
  pgpipe::async_client client(params_for(app_conninfo("client_stream_drop"), 1), {.loops = 1});
  const std::string after = pgpipe::test::run_on(client, [&]() -> asio::awaitable<std::string> {
    {
      auto stream = co_await client.async_stream("select g from generate_series(1, 10000000) g", asio::use_awaitable);
      auto first = co_await stream.async_next(asio::use_awaitable);
      EXPECT_FALSE(first.empty());
    }  // dropped: cancelled on the server, the lease released
    auto r = co_await client.async_query("select 'served'", asio::use_awaitable);
    co_return r.value<std::string>();
  }());
  EXPECT_EQ(after, "served");
}

TEST(async_client_stream, a_statement_error_comes_through_the_first_next) {
  pgpipe::async_client client(params_for(app_conninfo("client_stream_err"), 1), {.loops = 1});
  auto [ec, stream] = client.async_stream("select 1 / 0", pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(ec) << ec.message();
  auto [nec, chunk] = stream.async_next(pgpipe::test::use_future_ec).get();
  EXPECT_EQ(pgpipe::sqlstate_of(nec), "22012") << nec.message();
}

TEST(async_client_stream, an_acquire_failure_carries_the_connect_error) {
  auto& pg = shared_cluster();
  auto p = params_for(pg.conninfo_without_password() + " password=wrong-password-xyz", 1);
  p.acquire_timeout = std::chrono::seconds(2);
  pgpipe::async_client client(p, {.loops = 1});
  auto [ec, stream] = client.async_stream("select 1", pgpipe::test::use_future_ec).get();
  EXPECT_TRUE(ec);
  EXPECT_FALSE(stream.valid());
  EXPECT_EQ(stream.diag().sqlstate, "28P01") << stream.diag().to_string();
  EXPECT_EQ(stream.diag().to_string().find("wrong-password-xyz"), std::string::npos);
}

}  // namespace
