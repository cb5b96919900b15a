// blocking_pool against a real PostgreSQL: what a caller of the blocking
// driver relies on.
#include <pgpipe/blocking_pool.hpp>
#include <pgpipe/detail/pqxx_compat.hpp>

#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"
#include "support/wait.hpp"

#include <gtest/gtest.h>
#include <pqxx/nontransaction>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using pgpipe::test::server_connections;

using namespace std::chrono_literals;
using pgpipe::blocking_pool;
using pgpipe::errc;
using pgpipe::pool_params;
using pgpipe::test::shared_cluster;
using pgpipe::test::wait_until;
using pgpipe::test::with_options;

// Generous acquire bound: sanitizer builds connect slowly.
pool_params blocking_params(const std::string& conninfo, std::size_t max_size) {
  pool_params p = pgpipe::test::params_for(conninfo, max_size);
  p.acquire_timeout = 20s;
  return p;
}

template <typename Fn>
std::error_code code_of(Fn&& fn) {
  try {
    fn();
  } catch (const pgpipe::error& e) {
    return e.code();
  }
  return {};
}

TEST(blocking_pool, exec_returns_rows_and_converts_parameters) {
  blocking_pool pool{blocking_params(shared_cluster().conninfo(), 2)};
  pgpipe::result r = pool.exec("select $1::int + 1, $2::text || 'b', $3::text is null", 41, std::string("a"),
                             std::optional<std::string>{});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0][0].get<int>(), 42);
  EXPECT_EQ(r[0][1].get<std::string>(), "ab");
  EXPECT_TRUE(r[0][2].get<bool>());
}

TEST(blocking_pool, sixty_four_threads_on_eight_connections) {
  const std::string app = "blocking_hammer";
  blocking_pool pool{blocking_params(with_options(shared_cluster().conninfo(), "application_name=" + app), 8)};
  constexpr int threads = 64;
  constexpr int per_thread = 150;

  std::mutex mu;
  std::condition_variable cv;
  int finished = 0;
  std::atomic<int> wrong{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        const int v = t * 1000 + i;
        try {
          auto r = pool.exec("select $1::int * 2, pg_backend_pid()", v);
          if (r[0][0].get<int>() != 2 * v) ++wrong;
        } catch (const std::exception& e) {
          ++failed;
          ADD_FAILURE() << e.what();
        }
      }
      std::lock_guard lk(mu);
      ++finished;
      cv.notify_all();
    });
  }

  // Sample what the server sees while the callers run (pg_stat_activity has
  // no event to wait on: sample until the workers say they are done).
  int most = 0;
  bool all_done = false;
  const auto give_up = std::chrono::steady_clock::now() + 120s;
  {
    std::unique_lock lk(mu);
    while (!all_done && std::chrono::steady_clock::now() < give_up) {
      lk.unlock();
      most = std::max(most, server_connections(shared_cluster(), app));
      lk.lock();
      all_done = cv.wait_for(lk, 20ms, [&] { return finished == threads; });
    }
  }
  if (!all_done) {
    ADD_FAILURE() << "deadlock: only " << finished << " of " << threads << " callers finished in 120 s";
    std::abort();  // joining would hang the suite
  }
  for (auto& w : workers) w.join();

  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_GE(most, 1);
  EXPECT_LE(most, 8) << "the server saw more connections than max_size";
  const auto s = pool.stats();
  EXPECT_EQ(s.completed, static_cast<std::uint64_t>(threads * per_thread));
  EXPECT_LE(s.connects, 8u);
  EXPECT_EQ(s.in_flight, 0u);
  EXPECT_EQ(s.queued, 0u);
}

TEST(blocking_pool, acquire_times_out_with_pool_timeout_when_every_connection_is_held) {
  blocking_pool pool{blocking_params(shared_cluster().conninfo(), 2)};
  auto a = pool.acquire();
  auto b = pool.acquire();
  const auto t0 = std::chrono::steady_clock::now();
  std::error_code ec;
  std::string what;
  try {
    pool.acquire(200ms);
  } catch (const pgpipe::error& e) {
    ec = e.code();
    what = e.what();
  }
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(ec, errc::pool_timeout) << what;
  EXPECT_EQ(ec, pgpipe::errc_condition::timeout);
  EXPECT_GE(waited, 190ms);
  EXPECT_LT(waited, 5s);
  EXPECT_EQ(pool.stats().errors.pool_timeout, 1u);
  // Giving one back makes the pool usable again.
  a.release();
  EXPECT_EQ(pool.exec("select 7").value<int>(), 7);
}

