// async_client::async_begin and async_transaction_lease against a real server, as
// a coroutine uses them (use_awaitable: failures throw): commit, rollback
// when the object goes away uncommitted, a failed statement's COMMIT is
// 25P02 and commits nothing, options reach the server, misuse is refused.
#include <pgpipe/async_client.hpp>
#include <pgpipe/async_transaction_lease.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"
#include "support/wait.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <system_error>
#include <utility>
#include <string>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pgpipe::test::app_conninfo;
using pgpipe::test::params_for;
using pgpipe::test::shared_cluster;

namespace {

TEST(async_transaction_lease, statements_commit_together) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists txl_commit; create table txl_commit(v int)");
  pgpipe::async_client client(params_for(app_conninfo("txl_commit"), 1), {.loops = 1});
  const std::string during = pgpipe::test::run_on(client, [&]() -> asio::awaitable<std::string> {
    auto tx = co_await client.async_begin({}, asio::use_awaitable);
    EXPECT_TRUE(tx.valid());
    auto r1 = co_await tx.async_query("insert into txl_commit values ($1)", 1, asio::use_awaitable);
    auto r2 = co_await tx.async_query("insert into txl_commit values ($1)", 2, asio::use_awaitable);
    EXPECT_EQ(r1.affected_rows() + r2.affected_rows(), 2u);
    // Not visible outside before COMMIT: the statements are in one transaction.
    std::string seen = pg.query_value("select count(*) from txl_commit");
    auto c = co_await tx.async_commit(asio::use_awaitable);
    EXPECT_EQ(c.command_tag(), "COMMIT");
    EXPECT_FALSE(tx.valid());
    co_return seen;
  }());
  EXPECT_EQ(during, "0");
  EXPECT_EQ(pg.query_value("select count(*) from txl_commit"), "2");
}

// async_commit slower than query_timeout (a deferred trigger that waits at
// COMMIT, as a synchronous standby that is down holds it): the error must
// say the transaction may have committed, which it did.
TEST(async_transaction_lease, a_commit_slower_than_query_timeout_is_reported_as_maybe_committed) {
  auto& pg = shared_cluster();
  pg.exec(
      "drop table if exists txl_slow_commit; create table txl_slow_commit(v int);"
      "create or replace function txl_slow_commit_wait() returns trigger language plpgsql as "
      "$$ begin perform pg_sleep(1.5); return null; end $$;"
      "create constraint trigger txl_slow_commit_at_commit after insert on txl_slow_commit "
      "deferrable initially deferred for each row execute function txl_slow_commit_wait()");
  auto p = params_for(app_conninfo("txl_slow_commit"), 1);
  p.query_timeout = 300ms;
  pgpipe::async_client client(p, {.loops = 1});
  const auto [ec, text] = pgpipe::test::run_on(client, [&]() -> asio::awaitable<std::pair<std::error_code, std::string>> {
    auto tx = co_await client.async_begin({}, asio::use_awaitable);
    co_await tx.async_query("insert into txl_slow_commit values (1)", asio::use_awaitable);
    auto [cec, c] = co_await tx.async_commit(asio::as_tuple(asio::use_awaitable));
    co_return std::pair{cec, c.diag().to_string()};
  }());
  EXPECT_EQ(ec, pgpipe::errc::query_timeout) << ec.message() << " " << text;
  EXPECT_NE(text.find("may have committed"), std::string::npos) << text;
  EXPECT_TRUE(pgpipe::test::wait_until(
      [&] { return pg.query_value("select count(*) from txl_slow_commit") == "1"; }, 10s, 50ms));
}

TEST(async_transaction_lease, destroyed_uncommitted_it_rolls_back_and_the_connection_is_clean) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists txl_drop; create table txl_drop(v int)");
  // One connection: the next caller gets the very connection the transaction left.
  pgpipe::async_client client(params_for(app_conninfo("txl_drop"), 1), {.loops = 1});
  const std::string status = pgpipe::test::run_on(client, [&]() -> asio::awaitable<std::string> {
    {
      auto tx = co_await client.async_begin({}, asio::use_awaitable);
      co_await tx.async_query("insert into txl_drop values (1)", asio::use_awaitable);
    }  // no commit: rolled back
    auto l = co_await client.async_acquire(asio::use_awaitable);
    // Had the insert's transaction stayed open on this connection, the
    // count would see its own row.
    auto r = co_await l.async_query("select count(*)::text from txl_drop", asio::use_awaitable);
    co_return r.value<std::string>();
  }());
  EXPECT_EQ(status, "0");
  EXPECT_EQ(pg.query_value("select count(*) from txl_drop"), "0");
}

