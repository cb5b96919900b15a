// async_client against a real PostgreSQL: pipelined queries, FIFO matching,
// per-request error isolation, prepared vs unnamed statements, parameters and
// results through the server, large pipelined writes, and each completion
// style (callback, coroutine, future, deferred).
#include <pgpipe/pgpipe.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

using namespace pgpipe::test;  // the shared kit (tests/support)

// Named statements on (the default) or off (PgBouncer in transaction mode).
pgpipe::pool_params query_params(std::size_t max_size, bool prepared = true) {
  pgpipe::pool_params p = pgpipe::test::params_for(pgpipe::test::shared_cluster().conninfo(), max_size);
  p.prepared_statements = prepared;
  return p;
}

std::tuple<std::error_code, pgpipe::result> run_sync(pgpipe::async_client& c, std::string_view sql) {
  auto f = c.async_query(sql, pgpipe::test::use_future_ec);
  return f.get();
}

}  // namespace

TEST(async_query, returns_rows_and_values_callback_style) {
  pgpipe::async_client client(query_params(2));
  std::promise<std::pair<std::error_code, pgpipe::result>> p;
  client.async_query("select $1::int8 as n, $2::text as s, null::int as z", std::int64_t{42}, "hello",
                     [&](std::error_code ec, pgpipe::result r) { p.set_value({ec, std::move(r)}); });
  auto [ec, r] = p.get_future().get();
  ASSERT_FALSE(ec) << r.diag().to_string();
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r.columns(), 3u);
  EXPECT_EQ(r.column_name(0), "n");
  EXPECT_EQ(r[0].get<std::int64_t>("n"), 42);
  EXPECT_EQ(r[0].get<std::string>(1), "hello");
  EXPECT_EQ(r[0].get<std::optional<int>>(2), std::nullopt);
  EXPECT_THROW((void)r[0].get<int>(2), pgpipe::error);
}

// A named handler passed again from inside itself (the way a caller chains
// reads, as with async_row_stream::async_next) is the caller's: an operation copies
// an lvalue token and never moves from it.
TEST(async_query, a_named_handler_passed_again_from_inside_itself_runs_every_time) {
  pgpipe::async_client client(query_params(1));
  std::promise<std::error_code> finished;
  int answers = 0;
  std::function<void(std::error_code, pgpipe::result)> on_answer = [&](std::error_code ec, pgpipe::result r) {
    if (ec) {
      finished.set_value(ec);
      return;
    }
    if (++answers == 5) {
      finished.set_value({});
      return;
    }
    EXPECT_EQ(r.value<int>(), answers);
    client.async_query("select $1::int4", answers + 1, on_answer);
  };
  client.async_query("select $1::int4", 1, on_answer);
  auto done = finished.get_future();
  ASSERT_EQ(done.wait_for(30s), std::future_status::ready) << "a chained query never completed";
  EXPECT_FALSE(done.get());
  EXPECT_EQ(answers, 5);
  EXPECT_TRUE(on_answer) << "the caller's handler was moved from";
}

TEST(async_query, ten_thousand_concurrent_over_two_connections_each_get_their_own_value) {
  auto params = query_params(2);
  params.conninfo = pgpipe::test::with_options(params.conninfo, "application_name=async_10k");
  params.max_queued = 20000;
  pgpipe::async_client client(params);
  constexpr std::size_t n = 10000;
  std::vector<std::int64_t> got(n, -1);
  std::vector<int> calls(n, 0);
  std::atomic<std::size_t> errors{0};
  latch_counter done(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t v = static_cast<std::int64_t>(i) * 7919 + 13;
    client.async_query("select $1::int8", v, [&, i](std::error_code ec, pgpipe::result r) {
      ++calls[i];  // each index is written by its own handler only
      if (ec) {
        ++errors;
      } else {
        got[i] = r.value<std::int64_t>();
      }
      done.arrive();
    });
  }
  ASSERT_TRUE(done.wait());
  EXPECT_EQ(errors.load(), 0u);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(calls[i], 1) << i;
    ASSERT_EQ(got[i], static_cast<std::int64_t>(i) * 7919 + 13) << i;
  }
  auto s = client.stats();
  EXPECT_LE(s.connects, 2u);  // pipelining, not more connections, carried the load
  EXPECT_GE(s.completed, n);
  // The server agrees: this client never had more than two backends.
  EXPECT_LE(pgpipe::test::shared_cluster().backend_pids("async_10k").size(), 2u);
}

