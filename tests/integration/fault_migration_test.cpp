// A schema migration under load, in both drivers: many callers run the
// cached (prepared) `select * from t` while another session alters t. The
// server then refuses the stale statements (0A000 "cached plan must not
// change result type", or 26000); the drivers must prepare them again and
// re-run transparently: no caller sees either code, and results take the
// new shape.
#include <pgpipe/async_client.hpp>
#include <pgpipe/blocking_pool.hpp>
#include <pgpipe/transaction.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <libpq-fe.h>

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using pgpipe::test::shared_cluster;

namespace {

constexpr Oid int4_oid = 23;
constexpr Oid int8_oid = 20;

// Errors seen by callers, by their text (SQLSTATE or client code).
class error_log {
 public:
  void add(const std::error_code& ec, const std::string& what) {
    std::lock_guard lk(mu_);
    ++counts_[ec.category().name() + std::string(":") + pgpipe::sqlstate_of(ec) + " " + what.substr(0, 120)];
  }
  std::string summary() const {
    std::lock_guard lk(mu_);
    std::string s;
    for (auto& [k, n] : counts_) s += k + " x" + std::to_string(n) + "\n";
    return s;
  }
  bool empty() const {
    std::lock_guard lk(mu_);
    return counts_.empty();
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, int> counts_;
};

// Answers so far; wait_for(n) wakes when n have arrived (or times out).
class answer_count {
 public:
  void add() {
    std::lock_guard lk(mu_);
    ++n_;
    cv_.notify_all();
  }
  std::size_t get() const {
    std::lock_guard lk(mu_);
    return n_;
  }
  bool wait_for(std::size_t n, std::chrono::seconds timeout = 20s) {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, timeout, [&] { return n_ >= n; });
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::size_t n_ = 0;
};

void create_table(const std::string& t) {
  shared_cluster().exec("drop table if exists " + t);
  shared_cluster().exec("create table " + t + " (a int4 not null)");
  shared_cluster().exec("insert into " + t + " select g from generate_series(1, 20) g");
}

// The migration another session runs while the callers keep querying.
void migrate(const std::string& t) {
  shared_cluster().exec("alter table " + t + " add column b int4 not null default 7");
  shared_cluster().exec("alter table " + t + " alter column a type int8");
}

pgpipe::pool_params params(std::size_t max_size) {
  pgpipe::pool_params p;
  p.conninfo = shared_cluster().conninfo();
  p.max_size = max_size;
  p.min_size = max_size;
  p.prepared_statements = true;
  p.acquire_timeout = 30s;
  p.max_queued = 10000;
  return p;
}

// What the drivers repair: without it, a statement prepared before the
// migration fails afterwards (so the tests below would see the codes).
TEST(fault_migration, server_refuses_a_statement_prepared_before_the_migration) {
  const std::string t = "mig_raw";
  create_table(t);
  PGconn* c = PQconnectdb(shared_cluster().conninfo().c_str());
  ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
  PGresult* r = PQprepare(c, "s1", ("select * from " + t).c_str(), 0, nullptr);
  ASSERT_EQ(PQresultStatus(r), PGRES_COMMAND_OK);
  PQclear(r);
  r = PQexecPrepared(c, "s1", 0, nullptr, nullptr, nullptr, 0);
  ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK);
  PQclear(r);
  shared_cluster().exec("alter table " + t + " add column b int4 not null default 7");
  r = PQexecPrepared(c, "s1", 0, nullptr, nullptr, nullptr, 0);
  EXPECT_EQ(PQresultStatus(r), PGRES_FATAL_ERROR);
  const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
  EXPECT_STREQ(state ? state : "", "0A000");
  const char* primary = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
  EXPECT_STREQ(primary ? primary : "", "cached plan must not change result type");
  PQclear(r);
  PQfinish(c);
}

TEST(fault_migration, async_callers_never_see_a_stale_statement) {
  const std::string t = "mig_async";
  create_table(t);
  const std::string sql = "select * from " + t + " order by 1";
  pgpipe::async_client client(params(4));

  error_log errors;
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> in_flight{0};
  answer_count answered;
  std::mutex mu;
  std::condition_variable cv;
  // Each caller re-issues its query as soon as the previous one completes.
  std::function<void()> issue = [&] {
    ++in_flight;
    client.async_query(sql, [&](std::error_code ec, pgpipe::result r) {
      if (ec) errors.add(ec, r.diag().to_string());
      answered.add();
      if (!stop.load()) {
        issue();
      }
      if (--in_flight == 0) {
        std::lock_guard lk(mu);
        cv.notify_all();
      }
    });
  };
  for (int i = 0; i < 64; ++i) issue();
  // Every connection has the statement cached before the migration.
  EXPECT_TRUE(answered.wait_for(2000));
  migrate(t);
  EXPECT_TRUE(answered.wait_for(answered.get() + 2000));
  stop = true;
  {
    std::unique_lock lk(mu);
    ASSERT_TRUE(cv.wait_for(lk, 30s, [&] { return in_flight.load() == 0; }));
  }
  EXPECT_TRUE(errors.empty()) << errors.summary();

  // Every connection now serves the new shape.
  std::vector<std::future<std::tuple<std::error_code, pgpipe::result>>> fs;
  for (int i = 0; i < 64; ++i) fs.push_back(client.async_query(sql, pgpipe::test::use_future_ec));
  for (auto& f : fs) {
    auto [ec, r] = f.get();
    ASSERT_FALSE(ec) << r.diag().to_string();
    ASSERT_EQ(r.columns(), 2u);
    EXPECT_EQ(PQftype(r.native_handle(), 0), int8_oid);
    EXPECT_EQ(PQftype(r.native_handle(), 1), int4_oid);
    EXPECT_EQ(r[0].get<std::int64_t>(1), 7);
  }
}

TEST(fault_migration, blocking_callers_never_see_a_stale_statement) {
  const std::string t = "mig_blocking";
  create_table(t);
  const std::string sql = "select * from " + t + " order by 1";
  pgpipe::blocking_pool pool(params(4));

  error_log errors;
  std::atomic<bool> stop{false};
  answer_count answered;
  std::vector<std::thread> callers;
  for (int i = 0; i < 8; ++i) {
    callers.emplace_back([&] {
      while (!stop.load()) {
        try {
          (void)pool.exec(sql);
        } catch (const pgpipe::error& e) {
          errors.add(e.code(), e.what());
        } catch (const std::exception& e) {
          errors.add(make_error_code(pgpipe::errc::protocol_error), e.what());
        }
        answered.add();
      }
    });
  }
  // Let every connection cache the statement, migrate, keep going a while.
  EXPECT_TRUE(answered.wait_for(400));
  migrate(t);
  EXPECT_TRUE(answered.wait_for(answered.get() + 400));
  stop = true;
  for (auto& c : callers) c.join();
  EXPECT_TRUE(errors.empty()) << errors.summary();

  // Each of the 4 connections: new shape, and a caller-visible cached statement.
  for (int i = 0; i < 16; ++i) {
    pgpipe::result r = pool.exec(sql);
    ASSERT_EQ(r.columns(), 2u);
    EXPECT_EQ(r[0][0].type(), int8_oid);
    EXPECT_EQ(r[0][1].get<int>(), 7);
  }
}

// Inside a transaction a stale statement's error aborts the transaction, so
// that one transaction fails (0A000) whatever the driver does; the
// statement must not stay cached, or every later transaction on the
// connection fails the same way. Each helper runs `runs` transactions of
// one cached `insert ... returning *` after the migration: at most the first
// may fail.
constexpr int runs = 5;

struct after_migration {
  int failed = 0;
  std::string errors;
  std::vector<int> failed_runs;
};

// One connection, so the statement the priming transaction cached is the one
// every later transaction meets.
pgpipe::pool_params one_connection() {
  auto p = params(1);
  p.acquire_timeout = 10s;
  return p;
}

template <class Transaction>
after_migration run_after_migration(const std::string& t, Transaction&& transaction) {
  shared_cluster().exec("drop table if exists " + t + "; create table " + t + " (a int4 not null)");
  // Primes the cache.
  std::error_code primed = transaction(0);
  EXPECT_FALSE(primed) << primed.message();
  shared_cluster().exec("alter table " + t + " add column b int4 not null default 7");
  after_migration out;
  for (int i = 1; i <= runs; ++i) {
    std::error_code ec = transaction(i);
    if (ec) {
      ++out.failed;
      out.failed_runs.push_back(i);
      out.errors += pgpipe::sqlstate_of(ec) + " " + ec.message() + "\n";
    }
  }
  return out;
}

void expect_only_the_first_failed(const after_migration& m) {
  EXPECT_LE(m.failed, 1) << m.errors;
  if (m.failed == 1) {
    EXPECT_EQ(m.failed_runs.front(), 1) << m.errors;
  }
}

TEST(fault_migration, async_transaction_meets_a_stale_statement_once_only) {
  const std::string t = "mig_async_tx";
  pgpipe::async_client client(one_connection());
  const std::string ins = "insert into " + t + " (a) values ($1) returning *";
  auto m = run_after_migration(t, [&](int i) {
    auto work = [&ins, i](pgpipe::async_lease& l) -> boost::asio::awaitable<std::error_code> {
      auto [ec, r] = co_await l.async_query(ins, i, boost::asio::as_tuple(boost::asio::use_awaitable));
      co_return ec;
    };
    return std::get<0>(pgpipe::async_transaction(client, {}, work, pgpipe::test::use_future_ec).get());
  });
  expect_only_the_first_failed(m);
  EXPECT_EQ(shared_cluster().query_value("select count(*) from " + t + " where a > 0"),
            std::to_string(runs - m.failed));
}

TEST(fault_migration, async_transaction_batch_meets_a_stale_statement_once_only) {
  const std::string t = "mig_async_batch";
  pgpipe::async_client client(one_connection());
  const std::string ins = "insert into " + t + " (a) values ($1) returning *";
  auto m = run_after_migration(t, [&](int i) {
    std::vector<pgpipe::statement> s;
    s.emplace_back(ins, i);
    return std::get<0>(pgpipe::async_transaction_batch(client, {}, std::move(s), pgpipe::test::use_future_ec).get());
  });
  expect_only_the_first_failed(m);
}

TEST(fault_migration, async_begin_meets_a_stale_statement_once_only) {
  const std::string t = "mig_async_begin";
  pgpipe::async_client client(one_connection());
  const std::string ins = "insert into " + t + " (a) values ($1) returning *";
  auto m = run_after_migration(t, [&](int i) -> std::error_code {
    auto [bec, tx] = client.async_begin({}, pgpipe::test::use_future_ec).get();
    if (bec) return bec;
    auto [ec, r] = tx.async_query(ins, i, pgpipe::test::use_future_ec).get();
    if (ec) {
      (void)tx.async_rollback(pgpipe::test::use_future_ec).get();
      return ec;
    }
    return std::get<0>(tx.async_commit(pgpipe::test::use_future_ec).get());
  });
  expect_only_the_first_failed(m);
}

// The repair on a lease runs the statement again and drops the stale one;
// the DEALLOCATE is the lease's own request. With pipeline_depth 1 the
// lease's BEGIN, sent behind the stale statement, is still waiting when the
// repair queues the DEALLOCATE, so the DEALLOCATE runs inside the lease's
// transaction: it must not be taken for a shared request that left one open.
TEST(fault_migration, async_repair_on_a_lease_runs_inside_the_lease_transaction_harmlessly) {
  const std::string t = "mig_async_lease_repair";
  shared_cluster().exec("drop table if exists " + t + "; create table " + t + " (a int4 not null)");
  auto p = one_connection();
  p.pipeline_depth = 1;
  pgpipe::async_client client(p, {.loops = 1});
  auto [aec, l] = client.async_acquire(pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(aec) << aec.message();
  const std::string sel = "select * from " + t;
  {
    auto [ec, r] = l.async_query(sel, pgpipe::test::use_future_ec).get();
    ASSERT_FALSE(ec) << r.diag().to_string();
  }
  shared_cluster().exec("alter table " + t + " add column b int4 not null default 7");
  auto stale = l.async_query(sel, pgpipe::test::use_future_ec);
  auto begin = l.async_query("begin", pgpipe::test::use_future_ec);
  for (auto* f : {&stale, &begin}) {
    auto [ec, r] = f->get();
    EXPECT_FALSE(ec) << ec.message() << " | " << r.diag().to_string();
  }
  // The DEALLOCATE was queued behind BEGIN, ahead of these.
  auto insert = l.async_query("insert into " + t + " (a) values (1)", pgpipe::test::use_future_ec);
  auto commit = l.async_query("commit", pgpipe::test::use_future_ec);
  for (auto* f : {&insert, &commit}) {
    auto [ec, r] = f->get();
    EXPECT_FALSE(ec) << ec.message() << " | " << r.diag().to_string();
  }
  EXPECT_EQ(shared_cluster().query_value("select count(*) from " + t), "1");
  EXPECT_EQ(client.stats().disconnects, 0u);
}

}  // namespace