TEST(blocking_pool, server_down_is_server_unreachable_not_pool_timeout) {
  auto pg = pgpipe::test::fresh_cluster();
  auto p = blocking_params(pg->conninfo(), 2);
  p.acquire_timeout = 1s;
  p.connect_timeout = 2s;
  blocking_pool pool{p};
  EXPECT_EQ(pool.exec("select 1").value<int>(), 1);  // one idle connection now
  pg->stop(pgpipe::devcluster::stop_mode::fast);

  std::error_code ec;
  pgpipe::diagnostics diag;
  std::string what;
  try {
    (void)pool.exec("select 1");
  } catch (const pgpipe::error& e) {
    ec = e.code();
    diag = e.diag();
    what = e.what();
  }
  EXPECT_EQ(ec, errc::server_unreachable) << what;
  EXPECT_EQ(ec, pgpipe::errc_condition::connect_error);
  EXPECT_NE(ec, errc::pool_timeout);
  EXPECT_FALSE(diag.client_message.empty());
  EXPECT_EQ(what.find(pg->password()), std::string::npos);
}

TEST(blocking_pool, terminated_backend_is_replaced_on_next_acquire) {
  blocking_pool pool{blocking_params(shared_cluster().conninfo(), 1)};
  const int pid = pool.exec("select pg_backend_pid()").value<int>();
  ASSERT_TRUE(shared_cluster().terminate_backend(pid));
  ASSERT_TRUE(wait_until([&] {
    return shared_cluster().query_value("select count(*) from pg_stat_activity where pid = " +
                                        std::to_string(pid)) == "0";
  }));
  // The idle connection is dead; the caller must not see it.
  const int pid2 = pool.exec("select pg_backend_pid()").value<int>();
  EXPECT_NE(pid2, pid);
  const auto s = pool.stats();
  EXPECT_EQ(s.connects, 2u);
  EXPECT_EQ(s.disconnects, 1u);
}

TEST(blocking_pool, lease_dropped_mid_transaction_commits_nothing) {
  auto& pg = shared_cluster();
  pg.exec("create table if not exists blocking_mid_tx (v int)");
  pg.exec("truncate blocking_mid_tx");
  blocking_pool pool{blocking_params(pg.conninfo(), 1)};
  int pid = 0;
  {
    auto lease = pool.acquire();
    pqxx::nontransaction tx{*lease};
    tx.exec("BEGIN");
    tx.exec("insert into blocking_mid_tx values (1)");
    pid = tx.exec("select pg_backend_pid()")[0][0].as<int>();
  }  // tx, then the lease: the pool must roll back
  {
    auto lease = pool.acquire();
    pqxx::work tx{*lease};
    tx.exec("insert into blocking_mid_tx values (2)");
  }  // pqxx::work without commit rolls back by itself
  EXPECT_EQ(pg.query_value("select count(*) from blocking_mid_tx"), "0");
  // Rolled back and reused, not thrown away: the same backend serves again,
  // outside any transaction block (its autocommit insert is visible at once).
  auto r = pool.exec("insert into blocking_mid_tx values (3) returning pg_backend_pid()");
  EXPECT_EQ(r[0][0].get<int>(), pid);
  EXPECT_EQ(pg.query_value("select string_agg(v::text, ',') from blocking_mid_tx"), "3");
  EXPECT_EQ(pool.stats().connects, 1u);
}

TEST(blocking_pool, transaction_commits_on_return_and_rolls_back_on_throw) {
  auto& pg = shared_cluster();
  pg.exec("create table if not exists blocking_tx (v int)");
  pg.exec("truncate blocking_tx");
  blocking_pool pool{blocking_params(pg.conninfo(), 2)};

  const int n = pool.transaction([](pqxx::work& tx) {
    pgpipe::detail::pqxx_exec_params(tx, "insert into blocking_tx values ($1)", 1);
    return tx.exec("select count(*) from blocking_tx")[0][0].as<int>();
  });
  EXPECT_EQ(n, 1);
  EXPECT_THROW(pool.transaction([](pqxx::work& tx) {
    pgpipe::detail::pqxx_exec_params(tx, "insert into blocking_tx values ($1)", 2);
    throw std::runtime_error("caller's own failure");
  }),
               std::runtime_error);
  const auto ec = code_of([&] {
    pool.transaction([](pqxx::work& tx) {
      pgpipe::detail::pqxx_exec_params(tx, "insert into blocking_tx values ($1)", 3);
      tx.exec("select 1/0");
    });
  });
  EXPECT_EQ(ec, pgpipe::make_sqlstate("22012"));
  EXPECT_EQ(pg.query_value("select string_agg(v::text, ',') from blocking_tx"), "1");
}

