// The units of work through PgBouncer in transaction mode, the way a current
// deployment runs it. Against a PgBouncer that tracks protocol-level
// prepared statements (1.21+, max_prepared_statements > 0: 1.25 in CI's
// pgbouncer125 step) the drivers keep pool_params.prepared_statements on;
// against 1.18 (Debian 12's, step 1) they turn it off, as docs/scaling.md
// says. Either way: named statements and the statement cache under
// contention for one server connection, without the pooler detection
// (42P05/26000) misfiring; the transaction helper, the batch, async_begin,
// COPY and execute_script; LISTEN refused with a clear error.
#include "support/cluster_fixture.hpp"
#include "support/driver_adapter.hpp"
#include "support/kit.hpp"
#include "support/pgbouncer.hpp"
#include "support/wait.hpp"

#include <pgpipe/transaction.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pgpipe::test::outcome;
using pgpipe::test::pgbouncer_instance;
using pgpipe::test::pgbouncer_params;

// Named statements only where this PgBouncer can carry them.
bool named() { return pgbouncer_instance::version().tracks_prepared_statements(); }

pgbouncer_params transaction_pool(int server_connections) {
  pgbouncer_params b;
  b.pool_mode = "transaction";
  b.default_pool_size = server_connections;
  b.max_client_conn = 100;
  // Fewer than the drivers' 1,000 per connection: PgBouncer's own LRU
  // closes statements on the server while the client keeps its names.
  if (named()) b.settings["max_prepared_statements"] = "50";
  return b;
}

pgpipe::pool_params through(const pgbouncer_instance& b, std::size_t max_size) {
  auto p = pgpipe::test::params_for(b.conninfo(), max_size);
  p.prepared_statements = named();
  p.acquire_timeout = 60s;
  p.query_timeout = 60s;
  return p;
}

std::string run_text(const char* what, const std::error_code& ec, const pgpipe::diagnostics& d) {
  return std::string(what) + ": " + pgpipe::test::describe(ec, d);
}

class pgbouncer_env : public ::testing::Environment {
 public:
  void SetUp() override {
    unsetenv("PGPASSWORD");
    setenv("PGPASSFILE", "/nonexistent/pgpipe-test-pgpass", 1);
    std::printf("[figure] PgBouncer %s at %s, named statements %s\n",
                pgbouncer_instance::version().to_string().c_str(), pgbouncer_instance::binary_path().c_str(),
                named() ? "on (max_prepared_statements = 50)" : "off (this PgBouncer cannot track them)");
  }
};
const auto* const env = ::testing::AddGlobalTestEnvironment(new pgbouncer_env);

template <class Driver>
class pgbouncer_prepared : public ::testing::Test {};
TYPED_TEST_SUITE(pgbouncer_prepared, pgpipe::test::drivers, pgpipe::test::driver_names);

