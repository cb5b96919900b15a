// async_transaction_batch against a real server: BEGIN, the statements and
// COMMIT written at once (seen in the server backend's socket while it is
// stopped), a failing middle statement (its index, nothing kept, the lease
// usable after), a serialization failure retried, bad input refused before
// anything is sent; and async_transaction with BEGIN pipelined.
#include <pgpipe/async_client.hpp>
#include <pgpipe/transaction.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"
#include "support/wait.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pgpipe::test::app_conninfo;
using pgpipe::test::params_for;
using pgpipe::test::shared_cluster;

namespace {

// Bytes waiting unread in the server's socket of the TCP connection from
// 127.0.0.1:client_port to the server's port (/proc/net/tcp), or -1.
long server_rx_queue(int server_port, int client_port) {
  std::ifstream tcp("/proc/net/tcp");
  std::string line;
  std::getline(tcp, line);  // header
  while (std::getline(tcp, line)) {
    std::istringstream f(line);
    std::string slot, local, remote, state, queues;
    if (!(f >> slot >> local >> remote >> state >> queues)) continue;
    auto port_of = [](const std::string& addr) { return std::stoi(addr.substr(addr.find(':') + 1), nullptr, 16); };
    if (port_of(local) != server_port || port_of(remote) != client_port) continue;
    return std::stol(queues.substr(queues.find(':') + 1), nullptr, 16);
  }
  return -1;
}

// Resumes a stopped backend whatever the test's outcome.
struct stopped_backend {
  explicit stopped_backend(pid_t p) : pid(p) { ::kill(pid, SIGSTOP); }
  ~stopped_backend() { ::kill(pid, SIGCONT); }
  pid_t pid;
};

std::vector<pgpipe::statement> three_inserts(const std::string& table, int a, int b, int c) {
  std::vector<pgpipe::statement> s;
  s.emplace_back("insert into " + table + " values ($1)", a);
  s.emplace_back("insert into " + table + " values ($1)", b);
  s.emplace_back("insert into " + table + " values ($1) returning v * 10", c);
  return s;
}

}  // namespace