TEST(async_query, every_tenth_of_a_thousand_fails_with_22012_and_only_those) {
  for (bool prepared : {true, false}) {
    pgpipe::async_client client(query_params(2, prepared));
    constexpr int n = 1000;
    std::vector<std::error_code> ecs(n);
    std::vector<std::int64_t> vals(n, -1);
    latch_counter done(n);
    for (int i = 0; i < n; ++i) {
      // Divides by zero exactly when i % 10 == 0.
      client.async_query("select $1::int8 / ($1::int8 % 10)", std::int64_t{i},
                         [&, i](std::error_code ec, pgpipe::result r) {
                           ecs[i] = ec;
                           if (!ec) vals[i] = r.value<std::int64_t>();
                           done.arrive();
                         });
    }
    ASSERT_TRUE(done.wait());
    for (int i = 0; i < n; ++i) {
      if (i % 10 == 0) {
        EXPECT_EQ(pgpipe::sqlstate_of(ecs[i]), "22012") << i << " prepared=" << prepared;
        EXPECT_EQ(ecs[i], pgpipe::errc_condition::server_error);
      } else {
        ASSERT_FALSE(ecs[i]) << i << ": " << ecs[i].message() << " prepared=" << prepared;
        EXPECT_EQ(vals[i], i / (i % 10));
      }
    }
  }
}

TEST(async_query, server_error_carries_diagnostics) {
  pgpipe::async_client client(query_params(1));
  auto [ec, r] = run_sync(client, "select * from no_such_table_xyz");
  EXPECT_EQ(pgpipe::sqlstate_of(ec), "42P01");
  EXPECT_EQ(r.diag().sqlstate, "42P01");
  EXPECT_EQ(r.diag().severity, "ERROR");
  EXPECT_NE(r.diag().message.find("no_such_table_xyz"), std::string::npos);
  // The connection is still usable afterwards (only that request's Sync
  // segment was aborted).
  auto [ec2, r2] = run_sync(client, "select 1");
  ASSERT_FALSE(ec2);
  EXPECT_EQ(r2.value<int>(), 1);
}

TEST(async_query, prepared_and_unnamed_modes_give_the_same_answers) {
  for (bool prepared : {true, false}) {
    pgpipe::async_client client(query_params(1, prepared));
    for (int round = 0; round < 3; ++round) {
      auto f = client.async_query("select $1::int + $2::int", 20, round, pgpipe::test::use_future_ec);
      auto [ec, r] = f.get();
      ASSERT_FALSE(ec) << r.diag().to_string();
      EXPECT_EQ(r.value<int>(), 20 + round);
    }
    // Named statements exist on the server only in prepared mode.
    auto [ec, r] = run_sync(client, "select count(*) from pg_prepared_statements where name like 'pgpipe_%'");
    ASSERT_FALSE(ec);
    if (prepared) {
      EXPECT_GE(r.value<int>(), 1);
    } else {
      EXPECT_EQ(r.value<int>(), 0);
    }
  }
}

TEST(async_query, failed_parse_is_reported_and_not_cached) {
  pgpipe::async_client client(query_params(1, true));
  for (int i = 0; i < 2; ++i) {
    auto [ec, r] = run_sync(client, "selec 1");
    EXPECT_EQ(pgpipe::sqlstate_of(ec), "42601") << i;  // the same syntax error each time, not 26000
  }
}