TEST(blocking_pool, sql_error_carries_sqlstate_and_server_fields) {
  blocking_pool pool{blocking_params(shared_cluster().conninfo(), 1)};
  try {
    (void)pool.exec("select 1/0");
    FAIL() << "no error";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::make_sqlstate("22012"));
    EXPECT_EQ(e.code(), pgpipe::errc_condition::server_error);
    EXPECT_EQ(e.diag().sqlstate, "22012");
    EXPECT_EQ(e.diag().severity, "ERROR");
    EXPECT_EQ(e.diag().message, "division by zero");
  }
  try {
    (void)pool.exec("select * from no_such_table_here");
    FAIL() << "no error";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(pgpipe::sqlstate_of(e.code()), "42P01");
  }
  // The connection survived both errors and was reused.
  EXPECT_EQ(pool.exec("select 3").value<int>(), 3);
  const auto s = pool.stats();
  EXPECT_EQ(s.errors.server, 2u);
  EXPECT_EQ(s.connects, 1u);
}

TEST(blocking_pool, wrong_password_is_auth_failed_without_the_password) {
  auto& pg = shared_cluster();
  const std::string secret = "not-the-pw-Zq81";
  auto p = blocking_params(pg.conninfo_without_password() + " password=" + secret, 2);
  p.acquire_timeout = 5s;
  blocking_pool pool{p};
  const auto t0 = std::chrono::steady_clock::now();
  try {
    (void)pool.exec("select 1");
    FAIL() << "no error";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::errc_condition::auth_error) << e.what();
    EXPECT_EQ(pgpipe::sqlstate_of(e.code()), "28P01") << e.what();
    EXPECT_EQ(std::string(e.what()).find(secret), std::string::npos) << e.what();
    EXPECT_EQ(e.diag().to_string().find(secret), std::string::npos);
    EXPECT_NE(e.diag().message.find("password authentication failed"), std::string::npos) << e.what();
  }
  // A permanent error fails the waiter at once instead of at the deadline.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 4s);
}

TEST(blocking_pool, bad_conninfo_is_rejected_by_the_constructor) {
  pool_params p;
  p.conninfo = "host=localhost password=hunter2-secret bogus_option=1";
  try {
    blocking_pool pool{p};
    FAIL() << "no error";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), errc::bad_conninfo);
    EXPECT_EQ(std::string(e.what()).find("hunter2-secret"), std::string::npos) << e.what();
  }
}

TEST(blocking_pool, close_fails_new_acquires_and_lets_leases_finish) {
  blocking_pool pool{blocking_params(shared_cluster().conninfo(), 2)};
  auto lease = pool.acquire();
  pool.close();
  EXPECT_EQ(code_of([&] { pool.acquire(1s); }), errc::closed);
  pqxx::nontransaction tx{*lease};
  EXPECT_EQ(tx.exec("select 5")[0][0].as<int>(), 5);
}

TEST(blocking_pool, opening_many_connections_takes_few_threads) {
  // min_size 16 at once: the connects share a handful of connector threads
  // (the thread count of the blocking driver is meant to show a thread per
  // query, not per connect).
  auto p = blocking_params(shared_cluster().conninfo(), 16);
  p.min_size = 16;
  blocking_pool pool{p};
  std::size_t most = 0;
  EXPECT_TRUE(wait_until([&] {
    const auto s = pool.stats();
    most = std::max(most, s.threads);
    return s.idle == 16;
  }));
  EXPECT_LE(most, 5u);  // housekeeper + at most 4 connectors
  EXPECT_EQ(pool.stats().connects, 16u);
}

TEST(blocking_pool, min_size_connections_open_eagerly) {
  const std::string app = "blocking_min_size";
  auto p = blocking_params(with_options(shared_cluster().conninfo(), "application_name=" + app), 4);
  p.min_size = 3;
  blocking_pool pool{p};
  EXPECT_TRUE(wait_until([&] { return server_connections(shared_cluster(), app) == 3; }));
  EXPECT_TRUE(wait_until([&] { return pool.stats().idle == 3; }));
}

TEST(blocking_pool, idle_connections_close_after_idle_timeout) {
  const std::string app = "blocking_idle_timeout";
  auto p = blocking_params(with_options(shared_cluster().conninfo(), "application_name=" + app), 4);
  p.idle_timeout = 300ms;
  blocking_pool pool{p};
  {
    auto a = pool.acquire();
    auto b = pool.acquire();
    // Counted while held: once returned, a loaded machine may close them
    // (300 ms idle) before a count taken afterwards (a CI flake).
    EXPECT_EQ(server_connections(shared_cluster(), app), 2);
  }
  // Closed by the housekeeping thread, with nobody calling into the pool.
  EXPECT_TRUE(wait_until([&] { return server_connections(shared_cluster(), app) == 0; }));
  EXPECT_EQ(pool.stats().disconnects, 2u);
  EXPECT_EQ(pool.exec("select 1").value<int>(), 1);  // and it reconnects on demand
}