TEST(async_transaction_batch, the_whole_transaction_is_written_before_the_server_answers_anything) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists txb_one; create table txb_one(v int primary key)");
  pgpipe::async_client client(params_for(app_conninfo("async_txb_one"), 1), {.loops = 1});
  auto [aec, l] = client.async_acquire(pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(aec) << aec.message();
  auto [iec, ids] = l.async_query("select pg_backend_pid(), inet_client_port()", pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(iec) << ids.diag().to_string();
  const auto pid = static_cast<pid_t>(ids[0].get<int>(0));
  const int client_port = ids[0].get<int>(1);

  auto statements = three_inserts("txb_one", 1, 2, 3);
  // Every SQL text of the transaction, BEGIN and COMMIT included.
  std::size_t sql_bytes = std::string("BEGIN").size() + std::string("COMMIT").size();
  for (const auto& s : statements) sql_bytes += s.sql().size();
  std::future<std::tuple<std::error_code, pgpipe::async_batch_report>> done;
  {
    stopped_backend stop(pid);
    done = pgpipe::async_transaction_batch(l, {}, statements, pgpipe::test::use_future_ec);
    // The backend reads nothing while stopped: whatever it would answer
    // with, the client sent the whole transaction without waiting for it.
    EXPECT_TRUE(pgpipe::test::wait_until(
        [&] { return server_rx_queue(pg.port(), client_port) >= static_cast<long>(sql_bytes); }))
        << "unread bytes at the server: " << server_rx_queue(pg.port(), client_port) << ", expected at least "
        << sql_bytes;
    EXPECT_EQ(done.wait_for(0s), std::future_status::timeout);
  }
  auto [ec, report] = done.get();
  ASSERT_FALSE(ec) << report.diag.to_string();
  EXPECT_EQ(report.attempts, 1u);
  EXPECT_FALSE(report.failed_statement.has_value());
  ASSERT_EQ(report.results.size(), 3u);
  EXPECT_EQ(report.results[0].command_tag(), "INSERT 0 1");
  EXPECT_EQ(report.results[2].value<int>(), 30);
  EXPECT_EQ(pg.query_value("select string_agg(v::text, ',' order by v) from txb_one"), "1,2,3");
  // Committed, and the lease is idle again (no transaction left open).
  auto [sec, st] = l.async_query("select txid_current_if_assigned() is null", pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(sec) << st.diag().to_string();
  EXPECT_TRUE(st.value<bool>());

}

TEST(async_transaction_batch, on_the_client_it_takes_a_lease_and_reads_options) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists txb_client; create table txb_client(v int primary key)");
  pgpipe::async_client client(params_for(app_conninfo("async_txb_client"), 2), {.loops = 1});
  auto [ec, report] =
      pgpipe::async_transaction_batch(client, {}, three_inserts("txb_client", 4, 5, 6), pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(ec) << report.diag.to_string();
  EXPECT_EQ(pg.query_value("select count(*) from txb_client"), "3");
  // BEGIN carries the isolation level and access mode.
  pgpipe::transaction_options ro;
  ro.isolation = pgpipe::isolation_level::serializable;
  ro.read_only = true;
  std::vector<pgpipe::statement> s;
  s.emplace_back("select current_setting('transaction_isolation'), current_setting('transaction_read_only')");
  auto [rec, rreport] = pgpipe::async_transaction_batch(client, ro, s, pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(rec) << rreport.diag.to_string();
  EXPECT_EQ(rreport.results.at(0)[0].get<std::string>(0), "serializable");
  EXPECT_EQ(rreport.results.at(0)[0].get<std::string>(1), "on");
  std::vector<pgpipe::statement> w;
  w.emplace_back("insert into txb_client values (7)");
  auto [wec, wreport] = pgpipe::async_transaction_batch(client, ro, w, pgpipe::test::use_future_ec).get();
  EXPECT_EQ(pgpipe::sqlstate_of(wec), "25006") << wreport.diag.to_string();
  EXPECT_EQ(wreport.failed_statement, std::optional<std::size_t>(0));
  EXPECT_EQ(pg.query_value("select count(*) from txb_client"), "3");
}

TEST(async_transaction_batch, a_failing_middle_statement_is_named_and_nothing_stays) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists txb_fail; create table txb_fail(v int primary key); insert into txb_fail values (2)");
  pgpipe::async_client client(params_for(app_conninfo("async_txb_fail"), 1), {.loops = 1});
  auto [aec, l] = client.async_acquire(pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(aec) << aec.message();
  // Statement 1 violates the key; statement 2 would divide by zero if it ran.
  std::vector<pgpipe::statement> s;
  s.emplace_back("insert into txb_fail values ($1)", 1);
  s.emplace_back("insert into txb_fail values ($1)", 2);
  s.emplace_back("select 1 / 0");
  auto [ec, report] = pgpipe::async_transaction_batch(l, {}, s, pgpipe::test::use_future_ec).get();
  EXPECT_EQ(pgpipe::sqlstate_of(ec), "23505") << ec.message() << " " << report.diag.to_string();
  EXPECT_EQ(report.failed_statement, std::optional<std::size_t>(1));
  EXPECT_EQ(report.diag.sqlstate, "23505");
  EXPECT_NE(report.diag.message.find("duplicate key"), std::string::npos) << report.diag.to_string();
  EXPECT_TRUE(report.results.empty());
  EXPECT_EQ(pg.query_value("select string_agg(v::text, ',') from txb_fail"), "2");  // the first insert undone
  // The same lease serves the next transaction: it was rolled back to idle.
  s.clear();
  s.emplace_back("insert into txb_fail values ($1)", 3);
  auto [ec2, report2] = pgpipe::async_transaction_batch(l, {}, s, pgpipe::test::use_future_ec).get();
  EXPECT_FALSE(ec2) << report2.diag.to_string();
  EXPECT_EQ(pg.query_value("select string_agg(v::text, ',' order by v) from txb_fail"), "2,3");
  // A COMMIT that fails (a deferred constraint) is named as the batch's size.
  pg.exec("drop table if exists txb_deferred; create table txb_deferred(v int unique deferrable initially deferred)");
  s.clear();
  s.emplace_back("insert into txb_deferred values (1)");
  s.emplace_back("insert into txb_deferred values (1)");
  auto [ec3, report3] = pgpipe::async_transaction_batch(l, {}, s, pgpipe::test::use_future_ec).get();
  EXPECT_EQ(pgpipe::sqlstate_of(ec3), "23505") << report3.diag.to_string();
  EXPECT_EQ(report3.failed_statement, std::optional<std::size_t>(2));
  EXPECT_EQ(pg.query_value("select count(*) from txb_deferred"), "0");
  auto [sec, st] = l.async_query("select 1", pgpipe::test::use_future_ec).get();
  EXPECT_FALSE(sec) << st.diag().to_string();
}

TEST(async_transaction_batch, bad_input_is_refused_before_anything_is_sent) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists txb_bad; create table txb_bad(v text)");
  pgpipe::async_client client(params_for(app_conninfo("async_txb_bad"), 1), {.loops = 1});
  std::vector<pgpipe::statement> s;
  s.emplace_back("insert into txb_bad values ($1)", std::string("fine"));
  s.emplace_back("insert into txb_bad values ($1)", std::string("nul\0byte", 8));
  auto [ec, report] = pgpipe::async_transaction_batch(client, {}, s, pgpipe::test::use_future_ec).get();
  EXPECT_EQ(ec, pgpipe::errc::invalid_argument);
  EXPECT_EQ(report.failed_statement, std::optional<std::size_t>(1));
  EXPECT_NE(report.diag.client_message.find("statement 1"), std::string::npos) << report.diag.client_message;
  EXPECT_EQ(pg.query_value("select count(*) from txb_bad"), "0");
  auto [eec, ereport] = pgpipe::async_transaction_batch(client, {}, {}, pgpipe::test::use_future_ec).get();
  EXPECT_EQ(eec, pgpipe::errc::invalid_argument) << ereport.diag.client_message;
  pgpipe::async_lease empty;
  auto [lec, lreport] = pgpipe::async_transaction_batch(empty, {}, three_inserts("txb_bad", 1, 2, 3),
                                                        pgpipe::test::use_future_ec).get();
  EXPECT_EQ(lec, pgpipe::errc::closed) << lreport.diag.client_message;
}

TEST(async_transaction_batch, a_serialization_failure_is_retried) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists txb_ser; create table txb_ser(id int primary key, n int); insert into txb_ser values (1, 0)");
  pgpipe::async_client client(params_for(app_conninfo("async_txb_ser"), 1), {.loops = 1});
  // Another session holds the row: the batch's serializable update waits
  // for it, then fails with 40001 when that session commits.
  pqxx::connection other(pg.conninfo());
  pqxx::work holder(other);
  holder.exec("update txb_ser set n = n + 1 where id = 1");
  pgpipe::transaction_options opts;
  opts.isolation = pgpipe::isolation_level::serializable;
  // Two attempts: the first sends copies of the statements, the last moves
  // them out; both must send the same statement.
  opts.retry = {.max_attempts = 2, .initial_backoff = 1ms, .max_backoff = 10ms};
  std::vector<pgpipe::statement> s;
  s.emplace_back("update txb_ser set n = n + 1 where id = $1 returning n", 1);
  auto done = pgpipe::async_transaction_batch(client, opts, s, pgpipe::test::use_future_ec);
  ASSERT_TRUE(pgpipe::test::wait_until(
      [&] { return pg.query_value("select count(*) from pg_locks where not granted") != "0"; }));
  holder.commit();
  auto [ec, report] = done.get();
  ASSERT_FALSE(ec) << report.diag.to_string();
  EXPECT_EQ(report.attempts, 2u);
  EXPECT_EQ(report.results.at(0).value<int>(), 2);
  EXPECT_EQ(pg.query_value("select n from txb_ser"), "2");
  // Without retries the 40001 is the caller's.
  pqxx::work holder2(other);
  holder2.exec("update txb_ser set n = n + 1 where id = 1");
  opts.retry.max_attempts = 1;
  auto once = pgpipe::async_transaction_batch(client, opts, s, pgpipe::test::use_future_ec);
  ASSERT_TRUE(pgpipe::test::wait_until(
      [&] { return pg.query_value("select count(*) from pg_locks where not granted") != "0"; }));
  holder2.commit();
  auto [ec1, report1] = once.get();
  EXPECT_EQ(pgpipe::sqlstate_of(ec1), "40001") << report1.diag.to_string();
  EXPECT_EQ(report1.failed_statement, std::optional<std::size_t>(0));
  EXPECT_EQ(pg.query_value("select n from txb_ser"), "3");
}

// The report of a batch whose client deadline passed once its chain was
// written says what the server did: a statement stopped by the cancel sent
// at the deadline is named, and nothing of the batch stays; a COMMIT that
// got through is a success. Only when the server answers nothing does the
// report say "may have committed".
namespace {

bool in_doubt(const pgpipe::async_batch_report& r) {
  return r.diag.client_message.find("may have committed") != std::string::npos;
}

int active_statements(const std::string& app) {
  return pgpipe::test::server_connections_where(shared_cluster(),
                                                "application_name = '" + app + "' and state <> 'idle'");
}

}  // namespace

TEST(async_transaction_batch, a_deadline_stops_the_running_statement_on_the_server_and_nothing_stays) {
  auto& pg = shared_cluster();
  const std::string app = "async_txb_deadline";
  pg.exec("drop table if exists txb_deadline; create table txb_deadline(v int)");
  auto p = params_for(app_conninfo(app), 1);
  p.query_timeout = 300ms;
  pgpipe::async_client client(p, {.loops = 1});
  auto [aec, l] = client.async_acquire(pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(aec) << aec.message();
  std::vector<pgpipe::statement> s;
  s.emplace_back("insert into txb_deadline values (1)");  // the marker
  s.emplace_back("select pg_sleep(5)");
  s.emplace_back("insert into txb_deadline values (3)");
  auto [ec, report] = pgpipe::async_transaction_batch(l, {}, s, pgpipe::test::use_future_ec).get();
  EXPECT_EQ(ec, pgpipe::errc::query_timeout) << ec.message() << " " << report.diag.to_string();
  EXPECT_EQ(report.failed_statement, std::optional<std::size_t>(1)) << report.diag.to_string();
  EXPECT_EQ(report.diag.sqlstate, "57014") << report.diag.to_string();
  EXPECT_TRUE(report.results.empty());
  EXPECT_FALSE(in_doubt(report)) << report.diag.to_string();
  EXPECT_NE(report.diag.client_message.find("nothing of the batch stayed"), std::string::npos)
      << report.diag.to_string();
  // The sleep is over on the server, and what the report said is what the table holds.
  EXPECT_TRUE(pgpipe::test::wait_until([&] { return active_statements(app) == 0; }, 2s))
      << "the statement still runs on the server";
  EXPECT_EQ(pg.query_value("select count(*) from txb_deadline"), "0");
  // The lease is idle and answers its next query with that query's result.
  auto [qec, qr] = l.async_query("select 42, txid_current_if_assigned() is null", pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(qec) << qec.message() << " " << qr.diag().to_string();
  EXPECT_EQ(qr[0].get<int>(0), 42);
  EXPECT_TRUE(qr[0].get<bool>(1));
}

TEST(async_transaction_batch, a_commit_slower_than_the_deadline_is_reported_as_the_server_ended_it) {
  auto& pg = shared_cluster();
  const std::string app = "async_txb_slow_commit";
  pg.exec(
      "drop table if exists txb_slow_commit; create table txb_slow_commit(v int);"
      "create or replace function txb_slow_commit_wait() returns trigger language plpgsql as "
      "$$ begin perform pg_sleep(1.5); return null; end $$;"
      "create constraint trigger txb_slow_commit_at_commit after insert on txb_slow_commit "
      "deferrable initially deferred for each row execute function txb_slow_commit_wait()");
  auto p = params_for(app_conninfo(app), 1);
  p.query_timeout = 300ms;
  pgpipe::async_client client(p, {.loops = 1});
  auto [aec, l] = client.async_acquire(pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(aec) << aec.message();
  std::vector<pgpipe::statement> s;
  s.emplace_back("insert into txb_slow_commit values (1)");
  auto [ec, report] = pgpipe::async_transaction_batch(l, {}, s, pgpipe::test::use_future_ec).get();
  // The server answered the cancel within its bound: the report is definite.
  EXPECT_FALSE(in_doubt(report)) << ec.message() << " " << report.diag.to_string();
  ASSERT_TRUE(pgpipe::test::wait_until([&] { return active_statements(app) == 0; }, 3s))
      << "the COMMIT still runs on the server";
  const std::string rows = pg.query_value("select count(*) from txb_slow_commit");
  if (!ec) {
    EXPECT_EQ(rows, "1") << "reported committed";
  } else {
    EXPECT_EQ(ec, pgpipe::errc::query_timeout) << ec.message() << " " << report.diag.to_string();
    EXPECT_EQ(report.failed_statement, std::optional<std::size_t>(1)) << "COMMIT is named: " << report.diag.to_string();
    EXPECT_EQ(report.diag.sqlstate, "57014") << report.diag.to_string();
    EXPECT_EQ(rows, "0") << "reported as nothing stayed: " << report.diag.to_string();
  }
  auto [qec, qr] = l.async_query("select 7", pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(qec) << qec.message() << " " << qr.diag().to_string();
  EXPECT_EQ(qr.value<int>(), 7);
}

// A server that answers nothing, not even the cancel sent at the deadline
// (its backend stopped): the connection is retired within the cancel's
// bound, and the report is the one case that cannot say what stayed.
TEST(async_transaction_batch, a_server_silent_past_the_deadline_is_reported_as_may_have_committed) {
  auto& pg = shared_cluster();
  const std::string app = "async_txb_silent";
  pg.exec("drop table if exists txb_silent; create table txb_silent(v int)");
  auto p = params_for(app_conninfo(app), 1);
  p.query_timeout = 300ms;
  p.connect_timeout = 1s;  // the cancel's bound: max(connect_timeout, 1 s)
  pgpipe::async_client client(p, {.loops = 1});
  auto [aec, l] = client.async_acquire(pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(aec) << aec.message();
  auto [iec, ids] = l.async_query("select pg_backend_pid()", pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(iec) << ids.diag().to_string();
  const auto pid = static_cast<pid_t>(ids.value<int>());
  std::vector<pgpipe::statement> s;
  s.emplace_back("insert into txb_silent values (1)");
  std::future<std::tuple<std::error_code, pgpipe::async_batch_report>> done;
  {
    stopped_backend stop(pid);
    done = pgpipe::async_transaction_batch(l, {}, s, pgpipe::test::use_future_ec);
    ASSERT_EQ(done.wait_for(10s), std::future_status::ready) << "the batch waited past the cancel's bound";
  }
  auto [ec, report] = done.get();
  EXPECT_EQ(ec, pgpipe::errc::connection_lost) << ec.message() << " " << report.diag.to_string();
  EXPECT_TRUE(in_doubt(report)) << report.diag.to_string();
  EXPECT_FALSE(report.failed_statement.has_value());
  EXPECT_TRUE(report.results.empty());
  // The connection was retired: its backend goes once resumed.
  EXPECT_TRUE(pgpipe::test::wait_until(
      [&] { return pgpipe::test::server_connections_where(pg, "pid = " + std::to_string(pid)) == 0; }))
      << "the connection was kept";
}

TEST(async_transaction_pipelined_begin, a_work_with_no_query_and_one_that_starts_at_once_both_commit) {
  auto& pg = shared_cluster();
  pg.exec("drop table if exists txb_begin; create table txb_begin(v int)");
  pgpipe::async_client client(params_for(app_conninfo("async_txb_begin"), 1), {.loops = 1});
  auto [ec, report] = pgpipe::async_transaction(
                          client, {}, [](pgpipe::async_lease&) -> asio::awaitable<void> { co_return; }, pgpipe::test::use_future_ec)
                          .get();
  EXPECT_FALSE(ec) << report.diag.to_string();
  pgpipe::transaction_options opts;
  opts.isolation = pgpipe::isolation_level::repeatable_read;
  auto [ec2, report2] = pgpipe::async_transaction(
                            client, opts,
                            [](pgpipe::async_lease& l) -> asio::awaitable<void> {
                              auto [e, r] = co_await l.async_query(
                                  "insert into txb_begin select 1 where current_setting('transaction_isolation') = "
                                  "'repeatable read'",
                                  asio::as_tuple(asio::use_awaitable));
                              pgpipe::throw_if_error(e, r);
                            },
                            pgpipe::test::use_future_ec)
                            .get();
  EXPECT_FALSE(ec2) << report2.diag.to_string();
  EXPECT_EQ(pg.query_value("select count(*) from txb_begin"), "1");
}
