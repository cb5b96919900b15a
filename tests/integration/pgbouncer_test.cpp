// Both drivers through PgBouncer without prepared-statement tracking
// (tests/support/pgbouncer): Debian 12's 1.18, or a current one with
// max_prepared_statements = 0 (CI's pgbouncer125 label), the way
// applications deploy it: transaction pooling with unnamed statements and
// more callers than PgBouncer has server connections, session pooling with
// named statements, SCRAM with an auth_file verifier made by pgpipe-scram,
// and the clear error when named statements meet a transaction pooler.
#include "support/cluster_fixture.hpp"
#include "support/driver_adapter.hpp"
#include "support/kit.hpp"
#include "support/pgbouncer.hpp"
#include "support/use_future_ec.hpp"

#include <pgpipe/async_client.hpp>
#include <pgpipe/transaction.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using pgpipe::test::outcome;
using pgpipe::test::pgbouncer_instance;
using pgpipe::test::pgbouncer_params;

constexpr int callers = 1000;
constexpr int queries_per_caller = 3;

pgbouncer_params bouncer(const std::string& mode, int default_pool_size) {
  pgbouncer_params b;
  b.pool_mode = mode;
  b.default_pool_size = default_pool_size;
  b.max_client_conn = 100;
  // What 1.18 does, on any version: pgbouncer_prepared_test covers tracking.
  if (pgbouncer_instance::version().tracks_prepared_statements()) b.settings["max_prepared_statements"] = "0";
  return b;
}

pgpipe::pool_params through(const pgbouncer_instance& b, std::size_t max_size, bool prepared) {
  auto p = pgpipe::test::params_for(b.conninfo(), max_size);
  p.prepared_statements = prepared;
  p.acquire_timeout = 120s;  // 1,000 callers on a loaded 2-core box
  p.query_timeout = 120s;
  return p;
}

// What `callers` threads saw, each running `queries_per_caller` queries whose
// answer is a function of the caller and the round.
struct tally {
  std::atomic<int> ok{0};
  std::atomic<int> wrong{0};
  std::mutex mu;
  std::vector<std::string> errors;  // the first few, for the failure message
  std::atomic<int> error_count{0};
};

