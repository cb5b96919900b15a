// What the async transaction helpers report when a cancel, a deadline or
// a failing BEGIN intervenes, checked against what the server did: a
// cancelled statement no longer runs there, a helper's report matches the
// table's contents, nothing runs outside the transaction. The outcomes of
// each helper are listed in docs/reliability.md ("What a transaction
// helper's error means"), each with the test here that pins it.
#include <pgpipe/async_client.hpp>
#include <pgpipe/async_transaction_lease.hpp>
#include <pgpipe/transaction.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"
#include "support/wait.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pgpipe::errc;
using pgpipe::test::app_conninfo;
using pgpipe::test::params_for;
using pgpipe::test::shared_cluster;
using pgpipe::test::wait_until;

namespace {

// A statement that runs for far longer than any test waits: if it is still
// active on the server after its cancel, the cancel did not reach it.
constexpr const char* long_sleep = "select pg_sleep(20)";

pgpipe::async_client one_connection_client(const std::string& app) {
  auto p = params_for(app_conninfo(app), 1);
  return pgpipe::async_client(p, {.loops = 1});
}

int sleeping(const std::string& app) {
  return pgpipe::test::server_connections_where(
      shared_cluster(), "application_name = '" + app + "' and state = 'active' and query = '" + long_sleep + "'");
}

// Waits until the long sleep runs on the server, then emits a terminal
// cancellation of it on the client's loop (Asio signals are not thread-safe).
void cancel_once_running(pgpipe::async_client& client, asio::cancellation_signal& sig, const std::string& app) {
  ASSERT_TRUE(wait_until([&] { return sleeping(app) == 1; })) << "the statement never ran on the server";
  std::promise<void> emitted;
  asio::post(client.get_executor(), [&] {
    sig.emit(asio::cancellation_type::terminal);
    emitted.set_value();
  });
  emitted.get_future().wait();
}

}  // namespace

// BEGIN and the work's first statement share one Sync segment, so both are
// written when the caller cancels the statement: the cancel must still
// reach the server (the statement stops, its locks go), and the helper
// reports the cancel as the work's error once the server confirmed it.
TEST(async_transaction_outcome, a_cancelled_first_statement_stops_on_the_server) {
  const std::string app = "tx_outcome_cancel_first";
  auto client = one_connection_client(app);
  asio::cancellation_signal sig;
  std::promise<std::error_code> statement_ec;
  auto done = pgpipe::async_transaction(
      client, {},
      [&](pgpipe::async_lease& l) -> asio::awaitable<void> {
        auto [ec, r] = co_await l.async_query(long_sleep,
                                              asio::bind_cancellation_slot(sig.slot(), asio::as_tuple(asio::use_awaitable)));
        statement_ec.set_value(ec);
        pgpipe::throw_if_error(ec, r);
      },
      pgpipe::test::use_future_ec);
  cancel_once_running(client, sig, app);
  auto stmt = statement_ec.get_future();
  ASSERT_EQ(stmt.wait_for(10s), std::future_status::ready) << "the cancelled statement never reported";
  EXPECT_EQ(stmt.get(), errc::cancelled);
  EXPECT_TRUE(wait_until([&] { return sleeping(app) == 0; }, 3s))
      << "the cancelled statement still runs on the server";
  ASSERT_EQ(done.wait_for(10s), std::future_status::ready) << "the helper waited for the statement to end";
  auto [ec, report] = done.get();
  EXPECT_EQ(ec, errc::cancelled) << ec.message() << " " << report.diag.client_message;
  // The connection serves the next caller.
  auto [qec, qr] = client.async_query("select 1", pgpipe::test::use_future_ec).get();
  EXPECT_FALSE(qec) << qec.message();
}

// The same with async_begin: BEGIN goes out with the first statement.
TEST(async_transaction_outcome, a_cancelled_first_statement_after_async_begin_stops_on_the_server) {
  const std::string app = "tx_outcome_cancel_begin";
  auto client = one_connection_client(app);
  asio::cancellation_signal sig;
  std::promise<std::error_code> statement_ec;
  auto tx_fut = asio::co_spawn(
      client.get_executor(),
      [&]() -> asio::awaitable<pgpipe::async_transaction_lease> {
        auto tx = co_await client.async_begin({}, asio::use_awaitable);
        // Started before this coroutine yields: written with BEGIN.
        tx.async_query(long_sleep, asio::bind_cancellation_slot(sig.slot(), [&](std::error_code ec, pgpipe::result) {
                         statement_ec.set_value(ec);
                       }));
        co_return tx;
      },
      asio::use_future);
  auto tx = tx_fut.get();
  cancel_once_running(client, sig, app);
  auto stmt = statement_ec.get_future();
  ASSERT_EQ(stmt.wait_for(10s), std::future_status::ready) << "the cancelled statement never reported";
  EXPECT_EQ(stmt.get(), errc::cancelled);
  EXPECT_TRUE(wait_until([&] { return sleeping(app) == 0; }, 3s))
      << "the cancelled statement still runs on the server";
  auto rolled = tx.async_rollback(pgpipe::test::use_future_ec);
  ASSERT_EQ(rolled.wait_for(10s), std::future_status::ready) << "ROLLBACK waited for the statement to end";
  auto [rec, rr] = rolled.get();
  EXPECT_FALSE(rec) << rec.message();
}

