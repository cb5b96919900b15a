// async_row_stream: large results in chunks with bounded memory on a lease.
#include <pgpipe/pgpipe.hpp>

#include "support/cluster_fixture.hpp"
#include "support/async_kit.hpp"
#include "support/kit.hpp"
#include "support/wait.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <cstdint>
#include <future>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

using namespace pgpipe::test;  // the shared kit (tests/support)

}  // namespace

TEST(async_stream, reads_every_row_then_the_end_in_a_coroutine) {
  pgpipe::async_client client(params_for(app_conninfo("async_stream_all"), 1));
  auto l = acquire(client);
  std::promise<std::tuple<std::error_code, std::int64_t, std::int64_t, std::string>> p;
  asio::co_spawn(
      client.get_executor(),
      [&]() -> asio::awaitable<void> {
        auto s = l.stream("select g::int8 from generate_series(1, $1::int) g", 20000);
        std::int64_t rows = 0, sum = 0;
        for (;;) {
          auto [ec, r] = co_await s.async_next(asio::as_tuple(asio::use_awaitable));
          if (ec) {
            p.set_value({ec, rows, sum, ""});
            co_return;
          }
          if (r.empty()) {
            p.set_value({ec, rows, sum, std::string(r.command_tag())});
            co_return;
          }
          for (auto row : r) {
            ++rows;
            sum += row.get<std::int64_t>(0);
          }
        }
      },
      asio::detached);
  auto [ec, rows, sum, tag] = p.get_future().get();
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(rows, 20000);
  EXPECT_EQ(sum, std::int64_t{20000} * 20001 / 2);
  EXPECT_EQ(tag, "SELECT 20000");
  // The lease carries on normally afterwards.
  auto [ec2, r2] = l.async_query("select 'after'::text", pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(ec2);
  EXPECT_EQ(r2.value<std::string>(), "after");
}

TEST(async_stream, a_slow_reader_makes_the_server_wait_instead_of_the_client_buffering) {
  auto& pg = pgpipe::test::shared_cluster();
  pgpipe::async_client client(params_for(app_conninfo("async_stream_slow"), 1));
  auto l = acquire(client);
  // About 1 GB if it were buffered whole.
  auto s = l.stream("select g, repeat('x', 1000) from generate_series(1, 1000000) g");
  for (int i = 0; i < 10; ++i) {
    auto [ec, r] = s.async_next(pgpipe::test::use_future_ec).get();
    ASSERT_FALSE(ec) << ec.message();
    ASSERT_FALSE(r.empty());
  }
  // With nobody reading, the server blocks writing to the socket.
  EXPECT_TRUE(pgpipe::test::wait_until([&] {
    return pg.query_value("select wait_event from pg_stat_activity where application_name = 'async_stream_slow' "
                          "and state = 'active'") == "ClientWrite";
  }));
  // Stop early: the query is cancelled and the lease is usable again.
  s.cancel();
  auto [ec, r] = s.async_next(pgpipe::test::use_future_ec).get();
  EXPECT_EQ(ec, pgpipe::errc::cancelled);
  auto [ec2, r2] = l.async_query("select 42", pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(ec2) << ec2.message() << " " << r2.diag().to_string();
  EXPECT_EQ(r2.value<int>(), 42);
}

TEST(async_stream, an_error_midway_arrives_after_the_rows_before_it) {
  pgpipe::async_client client(params_for(app_conninfo("async_stream_err"), 1));
  auto l = acquire(client);
  auto s = l.stream("select 1 / (g - 3000) from generate_series(1, 5000) g");
  std::size_t rows = 0;
  std::error_code ec;
  for (;;) {
    auto [e, r] = s.async_next(pgpipe::test::use_future_ec).get();
    if (e) {
      ec = e;
      break;
    }
    if (r.empty()) break;
    rows += r.size();
  }
  EXPECT_EQ(pgpipe::sqlstate_of(ec), "22012");
  EXPECT_LT(rows, 3000u);
  // After the error, the stream stays at its end.
  auto [e2, r2] = s.async_next(pgpipe::test::use_future_ec).get();
  EXPECT_FALSE(e2);
  EXPECT_TRUE(r2.empty());
}

TEST(async_stream, dropping_a_stream_midway_leaves_the_lease_usable) {
  pgpipe::async_client client(params_for(app_conninfo("async_stream_drop"), 1));
  auto l = acquire(client);
  {
    auto s = l.stream("select g from generate_series(1, 500000) g");
    auto [ec, r] = s.async_next(pgpipe::test::use_future_ec).get();
    ASSERT_FALSE(ec);
  }
  auto [ec, r] = l.async_query("select 7", pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(ec) << r.diag().to_string();
  EXPECT_EQ(r.value<int>(), 7);
}

TEST(async_stream, bad_parameter_is_reported_by_the_first_next) {
  pgpipe::async_client client(params_for(app_conninfo("async_stream_bad"), 1));
  auto l = acquire(client);
  auto s = l.stream("select $1::text", std::string("a\0b", 3));
  auto [ec, r] = s.async_next(pgpipe::test::use_future_ec).get();
  EXPECT_EQ(ec, pgpipe::errc::invalid_argument);
}

// query_options::stream_chunk_rows: every row arrives either way; where the
// loaded libpq has chunked rows mode (17+, stats say so) each chunk is one
// libpq result of exactly that many rows; elsewhere single-row mode.
TEST(async_stream, a_stream_asking_for_chunks_of_rows_gets_every_row_in_chunks_of_that_size) {
  pgpipe::async_client client(params_for(app_conninfo("async_stream_chunked"), 1));
  const bool chunked = client.stats().runtime.fast_paths.chunked_rows;
  EXPECT_EQ(chunked, PQlibVersion() >= 170000);
  struct seen {
    std::int64_t rows = 0, sum = 0;
    std::vector<std::size_t> sizes;
    std::string after;
  };
  const seen s = run_on(client, [&]() -> asio::awaitable<seen> {
    seen out;
    {
      pgpipe::query_options opts;
      opts.stream_chunk_rows = 500;
      auto stream = co_await client.async_stream(opts, "select g::int8 from generate_series(1, $1::int) g", 20000,
                                                  asio::use_awaitable);
      for (;;) {
        auto chunk = co_await stream.async_next(asio::use_awaitable);
        if (chunk.empty()) break;
        out.sizes.push_back(chunk.size());
        for (const auto& row : chunk) {
          ++out.rows;
          out.sum += row.get<std::int64_t>(0);
        }
      }
    }
    auto r = co_await client.async_query("select 'served'", asio::use_awaitable);
    out.after = r.value<std::string>();
    co_return out;
  }());
  EXPECT_EQ(s.rows, 20000);
  EXPECT_EQ(s.sum, 20000LL * 20001 / 2);
  EXPECT_EQ(s.after, "served");
  if (chunked) {
    EXPECT_EQ(s.sizes, std::vector<std::size_t>(40, 500)) << "chunks not of libpq's size";
  }
}

TEST(async_stream, a_chunk_size_of_zero_is_refused_before_anything_is_sent) {
  pgpipe::async_client client(params_for(app_conninfo("async_stream_chunk_zero"), 1));
  auto l = acquire(client);
  pgpipe::query_options opts;
  opts.stream_chunk_rows = 0;
  auto s = l.stream(opts, "select 1");
  auto [ec, r] = s.async_next(use_future_ec).get();
  EXPECT_EQ(ec, pgpipe::make_error_code(pgpipe::errc::invalid_argument));
  EXPECT_NE(r.diag().client_message.find("stream_chunk_rows"), std::string::npos) << r.diag().client_message;
  auto [ec2, r2] = l.async_query("select 'served'", use_future_ec).get();
  ASSERT_FALSE(ec2) << r2.diag().to_string();
  EXPECT_EQ(r2.value<std::string>(), "served");
}
