// async_lease::async_execute_script against a real server: a script of
// several statements as one simple query on a lease. The last statement's
// result, or the first error with its diagnostics and nothing of the
// implicit transaction left; an explicit COMMIT's work stays; it runs in
// order with the lease's other queries and the pipeline works again after
// it; COPY inside it; its timeout cancels it on the server; bad input is
// refused before anything is sent; a session change retires the connection.
#include <pgpipe/async_client.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pgpipe::test::app_conninfo;
using pgpipe::test::params_for;
using pgpipe::test::shared_cluster;

namespace {

// The error a coroutine caught: its code and message.
struct caught {
  std::error_code ec;
  std::string message;
};

TEST(async_lease_script, a_migration_runs_in_order_with_the_leases_queries_and_the_pipeline_works_after) {
  shared_cluster().exec("drop table if exists script_items");
  pgpipe::async_client client(params_for(app_conninfo("lease_script"), 1), {.loops = 1});
  struct seen {
    std::string tag, before, count_after, param_after;
    std::vector<std::string> order;
  };
  const seen s = pgpipe::test::run_on(client, [&]() -> asio::awaitable<seen> {
    seen out;
    auto lease = co_await client.async_acquire(asio::use_awaitable);
    // Started before the script, not awaited: answered before it runs.
    lease.async_query("select count(*)::text from pg_tables where tablename = 'script_items'",
                      [&out](std::error_code ec, pgpipe::result r) {
                        out.before = ec ? ec.message() : r.value<std::string>();
                        out.order.push_back("query");
                      });
    auto r = co_await lease.async_execute_script(
        "create table script_items (id int primary key, name text);\n"
        "insert into script_items values (1, 'a'), (2, 'b');\n"
        "-- a comment; with a semicolon\n"
        "insert into script_items values (3, 'c; not a statement');\n"
        "create index on script_items (name)",
        asio::use_awaitable);
    out.tag = std::string(r.command_tag());
    out.order.push_back("script");
    out.count_after = (co_await lease.async_query("select count(*)::text from script_items", asio::use_awaitable))
                          .value<std::string>();
    out.param_after = (co_await lease.async_query("select name from script_items where id = $1", 3,
                                                  asio::use_awaitable))
                          .value<std::string>();
    co_return out;
  }());
  EXPECT_EQ(s.before, "0");
  EXPECT_EQ(s.order, (std::vector<std::string>{"query", "script"}));
  EXPECT_EQ(s.tag, "CREATE INDEX");
  EXPECT_EQ(s.count_after, "3");
  EXPECT_EQ(s.param_after, "c; not a statement");
}

TEST(async_lease_script, a_failing_statement_throws_its_error_and_leaves_nothing_of_the_script) {
  shared_cluster().exec("drop table if exists script_fail");
  shared_cluster().exec("drop table if exists script_fail2");
  pgpipe::async_client client(params_for(app_conninfo("lease_script_fail"), 1), {.loops = 1});
  struct seen {
    caught error;
    std::string table_after;
    std::error_code explicit_error;
    std::string after_explicit;
  };
  const seen s = pgpipe::test::run_on(client, [&]() -> asio::awaitable<seen> {
    seen out;
    auto lease = co_await client.async_acquire(asio::use_awaitable);
    try {
      (void)co_await lease.async_execute_script(
          "create table script_fail (v int); insert into script_fail values (1); select 1 / 0; "
          "insert into script_fail values (2)",
          asio::use_awaitable);
    } catch (const pgpipe::error& e) {
      out.error = {e.code(), e.diag().message};
    }
    out.table_after = (co_await lease.async_query("select coalesce(to_regclass('script_fail')::text, 'none')",
                                                  asio::use_awaitable))
                          .value<std::string>();
    // The server stops at the error, before the script's COMMIT: the
    // transaction the script began is rolled back, not left open and aborted.
    auto [ec, r] = co_await lease.async_execute_script(
        "begin; create table script_fail2 (v int); select 1 / 0; commit", asio::as_tuple(asio::use_awaitable));
    out.explicit_error = ec;
    out.after_explicit = (co_await lease.async_query(
                              "select coalesce(to_regclass('script_fail2')::text, 'none')", asio::use_awaitable))
                             .value<std::string>();
    co_return out;
  }());
  EXPECT_EQ(s.error.ec, pgpipe::make_sqlstate("22012"));
  EXPECT_EQ(s.error.message, "division by zero");
  EXPECT_EQ(s.table_after, "none") << "the statements before the failure stayed";
  EXPECT_EQ(s.explicit_error, pgpipe::make_sqlstate("22012"));
  EXPECT_EQ(s.after_explicit, "none");
}

TEST(async_lease_script, what_an_explicit_commit_committed_stays_after_a_later_failure) {
  shared_cluster().exec("drop table if exists script_committed");
  pgpipe::async_client client(params_for(app_conninfo("lease_script_commit"), 1), {.loops = 1});
  auto lease = pgpipe::test::acquire(client);
  auto [ec, r] = lease
                     .async_execute_script("begin; create table script_committed (v int); commit; select 1 / 0",
                                           pgpipe::test::use_future_ec)
                     .get();
  (void)r;
  EXPECT_EQ(ec, pgpipe::make_sqlstate("22012"));
  EXPECT_EQ(shared_cluster().query_value("select coalesce(to_regclass('script_committed')::text, 'none')"),
            "script_committed");
}

TEST(async_lease_script, copy_from_stdin_fails_the_script_and_copy_to_stdout_is_dropped) {
  shared_cluster().exec("drop table if exists script_copy");
  shared_cluster().exec("create table script_copy (v int)");
  pgpipe::async_client client(params_for(app_conninfo("lease_script_copy"), 1), {.loops = 1});
  auto lease = pgpipe::test::acquire(client);
  auto [ec, r] = lease.async_execute_script("insert into script_copy values (1); copy script_copy from stdin",
                                            pgpipe::test::use_future_ec)
                     .get();
  EXPECT_EQ(ec, pgpipe::make_sqlstate("57014"));
  EXPECT_NE(r.diag().message.find("async_lease::copy_in"), std::string::npos) << r.diag().message;
  EXPECT_EQ(shared_cluster().query_value("select count(*) from script_copy"), "0");
  auto [ec2, r2] = lease.async_execute_script("copy (select g from generate_series(1, 5000) g) to stdout; select 'after'",
                                              pgpipe::test::use_future_ec)
                       .get();
  ASSERT_FALSE(ec2) << r2.diag().to_string();
  EXPECT_EQ(r2.value<std::string>(), "after");
  auto [ec3, r3] = lease.async_query("select 'served'", pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(ec3) << r3.diag().to_string();
  EXPECT_EQ(r3.value<std::string>(), "served");
}

TEST(async_lease_script, its_timeout_cancels_it_on_the_server_and_the_lease_serves_the_next_query) {
  pgpipe::async_client client(params_for(app_conninfo("lease_script_timeout"), 1), {.loops = 1});
  auto lease = pgpipe::test::acquire(client);
  const auto t0 = std::chrono::steady_clock::now();
  pgpipe::query_options opts;
  opts.timeout = 300ms;
  auto [ec, r] = lease.async_execute_script(opts, "select 1; select pg_sleep(30); select 2", pgpipe::test::use_future_ec)
                     .get();
  (void)r;
  EXPECT_EQ(ec, pgpipe::make_error_code(pgpipe::errc::query_timeout)) << ec.message();
  auto [ec2, r2] = lease.async_query("select 'served'", pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(ec2) << r2.diag().to_string();
  EXPECT_EQ(r2.value<std::string>(), "served");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s) << "the script's sleep was not cancelled";
}

TEST(async_lease_script, bad_input_is_refused_before_anything_is_sent) {
  pgpipe::async_client client(params_for(app_conninfo("lease_script_refused"), 1), {.loops = 1});
  auto lease = pgpipe::test::acquire(client);
  auto [ec, r] = lease.async_execute_script(" ;; -- nothing\n", pgpipe::test::use_future_ec).get();
  EXPECT_EQ(ec, pgpipe::make_error_code(pgpipe::errc::invalid_argument));
  EXPECT_NE(r.diag().client_message.find("no statement"), std::string::npos) << r.diag().client_message;
  std::string with_nul = "select 1;";
  with_nul += '\0';
  with_nul += " drop table x";
  auto [ec2, r2] = lease.async_execute_script(with_nul, pgpipe::test::use_future_ec).get();
  EXPECT_EQ(ec2, pgpipe::make_error_code(pgpipe::errc::invalid_argument));
  EXPECT_NE(r2.diag().client_message.find("NUL"), std::string::npos) << r2.diag().client_message;
  pgpipe::async_lease empty;
  auto [ec3, r3] = empty.async_execute_script("select 1", pgpipe::test::use_future_ec).get();
  EXPECT_EQ(ec3, pgpipe::make_error_code(pgpipe::errc::closed));
  (void)r3;
}

TEST(async_lease_script, a_session_change_in_a_script_does_not_reach_the_next_caller) {
  pgpipe::async_client client(params_for(app_conninfo("lease_script_session"), 1), {.loops = 1});
  {
    auto lease = pgpipe::test::acquire(client);
    auto [ec, r] = lease.async_execute_script("select 1; set application_name = 'changed_by_script'",
                                              pgpipe::test::use_future_ec)
                       .get();
    ASSERT_FALSE(ec) << r.diag().to_string();
  }
  auto [ec, r] = client.async_query("select current_setting('application_name')", pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(ec) << r.diag().to_string();
  EXPECT_NE(r.value<std::string>(), "changed_by_script");
}

}  // namespace