TEST(blocking_pool, connections_are_replaced_after_max_lifetime_and_min_size_is_kept) {
  auto p = blocking_params(shared_cluster().conninfo(), 2);
  p.min_size = 1;
  p.max_lifetime = 400ms;
  blocking_pool pool{p};
  const int first = pool.exec("select pg_backend_pid()").value<int>();
  // The housekeeper retires the connection and opens a new one for min_size.
  EXPECT_TRUE(wait_until([&] {
    const auto s = pool.stats();
    return s.disconnects >= 1 && s.idle >= 1;
  }));
  const int later = pool.exec("select pg_backend_pid()").value<int>();
  EXPECT_NE(later, first);
}

TEST(blocking_pool, health_check_replaces_a_connection_that_died_while_idle) {
  auto p = blocking_params(shared_cluster().conninfo(), 1);
  p.health_check_interval = 200ms;
  blocking_pool pool{p};
  const int pid = pool.exec("select pg_backend_pid()").value<int>();
  ASSERT_TRUE(shared_cluster().terminate_backend(pid));
  // Nobody uses the pool: the periodic check finds the dead connection.
  EXPECT_TRUE(wait_until([&] { return pool.stats().disconnects == 1; }));
  EXPECT_NE(pool.exec("select pg_backend_pid()").value<int>(), pid);
}

TEST(blocking_pool, health_check_keeps_a_healthy_idle_connection) {
  auto p = blocking_params(shared_cluster().conninfo(), 1);
  p.health_check_interval = 100ms;
  blocking_pool pool{p};
  const int pid = pool.exec("select pg_backend_pid()").value<int>();
  // Several check periods pass with the connection idle and alive.
  std::this_thread::sleep_for(800ms);
  EXPECT_EQ(pool.stats().disconnects, 0u);
  EXPECT_EQ(pool.exec("select pg_backend_pid()").value<int>(), pid);
}

TEST(blocking_pool, discarded_lease_is_not_reused) {
  blocking_pool pool{blocking_params(shared_cluster().conninfo(), 1)};
  int pid = 0;
  {
    auto lease = pool.acquire();
    {
      pqxx::nontransaction tx{*lease};
      pid = tx.exec("select pg_backend_pid()")[0][0].as<int>();
      tx.exec("set statement_timeout = 1234");  // session state the next borrower must not inherit
    }  // the transaction object goes before the connection does
    lease.discard();
    EXPECT_FALSE(lease);
  }
  auto r = pool.exec("select pg_backend_pid(), current_setting('statement_timeout')");
  EXPECT_NE(r[0][0].get<int>(), pid);
  EXPECT_EQ(r[0][1].get<std::string>(), "0");
}

TEST(blocking_pool, stats_count_work_and_the_pools_own_threads) {
  blocking_pool pool{blocking_params(shared_cluster().conninfo(), 2)};
  for (int i = 0; i < 5; ++i) (void)pool.exec("select 1");
  const auto s = pool.stats();
  EXPECT_EQ(s.completed, 5u);
  EXPECT_EQ(s.idle + s.busy, 1u);
  EXPECT_GE(s.threads, 1u);  // the housekeeper (+ connector threads while they linger)
  EXPECT_LE(s.threads, 5u);
  EXPECT_EQ(s.loop_lag_max.count(), 0);
  EXPECT_NE(pgpipe::to_prometheus(s).find("pgpipe"), std::string::npos);
}

TEST(blocking_pool, exec_prepares_each_statement_once_per_connection_unless_turned_off) {
  const std::string count_sql = "select count(*) from pg_prepared_statements";
  {
    blocking_pool pool{blocking_params(shared_cluster().conninfo(), 1)};
    for (int i = 0; i < 3; ++i) EXPECT_EQ(pool.exec("select $1::int * 3", i).value<int>(), 3 * i);
    // One statement for the three calls, plus the counting statement itself.
    EXPECT_EQ(pool.exec(count_sql).value<int>(), 2);
    EXPECT_EQ(pool.exec(count_sql).value<int>(), 2);
  }
  {
    auto p = blocking_params(shared_cluster().conninfo(), 1);
    p.prepared_statements = false;  // PgBouncer in transaction mode
    blocking_pool pool{p};
    for (int i = 0; i < 3; ++i) EXPECT_EQ(pool.exec("select $1::int * 3", i).value<int>(), 3 * i);
    EXPECT_EQ(pool.exec(count_sql).value<int>(), 0);
  }
}