template <class Driver>
void run_callers(Driver& d, tally& t, int n_callers, int rounds) {
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(n_callers));
  for (int c = 0; c < n_callers; ++c) {
    threads.emplace_back([&, c] {
      for (int r = 0; r < rounds; ++r) {
        const int key = c * 10 + r;
        outcome o = d.run("select ($1::int * 2 + 1)::text", key);
        if (o.ec) {
          t.error_count.fetch_add(1);
          std::lock_guard lk(t.mu);
          if (t.errors.size() < 5) t.errors.push_back(o.text);
        } else if (o.first != std::to_string(key * 2 + 1)) {
          t.wrong.fetch_add(1);
        } else {
          t.ok.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
}

std::string first_errors(tally& t) {
  std::string s;
  for (const auto& e : t.errors) s += e + "\n";
  return s;
}

// Server connections PgBouncer holds for our database (SHOW SERVERS).
std::size_t bouncer_servers(const pgbouncer_instance& b) { return b.admin("SHOW SERVERS").size(); }

template <class Driver>
class pgbouncer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    unsetenv("PGPASSWORD");
    setenv("PGPASSFILE", "/nonexistent/pgpipe-test-pgpass", 1);
  }
};
TYPED_TEST_SUITE(pgbouncer, pgpipe::test::drivers, pgpipe::test::driver_names);

TYPED_TEST(pgbouncer, transaction_pool_serves_1000_callers_with_unnamed_statements) {
  auto& pg = pgpipe::test::shared_cluster();
  pgbouncer_instance b(pg, bouncer("transaction", 4));
  // More client connections than PgBouncer has server connections.
  TypeParam d(through(b, 8, false));
  tally t;
  run_callers(d, t, callers, queries_per_caller);
  EXPECT_EQ(t.error_count.load(), 0) << first_errors(t);
  EXPECT_EQ(t.wrong.load(), 0);
  EXPECT_EQ(t.ok.load(), callers * queries_per_caller);
  EXPECT_LE(bouncer_servers(b), 4u) << "PgBouncer's default_pool_size bounds the server connections";
  EXPECT_EQ(d.log().find("prepared_statements"), std::string::npos) << d.log();
}

TYPED_TEST(pgbouncer, session_pool_keeps_named_statements) {
  auto& pg = pgpipe::test::shared_cluster();
  pgbouncer_instance b(pg, bouncer("session", 8));
  TypeParam d(through(b, 4, true));
  tally t;
  run_callers(d, t, callers, queries_per_caller);
  EXPECT_EQ(t.error_count.load(), 0) << first_errors(t);
  EXPECT_EQ(t.wrong.load(), 0);
  EXPECT_EQ(t.ok.load(), callers * queries_per_caller);
  // The session behind each client connection holds the driver's statements.
  outcome named = d.run("select count(*)::text from pg_prepared_statements where name like 'pgpipe_%'");
  ASSERT_FALSE(named.ec) << named.text;
  EXPECT_GE(std::stoi(named.first), 1);
}

TYPED_TEST(pgbouncer, named_statements_behind_a_transaction_pool_fail_with_a_clear_error) {
  auto pg = pgpipe::test::fresh_cluster();
  // One server connection for every client: the drivers' statement names
  // (pgpipe_1, pgpipe_2...) collide there at once.
  pgbouncer_instance b(*pg, bouncer("transaction", 1));
  auto p = through(b, 2, true);
  p.min_size = 2;
  p.pipeline_depth = 1;  // the async driver uses both connections
  TypeParam d(p);
  // Both client connections open before the load: with only one, nothing
  // collides (the 100 queries can finish before min_size's second connect).
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       d.stats().connects < 2 && std::chrono::steady_clock::now() < until;)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_GE(d.stats().connects, 2u) << "min_size = 2 did not open two connections in 10 s";
  std::atomic<int> failed{0};
  std::atomic<int> opaque{0};
  std::mutex mu;
  std::string sample;
  std::vector<std::thread> threads;
  for (int c = 0; c < 20; ++c) {
    threads.emplace_back([&, c] {
      for (int r = 0; r < 5; ++r) {
        outcome o = d.run("select ($1::int + " + std::to_string(r) + ")::text", c);
        if (!o.ec) continue;
        failed.fetch_add(1);
        const std::string state = pgpipe::sqlstate_of(o.ec);
        if ((state != "42P05" && state != "26000") ||
            o.text.find("prepared_statements = false") == std::string::npos) {
          opaque.fetch_add(1);
          std::lock_guard lk(mu);
          sample = o.text;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_GE(failed.load(), 1) << "two connections naming statements on one server session must collide";
  EXPECT_EQ(opaque.load(), 0) << sample;
  EXPECT_NE(d.log().find("transaction pooler"), std::string::npos) << d.log();
  EXPECT_NE(d.log().find("prepared_statements = false"), std::string::npos) << d.log();
  // Each connection that detected the pooler sends unnamed statements now:
  // nothing fails any more.
  for (int i = 0; i < 20; ++i) {
    outcome o = d.run("select ($1::int + 100)::text", i);
    ASSERT_FALSE(o.ec) << o.text;
    EXPECT_EQ(o.first, std::to_string(i + 100));
  }
}

#ifdef PGPIPE_SCRAM_BIN
// The password goes to the CLI in a file (never as an argument).
std::string verifier_from_cli(const std::string& password, const std::string& dir) {
  const std::string file = dir + "/pw";
  {
    std::ofstream out(file);
    out << password;
  }
  const std::string cmd = std::string(PGPIPE_SCRAM_BIN) + " verifier --password-file " + file;
  std::string text;
  if (FILE* f = popen(cmd.c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, f) != nullptr) text += buf;
    if (pclose(f) != 0) text.clear();
  }
  std::remove(file.c_str());
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

TYPED_TEST(pgbouncer, scram_with_an_auth_file_verifier_made_by_pgpipe_scram) {
  auto pg = pgpipe::test::fresh_cluster();
  const std::string password = "b0uncer-Pw-" + std::to_string(::getpid());
  const std::string verifier = verifier_from_cli(password, pg->base_dir());
  ASSERT_EQ(verifier.rfind("SCRAM-SHA-256$", 0), 0u) << "pgpipe-scram verifier failed";
  // The server keeps the verifier as given, so PgBouncer can log in to it
  // with the keys of the client's SCRAM exchange (same salt and iterations).
  pg->exec("create role app_user login password '" + verifier + "'");
  auto bp = bouncer("transaction", 2);
  bp.users.emplace_back("app_user", verifier);
  pgbouncer_instance b(*pg, bp);
  const std::string base = "host=127.0.0.1 port=" + std::to_string(b.port()) + " dbname=postgres user=app_user";

  auto p = pgpipe::test::fault_params(base + " password=" + password, 2);
  p.prepared_statements = false;
  {
    TypeParam d(p);
    outcome o = d.run("select current_user::text");
    ASSERT_FALSE(o.ec) << o.text;
    EXPECT_EQ(o.first, "app_user");
    pgpipe::test::expect_no_secret(o.text + d.log(), {password}, "outcome and log");
  }
  auto wrong = pgpipe::test::fault_params(base + " password=not-" + password, 1);
  wrong.prepared_statements = false;
  wrong.acquire_timeout = 3s;
  TypeParam bad(wrong);
  outcome o = bad.run("select 1");
  EXPECT_EQ(o.ec, pgpipe::errc_condition::auth_error) << o.text;
  pgpipe::test::expect_no_secret(o.text + bad.log(), {password, "not-" + password}, "refused login");
}
#endif  // PGPIPE_SCRAM_BIN (PGPIPE_BUILD_TOOLS=OFF: the CLI is not built; said at configure time)

// The sharing rules of the async driver's shared path hold the same through
// PgBouncer: they are decided by the driver before anything is sent.
TEST(pgbouncer_async, sharing_rules_are_the_same_as_direct) {
  auto& pg = pgpipe::test::shared_cluster();
  pgbouncer_instance b(pg, bouncer("transaction", 2));
  pgpipe::test::async_driver direct(pgpipe::test::params_for(pg.conninfo(), 1));
  pgpipe::test::async_driver pooled(through(b, 2, false));
  for (const char* sql : {"begin", "start transaction", "set work_mem = '8MB'", "reset all",
                          "create temp table t (v int)", "listen x"}) {
    outcome a = direct.run(sql);
    outcome c = pooled.run(sql);
    EXPECT_TRUE(a.ec) << sql;
    EXPECT_EQ(a.ec, c.ec) << sql << "\ndirect: " << a.text << "\nbouncer: " << c.text;
  }
  outcome after = pooled.run("select current_setting('work_mem')");
  ASSERT_FALSE(after.ec) << after.text;
  EXPECT_EQ(after.first, direct.run("select current_setting('work_mem')").first);
}

// A BEGIN that fails with an SQL error opens no transaction: nothing more
// of the work may be sent, or it would commit statement by statement. A
// transaction pooler makes BEGIN fail for real: another client's statement
// holds the name this connection gives BEGIN on the one server session (42P05).
TEST(pgbouncer_async, a_failed_begin_lets_nothing_of_the_work_run) {
  namespace asio = boost::asio;
  auto& pg = pgpipe::test::shared_cluster();
  pg.exec("drop table if exists begin_fails; create table begin_fails (v int)");
  pgbouncer_instance b(pg, bouncer("transaction", 1));
  pgpipe::async_client first(through(b, 1, true), {.loops = 1});
  // Names statement pgpipe_1 on the only server session.
  auto [fec, fr] = first.async_query("select 1", pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(fec) << fec.message();
  pgpipe::async_client second(through(b, 1, true), {.loops = 1});
  std::error_code later_ec;
  auto done = pgpipe::async_transaction(
      second, {},
      [&](pgpipe::async_lease& l) -> asio::awaitable<std::error_code> {
        // Written with BEGIN: the server skips it. A work that carries on
        // after an error (or writes later) must not get further.
        auto [ec1, r1] = co_await l.async_query("insert into begin_fails values (1)", asio::as_tuple(asio::use_awaitable));
        auto [ec2, r2] = co_await l.async_query("insert into begin_fails values (2)", asio::as_tuple(asio::use_awaitable));
        later_ec = ec2;
        co_return std::error_code{};
      },
      pgpipe::test::use_future_ec);
  auto [ec, report] = done.get();
  EXPECT_EQ(pgpipe::sqlstate_of(ec), "42P05") << ec.message() << " " << report.diag.client_message;
  EXPECT_EQ(later_ec, pgpipe::errc::not_sent) << later_ec.message();
  EXPECT_EQ(pg.query_value("select count(*) from begin_fails"), "0")
      << "a statement of the work ran outside the transaction and committed";
  pg.exec("drop table begin_fails");
}

}  // namespace