// Two client connections on one server connection: on 1.18 their statement
// names would collide at once (pgbouncer_test shows the error). Through a
// tracking PgBouncer every query succeeds, the drivers keep naming their
// statements, and nothing reads as a pooler.
TYPED_TEST(pgbouncer_prepared, named_statements_share_one_server_connection_without_misfiring) {
  auto& pg = pgpipe::test::shared_cluster();
  pgbouncer_instance b(pg, transaction_pool(1));
  auto p = through(b, 2);
  p.min_size = 2;
  p.pipeline_depth = 4;
  TypeParam d(p);
  // Both client connections open before the load: min_size opens them in the
  // background, and the 256 queries can all finish on the first one.
  ASSERT_TRUE(pgpipe::test::wait_until([&] { return d.stats().connects >= 2; }))
      << "min_size = 2 did not open two connections in 10 s";
  std::atomic<int> failed{0};
  std::atomic<int> wrong{0};
  std::mutex mu;
  std::string sample;
  std::vector<std::thread> threads;
  for (int c = 0; c < 16; ++c) {
    threads.emplace_back([&, c] {
      // Eight texts per caller, each run twice: cached statements reused and
      // new ones parsed, on whichever server connection PgBouncer gives.
      for (int r = 0; r < 16; ++r) {
        outcome o = d.run("select ($1::int + " + std::to_string(r % 8) + ")::text", c);
        if (o.ec) {
          failed.fetch_add(1);
          std::lock_guard lk(mu);
          sample = o.text;
        } else if (o.first != std::to_string(c + r % 8)) {
          wrong.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0) << sample;
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GE(d.stats().connects, 2u) << "both client connections should have served";
  EXPECT_EQ(d.log().find("transaction pooler"), std::string::npos) << d.log();
  // The server holds statements under PgBouncer's names when the drivers
  // named theirs, and none at all when they sent unnamed ones.
  outcome n = d.run("select count(*)::text from pg_prepared_statements where name like 'PGBOUNCER_%'");
  ASSERT_FALSE(n.ec) << n.text;
  if (named()) {
    EXPECT_GE(std::stoi(n.first), 1) << "the drivers sent no named statement";
  } else {
    EXPECT_EQ(n.first, "0");
  }
}

// More distinct statements than the driver caches on a connection (1,000):
// it drops the oldest (DEALLOCATE with libpq 15, a protocol Close with 17+)
// while PgBouncer holds 50 per server connection. No caller sees either.
TYPED_TEST(pgbouncer_prepared, the_statement_cache_turns_over_without_errors) {
  auto& pg = pgpipe::test::shared_cluster();
  pgbouncer_instance b(pg, transaction_pool(2));
  TypeParam d(through(b, 1));
  int failed = 0;
  std::string sample;
  for (int i = 0; i < 1100; ++i) {
    outcome o = d.run("select " + std::to_string(i) + " + $1::int", 1);
    if (o.ec) {
      ++failed;
      sample = o.text;
    } else if (o.first != std::to_string(i + 1)) {
      ++failed;
      sample = "wrong answer " + o.first + " for " + std::to_string(i);
    }
  }
  EXPECT_EQ(failed, 0) << sample;
  EXPECT_EQ(d.log().find("transaction pooler"), std::string::npos) << d.log();
  // The first statements, evicted, are parsed again.
  outcome again = d.run("select 0 + $1::int", 7);
  ASSERT_FALSE(again.ec) << again.text;
  EXPECT_EQ(again.first, "7");
}

// In transaction mode no server connection stays with a client, so LISTEN
// cannot work; the async driver's shared path refuses it before sending, and
// says where LISTEN does work.
TEST(pgbouncer_async, listen_is_refused_with_a_clear_error) {
  auto& pg = pgpipe::test::shared_cluster();
  pgbouncer_instance b(pg, transaction_pool(1));
  pgpipe::test::async_driver d(through(b, 1));
  outcome o = d.run("listen pgbouncer_channel");
  EXPECT_EQ(o.ec, pgpipe::errc::session_state_needs_lease) << o.text;
  EXPECT_NE(o.text.find("pgpipe::async_listener"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("transaction pooler"), std::string::npos) << o.text;
  outcome after = d.run("select 1::text");
  ASSERT_FALSE(after.ec) << after.text;
  EXPECT_EQ(after.first, "1");
}

// The async units of work, one after the other on a pool of 4 over 2
// server connections.
class pgbouncer_units : public ::testing::Test {
 protected:
  void SetUp() override {
    pg_.exec("drop table if exists bnc_units; create table bnc_units(k text, v int)");
    bouncer_ = std::make_unique<pgbouncer_instance>(pg_, transaction_pool(2));
    client_ = std::make_unique<pgpipe::async_client>(through(*bouncer_, 4), pgpipe::async_client_options{.loops = 1});
  }
  void TearDown() override {
    client_.reset();
    bouncer_.reset();
  }
  std::string count(const std::string& k) {
    return pg_.query_value("select count(*) from bnc_units where k = '" + k + "'");
  }

  pgpipe::devcluster::cluster& pg_ = pgpipe::test::shared_cluster();
  std::unique_ptr<pgbouncer_instance> bouncer_;
  std::unique_ptr<pgpipe::async_client> client_;
};

TEST_F(pgbouncer_units, the_transaction_helper_commits_and_rolls_back) {
  constexpr int n = 40;
  std::vector<std::future<std::tuple<std::error_code, pgpipe::async_transaction_report>>> done;
  for (int i = 0; i < n; ++i) {
    done.push_back(pgpipe::async_transaction(
        *client_, {},
        [i](pgpipe::async_lease& l) -> asio::awaitable<std::error_code> {
          auto [ec, r] = co_await l.async_query("insert into bnc_units values ('helper', $1)", i,
                                                asio::as_tuple(asio::use_awaitable));
          if (ec) co_return ec;
          auto [ec2, r2] = co_await l.async_query("update bnc_units set v = v + 1000 where k = 'helper' and v = $1", i,
                                                  asio::as_tuple(asio::use_awaitable));
          co_return ec2;
        },
        pgpipe::test::use_future_ec));
  }
  for (auto& f : done) {
    auto [ec, report] = f.get();
    EXPECT_FALSE(ec) << run_text("transaction", ec, report.diag);
  }
  EXPECT_EQ(count("helper"), std::to_string(n));
  EXPECT_EQ(pg_.query_value("select count(*) from bnc_units where k = 'helper' and v >= 1000"), std::to_string(n));

  auto [ec, report] = pgpipe::async_transaction(
                          *client_, {},
                          [](pgpipe::async_lease& l) -> asio::awaitable<std::error_code> {
                            auto [e1, r1] = co_await l.async_query("insert into bnc_units values ('undone', 1)",
                                                                   asio::as_tuple(asio::use_awaitable));
                            if (e1) co_return e1;
                            auto [e2, r2] = co_await l.async_query("select 1 / 0", asio::as_tuple(asio::use_awaitable));
                            co_return e2;
                          },
                          pgpipe::test::use_future_ec)
                          .get();
  EXPECT_EQ(pgpipe::sqlstate_of(ec), "22012") << run_text("failing transaction", ec, report.diag);
  EXPECT_EQ(count("undone"), "0");
}

TEST_F(pgbouncer_units, the_batch_commits_in_one_round_trip_and_a_failing_statement_keeps_nothing) {
  std::vector<std::future<std::tuple<std::error_code, pgpipe::async_batch_report>>> done;
  for (int i = 0; i < 30; ++i) {
    std::vector<pgpipe::statement> s;
    s.emplace_back("insert into bnc_units values ('batch', $1)", i);
    s.emplace_back("insert into bnc_units values ('batch', $1)", i + 100);
    s.emplace_back("select count(*)::text from bnc_units where k = 'batch' and v = $1", i);
    done.push_back(pgpipe::async_transaction_batch(*client_, {}, std::move(s), pgpipe::test::use_future_ec));
  }
  for (auto& f : done) {
    auto [ec, report] = f.get();
    ASSERT_FALSE(ec) << run_text("batch", ec, report.diag);
    ASSERT_EQ(report.results.size(), 3u);
    // The batch's own insert is visible to its last statement.
    EXPECT_EQ(report.results[2].value<std::string>(), "1");
  }
  EXPECT_EQ(count("batch"), "60");

  std::vector<pgpipe::statement> bad;
  bad.emplace_back("insert into bnc_units values ('batch_bad', 1)");
  bad.emplace_back("insert into bnc_units values ('batch_bad', 1 / 0)");
  bad.emplace_back("insert into bnc_units values ('batch_bad', 3)");
  auto [ec, report] = pgpipe::async_transaction_batch(*client_, {}, std::move(bad), pgpipe::test::use_future_ec).get();
  EXPECT_EQ(pgpipe::sqlstate_of(ec), "22012") << run_text("failing batch", ec, report.diag);
  ASSERT_TRUE(report.failed_statement.has_value());
  EXPECT_EQ(*report.failed_statement, 1u);
  EXPECT_EQ(count("batch_bad"), "0");
}

TEST_F(pgbouncer_units, async_begin_commits_and_an_abandoned_transaction_rolls_back) {
  const std::string inside = pgpipe::test::run_on(*client_, [&]() -> asio::awaitable<std::string> {
    std::string seen;
    {
      auto tx = co_await client_->async_begin({}, asio::use_awaitable);
      co_await tx.async_query("insert into bnc_units values ('begin', $1)", 1, asio::use_awaitable);
      co_await tx.async_query("insert into bnc_units values ('begin', $1)", 2, asio::use_awaitable);
      // The same server connection for the whole transaction: it sees both.
      auto r = co_await tx.async_query("select count(*)::text from bnc_units where k = 'begin'", asio::use_awaitable);
      seen = r.value<std::string>();
      co_await tx.async_commit(asio::use_awaitable);
    }
    {
      auto tx = co_await client_->async_begin({}, asio::use_awaitable);
      co_await tx.async_query("insert into bnc_units values ('abandoned', 1)", asio::use_awaitable);
    }  // destroyed without commit
    co_return seen;
  }());
  EXPECT_EQ(inside, "2");
  EXPECT_EQ(count("begin"), "2");
  EXPECT_EQ(count("abandoned"), "0");
  // The pool still serves after the abandoned transaction's ROLLBACK.
  auto [ec, r] = client_->async_query("select count(*)::text from bnc_units where k = 'abandoned'",
                                      pgpipe::test::use_future_ec)
                     .get();
  ASSERT_FALSE(ec) << run_text("after", ec, r.diag());
  EXPECT_EQ(r.value<std::string>(), "0");
}

TEST_F(pgbouncer_units, copy_in_and_execute_script_run_on_a_lease) {
  auto l = pgpipe::test::acquire(*client_);
  auto in = l.copy_in("copy bnc_units (k, v) from stdin");
  std::string rows;
  for (int i = 0; i < 500; ++i) rows += "copy\t" + std::to_string(i) + "\n";
  ASSERT_FALSE(in.async_write(rows, pgpipe::test::use_future_ec).get());
  auto [cec, cr] = in.async_finish(pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(cec) << run_text("copy", cec, cr.diag());
  EXPECT_EQ(cr.affected_rows(), 500u);
  EXPECT_EQ(count("copy"), "500");

  auto [sec, sr] = l.async_execute_script(
                        "insert into bnc_units values ('script', 1);\n"
                        "insert into bnc_units values ('script', 2);\n"
                        "update bnc_units set v = v * 10 where k = 'script'",
                        pgpipe::test::use_future_ec)
                       .get();
  ASSERT_FALSE(sec) << run_text("script", sec, sr.diag());
  EXPECT_EQ(sr.affected_rows(), 2u);
  EXPECT_EQ(pg_.query_value("select sum(v) from bnc_units where k = 'script'"), "30");

  // A failing script keeps nothing (one implicit transaction), and the
  // lease serves after it.
  auto [fec, fr] = l.async_execute_script(
                        "insert into bnc_units values ('script_bad', 1);\n"
                        "select 1 / 0",
                        pgpipe::test::use_future_ec)
                       .get();
  EXPECT_EQ(pgpipe::sqlstate_of(fec), "22012") << run_text("failing script", fec, fr.diag());
  EXPECT_EQ(count("script_bad"), "0");
  auto [qec, qr] = l.async_query("select 41 + $1::int", 1, pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(qec) << run_text("after script", qec, qr.diag());
  EXPECT_EQ(qr.value<int>(), 42);
}

// The blocking driver's transaction helper and script through the same pool.
TEST(pgbouncer_blocking_units, transaction_and_script) {
  auto& pg = pgpipe::test::shared_cluster();
  pg.exec("drop table if exists bnc_blocking; create table bnc_blocking(v int)");
  pgbouncer_instance b(pg, transaction_pool(2));
  pgpipe::blocking_pool pool(through(b, 4));
  std::vector<std::thread> threads;
  std::atomic<int> failed{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        try {
          pool.transaction([&](pgpipe::blocking_lease& l) {
            (void)l.exec("insert into bnc_blocking values ($1)", t * 100 + i);
            (void)l.exec("update bnc_blocking set v = v + 1 where v = $1", t * 100 + i);
          });
        } catch (const pgpipe::error& e) {
          failed.fetch_add(1);
          ADD_FAILURE() << e.what();
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(pg.query_value("select count(*) from bnc_blocking"), "40");
  EXPECT_THROW(pool.transaction([](pgpipe::blocking_lease& l) {
    (void)l.exec("insert into bnc_blocking values (-1)");
    (void)l.exec("select 1 / 0");
  }),
               pgpipe::error);
  EXPECT_EQ(pg.query_value("select count(*) from bnc_blocking where v = -1"), "0");
  auto l = pool.acquire();
  const auto r = l.execute_script("insert into bnc_blocking values (-2); insert into bnc_blocking values (-3)");
  EXPECT_EQ(r.affected_rows(), 1u);
  EXPECT_EQ(pg.query_value("select count(*) from bnc_blocking where v < -1"), "2");
}

}  // namespace