// Past the per-connection bound the least recently used statement makes
// room and is really gone from the server, as on the async driver
// (async_sharing_test's an_evicted_statement_is_dropped_on_the_server).
TEST(blocking_pool, an_evicted_statement_is_dropped_on_the_server) {
  blocking_pool pool{blocking_params(shared_cluster().conninfo(), 1)};
  const auto bound = pgpipe::blocking_lease::max_prepared_per_connection;
  for (std::size_t i = 0; i <= bound; ++i) {
    ASSERT_EQ(pool.exec("select " + std::to_string(i)).value<std::size_t>(), i);
  }
  const auto prepared = [&](const std::string& sql) {
    return pool.exec("select count(*) from pg_prepared_statements where statement = $1", sql).value<std::size_t>();
  };
  EXPECT_EQ(prepared("select " + std::to_string(bound)), 1u) << "the newest text runs named";
  EXPECT_EQ(prepared("select 0"), 0u) << "the least recently used statement is still on the server";
  EXPECT_EQ(pool.exec("select count(*) from pg_prepared_statements").value<std::size_t>(), bound);
  EXPECT_EQ(pool.stats().connects, 1u);
}

// A stale statement met inside a transaction block fails that transaction
// (0A000: the block is aborted) and leaves the cache; the server's copy is
// deallocated when the lease comes back, so no name outlives its entry.
TEST(blocking_pool, a_stale_statement_met_in_a_transaction_is_deallocated_when_the_lease_comes_back) {
  shared_cluster().exec("drop table if exists bpool_stale_tx; create table bpool_stale_tx (a int4)");
  blocking_pool pool{blocking_params(shared_cluster().conninfo(), 1)};
  const std::string sql = "select * from bpool_stale_tx";
  (void)pool.exec(sql);  // cached
  shared_cluster().exec("alter table bpool_stale_tx add column b int4 not null default 7");
  {
    auto lease = pool.acquire();
    (void)lease.exec("begin");
    const auto ec = code_of([&] { (void)lease.exec(sql); });
    EXPECT_EQ(pgpipe::sqlstate_of(ec), "0A000");
  }  // rolled back on return
  EXPECT_EQ(pool.exec(sql).columns(), 2u) << "prepared afresh";
  EXPECT_EQ(pool.exec("select count(*) from pg_prepared_statements where statement = $1", sql).value<std::size_t>(), 1u)
      << "the stale statement is still on the server beside its successor";
  EXPECT_EQ(pool.stats().connects, 1u);
}

// statement_for's names are declared to libpqxx and pinned for the
// connection's life; exec() of the same text is another statement (libpqxx
// does not know exec()'s), and filling the cache with exec()'s texts evicts
// those, never a name a user holds.
TEST(blocking_pool, statement_for_names_stay_usable_beside_execs_statements) {
  blocking_pool pool{blocking_params(shared_cluster().conninfo(), 1)};
  auto lease = pool.acquire();
  const std::string sql = "select $1::int + 1";
  const std::string* name = lease.statement_for(sql);
  ASSERT_NE(name, nullptr);
  const std::string held = *name;
  EXPECT_EQ(lease.exec(sql, 1).value<int>(), 2);
  EXPECT_NE(lease.statement_for(sql), nullptr);
  EXPECT_EQ(*lease.statement_for(sql), held) << "the same name for the same text";
  for (std::size_t i = 0; i <= pgpipe::blocking_lease::max_prepared_per_connection; ++i) {
    ASSERT_EQ(lease.exec("select " + std::to_string(i)).value<std::size_t>(), i);
  }
  ASSERT_NE(lease.statement_for(sql), nullptr);
  EXPECT_EQ(*lease.statement_for(sql), held) << "a name handed out is never evicted";
  pqxx::nontransaction tx{*lease};
  EXPECT_EQ(pgpipe::detail::pqxx_exec_prepared(tx, held, 41)[0][0].as<int>(), 42);
}

TEST(blocking_pool, a_statement_that_fails_to_prepare_reports_its_error_every_time) {
  blocking_pool pool{blocking_params(shared_cluster().conninfo(), 1)};
  for (int i = 0; i < 2; ++i) {
    const auto ec = code_of([&] { (void)pool.exec("selec $1::int", i); });
    EXPECT_EQ(pgpipe::sqlstate_of(ec), "42601");
  }
  EXPECT_EQ(pool.exec("select 1").value<int>(), 1);
  EXPECT_EQ(pool.stats().connects, 1u);
}

}  // namespace