TEST(async_transaction_lease, a_failed_statement_makes_commit_fail_with_25P02_and_nothing_stays) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists txl_fail; create table txl_fail(v int primary key)");
  pgpipe::async_client client(params_for(app_conninfo("txl_fail"), 1), {.loops = 1});
  struct seen {
    std::string insert_state, commit_state, commit_text;
  };
  const seen s = pgpipe::test::run_on(client, [&]() -> asio::awaitable<seen> {
    seen out;
    auto tx = co_await client.async_begin({}, asio::use_awaitable);
    co_await tx.async_query("insert into txl_fail values (1)", asio::use_awaitable);
    try {
      co_await tx.async_query("insert into txl_fail values (1)", asio::use_awaitable);
    } catch (const pgpipe::error& e) {
      out.insert_state = e.diag().sqlstate;  // swallowed, as a careless work would
    }
    try {
      co_await tx.async_commit(asio::use_awaitable);
    } catch (const pgpipe::error& e) {
      out.commit_state = e.diag().sqlstate;
      out.commit_text = e.what();
    }
    co_return out;
  }());
  EXPECT_EQ(s.insert_state, "23505");
  EXPECT_EQ(s.commit_state, "25P02") << s.commit_text;
  EXPECT_EQ(pg.query_value("select count(*) from txl_fail"), "0");
}

TEST(async_transaction_lease, options_reach_the_server_and_rollback_ends_it) {
  pgpipe::async_client client(params_for(app_conninfo("txl_opts"), 1), {.loops = 1});
  pgpipe::transaction_options opts;
  opts.isolation = pgpipe::isolation_level::serializable;
  opts.read_only = true;
  const std::string modes = pgpipe::test::run_on(client, [&]() -> asio::awaitable<std::string> {
    auto tx = co_await client.async_begin(opts, asio::use_awaitable);
    auto r = co_await tx.async_query_one(
        "select current_setting('transaction_isolation') || ',' || current_setting('transaction_read_only')",
        asio::use_awaitable);
    auto rb = co_await tx.async_rollback(asio::use_awaitable);
    EXPECT_EQ(rb.command_tag(), "ROLLBACK");
    co_return r.one().get<std::string>(0);
  }());
  EXPECT_EQ(modes, "serializable,on");
}

TEST(async_transaction_lease, ending_it_twice_or_asking_for_retries_is_refused) {
  pgpipe::async_client client(params_for(app_conninfo("txl_misuse"), 1), {.loops = 1});
  struct seen {
    std::error_code second_commit, query_after, retry;
    std::string retry_text;
  };
  const seen s = pgpipe::test::run_on(client, [&]() -> asio::awaitable<seen> {
    seen out;
    auto tx = co_await client.async_begin({}, asio::use_awaitable);
    co_await tx.async_commit(asio::use_awaitable);
    auto [ec, r] = co_await tx.async_commit(asio::as_tuple(asio::use_awaitable));
    out.second_commit = ec;
    auto [qec, qr] = co_await tx.async_query("select 1", asio::as_tuple(asio::use_awaitable));
    out.query_after = qec;
    pgpipe::transaction_options retrying;
    retrying.retry.max_attempts = 3;
    auto [rec, rtx] = co_await client.async_begin(retrying, asio::as_tuple(asio::use_awaitable));
    out.retry = rec;
    out.retry_text = rtx.diag().to_string();
    co_return out;
  }());
  EXPECT_EQ(s.second_commit, pgpipe::make_error_code(pgpipe::errc::closed));
  EXPECT_EQ(s.query_after, pgpipe::make_error_code(pgpipe::errc::closed));
  EXPECT_EQ(s.retry, pgpipe::make_error_code(pgpipe::errc::invalid_argument));
  EXPECT_NE(s.retry_text.find("async_transaction"), std::string::npos) << s.retry_text;
}

TEST(async_transaction_lease, a_failed_acquire_carries_the_connect_error) {
  auto& pg = shared_cluster();
  auto p = params_for(pg.conninfo_without_password() + " password=wrong-password-xyz", 1);
  p.acquire_timeout = std::chrono::seconds(2);
  pgpipe::async_client client(p, {.loops = 1});
  auto [ec, tx] = client.async_begin({}, pgpipe::test::use_future_ec).get();
  EXPECT_TRUE(ec);
  EXPECT_FALSE(tx.valid());
  EXPECT_EQ(tx.diag().sqlstate, "28P01") << tx.diag().to_string();
  EXPECT_EQ(tx.diag().to_string().find("wrong-password-xyz"), std::string::npos);
}

}  // namespace