TEST(async_query, parameters_round_trip_through_the_server) {
  pgpipe::async_client client(query_params(1));
  auto f = client.async_query(
      "select $1::int2, $2::int4, $3::int8, $4::float8, $5::bool, $6::text, $7::text, $8::int4, $9::float8, $10::float4",
      std::int16_t{-32768}, std::int32_t{2147483647}, std::numeric_limits<std::int64_t>::min(), 0.1, true,
      std::string("ünïcødé 'quoted'"), std::string_view("view"), std::optional<int>{}, 1e308, 3.25f,
      pgpipe::test::use_future_ec);
  auto [ec, r] = f.get();
  ASSERT_FALSE(ec) << r.diag().to_string();
  auto row = r[0];
  EXPECT_EQ(row.get<std::int16_t>(0), -32768);
  EXPECT_EQ(row.get<std::int32_t>(1), 2147483647);
  EXPECT_EQ(row.get<std::int64_t>(2), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(row.get<double>(3), 0.1);  // shortest round-trip text keeps the exact double
  EXPECT_TRUE(row.get<bool>(4));
  EXPECT_EQ(row.get<std::string>(5), "ünïcødé 'quoted'");
  EXPECT_EQ(row.get<std::string_view>(6), "view");
  EXPECT_TRUE(row.at(7).is_null());
  EXPECT_EQ(row.get<double>(8), 1e308);
  EXPECT_EQ(row.get<float>(9), 3.25f);
  // Range-checked conversions.
  EXPECT_THROW((void)row.get<std::int16_t>(1), pgpipe::error);  // 2147483647 does not fit
  EXPECT_THROW((void)row.get<int>(5), pgpipe::error);
}

TEST(async_query, nul_byte_in_a_text_parameter_is_rejected_not_truncated) {
  pgpipe::async_client client(query_params(1));
  auto f = client.async_query("select $1::text, $2::text", "ok", std::string("a\0b", 3), pgpipe::test::use_future_ec);
  auto [ec, r] = f.get();
  EXPECT_EQ(ec, pgpipe::errc::invalid_argument);
  EXPECT_NE(r.diag().client_message.find("$2"), std::string::npos) << r.diag().client_message;
}

TEST(async_query, commands_report_affected_rows) {
  pgpipe::async_client client(query_params(1));
  auto& pg = pgpipe::test::shared_cluster();
  pg.exec("drop table if exists async_affected; create table async_affected(n int)");
  auto f = client.async_query("insert into async_affected select generate_series(1, $1::int)", 17, pgpipe::test::use_future_ec);
  auto [ec, r] = f.get();
  ASSERT_FALSE(ec) << r.diag().to_string();
  EXPECT_EQ(r.affected_rows(), 17u);
  EXPECT_EQ(r.command_tag(), "INSERT 0 17");
  auto [ec2, r2] = run_sync(client, "delete from async_affected where n <= 5");
  ASSERT_FALSE(ec2);
  EXPECT_EQ(r2.affected_rows(), 5u);
}

TEST(async_query, thousand_pipelined_inserts_of_64_kib_do_not_deadlock) {
  auto& pg = pgpipe::test::shared_cluster();
  pg.exec("drop table if exists async_big; create table async_big(i int, payload text)");
  auto params = query_params(2);
  pgpipe::async_client client(params);
  constexpr int n = 1000;
  std::string payload(64 * 1024, 'x');
  std::atomic<int> failures{0};
  latch_counter done(n);
  for (int i = 0; i < n; ++i) {
    payload[0] = static_cast<char>('a' + i % 26);
    client.async_query("insert into async_big values ($1::int, $2::text)", i, payload,
                       [&](std::error_code ec, pgpipe::result) {
                         if (ec) ++failures;
                         done.arrive();
                       });
  }
  ASSERT_TRUE(done.wait(120s));
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(pg.query_value("select count(*) from async_big where length(payload) = 65536"), "1000");
}

TEST(async_query, coroutine_style_with_use_awaitable) {
  // Declared first so that it outlives the client: a client loop may still be
  // returning from posting the last completion when io.run() returns.
  asio::io_context io;
  pgpipe::async_client client(query_params(2));
  std::int64_t sum = 0;
  std::error_code last;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        for (int i = 1; i <= 50; ++i) {
          auto [ec, r] = co_await client.async_query("select $1::int8 * 2", std::int64_t{i}, asio::as_tuple(asio::use_awaitable));
          if (ec) {
            last = ec;
            co_return;
          }
          sum += r.value<std::int64_t>();
        }
      },
      asio::detached);
  io.run();  // returns when the coroutine is done: pending queries keep it alive
  EXPECT_FALSE(last) << last.message();
  EXPECT_EQ(sum, 2 * (50 * 51 / 2));
}