// A lease's queries reach its connection in the order they were started,
// whichever thread started them. Asio runs a post made on a loop thread only
// once the running handler returns, while one made on another thread may
// run first: query A, started in a handler on the connection's loop, and
// query B, started by another thread before that handler returned, must
// still run A first.
TEST(async_transaction_outcome, a_lease_runs_its_queries_in_the_order_they_were_started) {
  auto client = one_connection_client("tx_outcome_lease_order");
  auto [aec, l] = client.async_acquire(pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(aec) << aec.message();
  std::mutex m;
  std::vector<std::string> order;
  auto note = [&](std::string what) {
    return [&, what](std::error_code ec, pgpipe::result) {
      std::lock_guard lk(m);
      order.push_back(ec ? what + ": " + ec.message() : what);
    };
  };
  std::promise<void> both_started;
  asio::post(l.get_executor(), [&] {
    l.async_query("select 'a'", note("a"));
    std::thread other([&] { l.async_query("select 'b'", note("b")); });
    other.join();
    both_started.set_value();
  });
  both_started.get_future().wait();
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lk(m);
    return order.size() == 2;
  }));
  std::lock_guard lk(m);
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b"}));
}

// async_begin completes on the connection's loop with BEGIN on its way; a
// statement the caller then starts on another thread is the transaction's:
// it runs after BEGIN, inside the transaction, and a rollback undoes it.
TEST(async_transaction_outcome, a_statement_started_after_async_begin_runs_inside_its_transaction) {
  const std::string t = "tx_outcome_after_begin";
  shared_cluster().exec("drop table if exists " + t + "; create table " + t + " (a int4 not null)");
  auto client = one_connection_client("tx_outcome_after_begin");
  for (int i = 0; i < 20; ++i) {
    auto [bec, tx] = client.async_begin({}, pgpipe::test::use_future_ec).get();
    ASSERT_FALSE(bec) << bec.message();
    auto inserted = tx.async_query("insert into " + t + " (a) values ($1)", i, pgpipe::test::use_future_ec);
    ASSERT_EQ(inserted.wait_for(10s), std::future_status::ready) << "run " << i << ": the statement never ran";
    auto [ec, r] = inserted.get();
    ASSERT_FALSE(ec) << "run " << i << ": " << ec.message() << " " << r.diag().to_string();
    auto [rec, rr] = tx.async_rollback(pgpipe::test::use_future_ec).get();
    ASSERT_FALSE(rec) << rec.message();
    ASSERT_EQ(shared_cluster().query_value("select count(*) from " + t), "0")
        << "run " << i << ": the statement ran outside the transaction and committed";
  }
}

// BEGIN shares its Sync with the work's first statement, so its deadline is
// that statement's: a first statement with a longer query_options::timeout
// than query_timeout runs to its end, and the report is the work's outcome.
TEST(async_transaction_outcome, begin_takes_the_deadline_of_the_first_statement_it_waits_for) {
  auto p = params_for(app_conninfo("tx_outcome_begin_deadline"), 1);
  p.query_timeout = 500ms;
  pgpipe::async_client client(p, {.loops = 1});
  const pgpipe::query_options longer{std::chrono::milliseconds(10'000)};
  auto [ec, report] = pgpipe::async_transaction(
                          client, {},
                          [&](pgpipe::async_lease& l) -> asio::awaitable<void> {
                            auto [sec, r] = co_await l.async_query(longer, "select pg_sleep(1.5)",
                                                                   asio::as_tuple(asio::use_awaitable));
                            pgpipe::throw_if_error(sec, r);
                          },
                          pgpipe::test::use_future_ec)
                          .get();
  EXPECT_FALSE(ec) << ec.message() << " " << report.diag.client_message;
  auto tx = client.async_begin({}, pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(std::get<0>(tx)) << std::get<0>(tx).message();
  auto& lease = std::get<1>(tx);
  auto [qec, qr] = lease.async_query(longer, "select pg_sleep(1.5)", pgpipe::test::use_future_ec).get();
  EXPECT_FALSE(qec) << qec.message();
  auto [cec, cr] = lease.async_commit(pgpipe::test::use_future_ec).get();
  EXPECT_FALSE(cec) << cec.message() << " " << cr.diag().to_string();
}