// co_await of an operation started with asio::deferred: the error-code form
// that costs a coroutine no frame of its own (docs/benchmarks.md).
TEST(async_query, awaited_deferred_gives_the_error_code_and_the_value) {
  asio::io_context io;
  pgpipe::async_client client(query_params(2));
  std::int64_t sum = 0;
  std::error_code first_failure;
  std::error_code failed;
  std::string failed_sqlstate;
  std::error_code after;
  std::int64_t after_value = 0;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        for (int i = 1; i <= 50; ++i) {
          auto [ec, r] = co_await client.async_query("select $1::int8 * 2", std::int64_t{i}, asio::deferred);
          if (ec) {
            first_failure = ec;
            co_return;
          }
          sum += r.value<std::int64_t>();
        }
        auto [ec, r] = co_await client.async_query("select 1/0", asio::deferred);
        failed = ec;
        failed_sqlstate = r.diag().sqlstate;
        // The coroutine goes on after a failed operation: nothing was thrown.
        auto [aec, ar] = co_await client.async_query("select 7::int8", asio::deferred);
        after = aec;
        if (!aec) after_value = ar.value<std::int64_t>();
      },
      asio::detached);
  io.run();
  EXPECT_FALSE(first_failure) << first_failure.message();
  EXPECT_EQ(sum, 2 * (50 * 51 / 2));
  EXPECT_EQ(failed, pgpipe::make_sqlstate("22012")) << failed.message();
  EXPECT_EQ(failed_sqlstate, "22012");
  EXPECT_FALSE(after) << after.message();
  EXPECT_EQ(after_value, 7);
}

// The coroutine's cancellation slot reaches the operation: a queued query
// awaited with asio::deferred is removed when the coroutine is cancelled.
TEST(async_query, awaited_deferred_is_cancelled_through_the_coroutines_slot) {
  asio::io_context io;
  pgpipe::async_client client(query_params(1));
  // The lease holds the only connection: the query waits in the queue.
  auto [lec, lease] = client.async_acquire(pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(lec) << lec.message();
  asio::cancellation_signal sig;
  std::optional<std::error_code> got;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto [ec, r] = co_await client.async_query("select 1", asio::deferred);
        got = ec;
      },
      asio::bind_cancellation_slot(sig.slot(), asio::detached));
  // Runs the coroutine up to its co_await, which starts the query.
  io.poll();
  ASSERT_EQ(client.stats().queued, 1u);
  EXPECT_FALSE(got);
  // Emitted on the coroutine's executor, where its handler runs.
  asio::post(io, [&] { sig.emit(asio::cancellation_type::terminal); });
  io.run();
  ASSERT_TRUE(got) << "the coroutine did not resume";
  EXPECT_EQ(*got, pgpipe::errc::cancelled) << got->message();
  EXPECT_EQ(client.stats().queued, 0u);
  EXPECT_EQ(client.stats().errors.cancelled, 1u);
}

TEST(async_query, deferred_and_as_tuple_tokens_work) {
  pgpipe::async_client client(query_params(1));
  auto op = client.async_query("select 'deferred'::text", asio::deferred);
  std::promise<std::string> p;
  std::move(op)([&](std::error_code ec, pgpipe::result r) { p.set_value(ec ? ec.message() : r.value<std::string>()); });
  EXPECT_EQ(p.get_future().get(), "deferred");
  std::promise<int> p2;
  client.async_query("select 5", asio::as_tuple([&](std::tuple<std::error_code, pgpipe::result> t) {
                       auto& [ec, r] = t;
                       p2.set_value(ec ? -1 : r.value<int>());
                     }));
  EXPECT_EQ(p2.get_future().get(), 5);
}
