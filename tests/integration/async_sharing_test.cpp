// The shared (pipelined) connection is safe to share: statements that would
// open a transaction or change the session for every neighbour are refused
// before anything is sent, the neighbour's next query on the same connection
// is unaffected, leases may still do all of it, pool_params::on_connect sets
// the session for every connection, and server notices reach the logger,
// never stderr.
#include <pgpipe/pgpipe.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/stderr_capture.hpp"

#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <mutex>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

pgpipe::pool_params one_connection() {
  pgpipe::pool_params p;
  p.conninfo = pgpipe::test::shared_cluster().conninfo();
  p.max_size = 1;  // every query shares the one connection
  return p;
}

std::tuple<std::error_code, pgpipe::result> run(pgpipe::async_client& c, std::string_view sql) {
  return c.async_query(sql, pgpipe::test::use_future_ec).get();
}

std::string value(pgpipe::async_client& c, std::string_view sql) {
  auto [ec, r] = run(c, sql);
  EXPECT_FALSE(ec) << sql << ": " << r.diag().to_string();
  if (ec || r.size() != 1) return "<error>";
  return r[0].get<std::string>(0);
}

// SAVEPOINT outside a transaction block fails with 25P01: the connection is
// not inside anybody's transaction. (now() = statement_timestamp() cannot
// tell: in the extended protocol they differ even in autocommit.)
bool outside_transaction_block(pgpipe::async_client& c) {
  auto [ec, r] = run(c, "savepoint pgpipe_probe");
  return ec == pgpipe::make_sqlstate("25P01");
}

struct refused_case {
  const char* sql;
  pgpipe::errc code;
  const char* named;  // the statement as the message names it
};

}  // namespace

TEST(async_sharing, refuses_each_class_before_sending_and_the_neighbour_is_unaffected) {
  pgpipe::async_client client(one_connection(), {.loops = 1});
  const std::string pid = value(client, "select pg_backend_pid()::text");
  const refused_case cases[] = {
      {"begin", pgpipe::errc::transaction_needs_lease, "BEGIN"},
      {"  -- why not\n START TRANSACTION isolation level serializable", pgpipe::errc::transaction_needs_lease,
       "START TRANSACTION"},
      {"set statement_timeout = 1", pgpipe::errc::session_state_needs_lease, "SET"},
      {"SET SESSION AUTHORIZATION DEFAULT", pgpipe::errc::session_state_needs_lease, "SET SESSION AUTHORIZATION"},
      {"set role none", pgpipe::errc::session_state_needs_lease, "SET ROLE"},
      {"reset all", pgpipe::errc::session_state_needs_lease, "RESET"},
      {"listen pgpipe_jobs", pgpipe::errc::session_state_needs_lease, "LISTEN"},
      {"unlisten *", pgpipe::errc::session_state_needs_lease, "UNLISTEN"},
      {"prepare pgpipe_q as select 1", pgpipe::errc::session_state_needs_lease, "PREPARE"},
      {"deallocate all", pgpipe::errc::session_state_needs_lease, "DEALLOCATE"},
      {"discard all", pgpipe::errc::session_state_needs_lease, "DISCARD"},
      {"declare c cursor with hold for select 1", pgpipe::errc::session_state_needs_lease, "DECLARE"},
      {"load 'plpgsql'", pgpipe::errc::session_state_needs_lease, "LOAD"},
      {"copy (select 1) to stdout", pgpipe::errc::session_state_needs_lease, "COPY"},
      {"create temp table pgpipe_shared_tmp (a int)", pgpipe::errc::session_state_needs_lease, "CREATE TEMP TABLE"},
      {"select 1 as a into temp pgpipe_shared_tmp2", pgpipe::errc::session_state_needs_lease, "SELECT INTO TEMP"},
      {"select set_config('statement_timeout', '1', false)", pgpipe::errc::session_state_needs_lease, "set_config"},
      {"select pg_advisory_lock(4242)", pgpipe::errc::session_state_needs_lease, "pg_advisory_lock()"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.sql);
    auto [ec, r] = run(client, c.sql);
    EXPECT_EQ(ec, c.code);
    EXPECT_FALSE(r.diag().has_server_error());
    EXPECT_NE(r.diag().client_message.find(c.named), std::string::npos) << r.diag().client_message;
    // The neighbour's next query runs on the same connection, outside any
    // transaction, with the session as it was.
    EXPECT_EQ(value(client, "select pg_backend_pid()::text"), pid);
    EXPECT_TRUE(outside_transaction_block(client));
    EXPECT_EQ(value(client, "show statement_timeout"), "0");
    EXPECT_EQ(value(client, "select count(*)::text from pg_listening_channels()"), "0");
    EXPECT_EQ(value(client, "select count(*)::text from pg_prepared_statements where name = 'pgpipe_q'"), "0");
    EXPECT_EQ(value(client, "select coalesce(to_regclass('pg_temp.pgpipe_shared_tmp')::text, 'none')"), "none");
    EXPECT_EQ(value(client, "select count(*)::text from pg_locks where locktype = 'advisory' and pid = " + pid),
              "0");
  }
}

TEST(async_sharing, allows_statements_that_only_mention_keywords) {
  pgpipe::async_client client(one_connection(), {.loops = 1});
  EXPECT_EQ(value(client, "select 'begin; set x = 1'"), "begin; set x = 1");
  EXPECT_EQ(value(client, "select set_config('pgpipe.x', 'local', true)"), "local");
  EXPECT_EQ(value(client, "select (select 1 as reset_at)::text /* begin */"), "1");
  auto [ec, r] = run(client, "set local statement_timeout = 5000");  // ends with its implicit transaction
  EXPECT_FALSE(ec) << r.diag().to_string();
  EXPECT_EQ(value(client, "show statement_timeout"), "0");
}

TEST(async_sharing, a_lease_may_open_transactions_and_change_its_session) {
  pgpipe::async_client client(one_connection(), {.loops = 1});
  {
    auto [ec, l] = client.async_acquire(pgpipe::test::use_future_ec).get();
    ASSERT_FALSE(ec);
    for (const char* sql : {"begin", "set local statement_timeout = 7000", "create temp table pgpipe_lease_tmp (a int)",
                            "commit"}) {
      auto [qec, r] = l.async_query(sql, pgpipe::test::use_future_ec).get();
      EXPECT_FALSE(qec) << sql << ": " << r.diag().to_string();
    }
  }
  EXPECT_TRUE(outside_transaction_block(client));
}

TEST(async_sharing, on_connect_sets_the_session_of_every_connection) {
  auto p = one_connection();
  p.max_size = 3;
  p.on_connect = {"set search_path = pgpipe_on_connect, public", "set timezone = 'Asia/Ho_Chi_Minh'",
                  "set application_name = 'pgpipe-oc'"};
  pgpipe::async_client client(p, {.loops = 2});
  // Many at once, so that more than one connection serves them.
  std::vector<std::future<std::tuple<std::error_code, pgpipe::result>>> fs;
  for (int i = 0; i < 60; ++i)
    fs.push_back(client.async_query(
        "select current_setting('search_path') || '|' || current_setting('TimeZone') || '|' || "
        "current_setting('application_name') || '|' || pg_sleep(0.001)::text",
        pgpipe::test::use_future_ec));
  for (auto& f : fs) {
    auto [ec, r] = f.get();
    ASSERT_FALSE(ec) << r.diag().to_string();
    EXPECT_EQ(r[0].get<std::string>(0), "pgpipe_on_connect, public|Asia/Ho_Chi_Minh|pgpipe-oc|");
  }
}

TEST(async_sharing, a_failing_on_connect_statement_fails_the_connect_clearly) {
  auto p = one_connection();
  p.on_connect = {"set timezone = 'UTC'", "set pgpipe_no_such_setting = 1"};
  p.acquire_timeout = 1500ms;
  pgpipe::async_client client(p, {.loops = 1});
  auto [ec, r] = run(client, "select 1");
  EXPECT_EQ(ec, pgpipe::make_sqlstate("42704")) << ec.message() << " " << r.diag().to_string();
  const std::string m = r.diag().to_string();
  EXPECT_NE(m.find("on_connect[1]"), std::string::npos) << m;
  EXPECT_NE(m.find("pgpipe_no_such_setting"), std::string::npos) << m;
}

TEST(async_sharing, notices_and_warnings_go_to_the_logger_never_stderr) {
  std::mutex mu;
  std::vector<std::pair<pgpipe::log_level, std::string>> lines;
  pgpipe::async_client_options o;
  o.loops = 1;
  o.logger = [&](pgpipe::log_level lvl, std::string_view line) {
    std::lock_guard lk(mu);
    lines.emplace_back(lvl, std::string(line));
  };
  pgpipe::async_client client(one_connection(), o);
  const std::string pid = value(client, "select pg_backend_pid()::text");
  std::string printed;
  {
    pgpipe::test::stderr_capture cap;
    auto [ec, r] =
        run(client, "do $$ begin raise notice 'pgpipe-notice-1'; raise warning 'pgpipe-warning-2'; end $$");
    printed = cap.text();
    EXPECT_FALSE(ec) << r.diag().to_string();
  }
  EXPECT_EQ(printed, "");
  std::lock_guard lk(mu);
  auto find = [&](const std::string& needle) -> const std::pair<pgpipe::log_level, std::string>* {
    for (const auto& l : lines)
      if (l.second.find(needle) != std::string::npos) return &l;
    return nullptr;
  };
  const auto* notice = find("pgpipe-notice-1");
  const auto* warning = find("pgpipe-warning-2");
  ASSERT_NE(notice, nullptr);
  ASSERT_NE(warning, nullptr);
  EXPECT_EQ(notice->first, pgpipe::log_level::info);
  EXPECT_EQ(warning->first, pgpipe::log_level::warning);
  EXPECT_NE(notice->second.find("NOTICE"), std::string::npos) << notice->second;
  EXPECT_NE(notice->second.find("backend pid " + pid), std::string::npos) << notice->second;
  EXPECT_NE(warning->second.find("slot "), std::string::npos) << warning->second;
}

TEST(async_sharing, a_lease_that_changed_its_session_is_not_shared_afterwards) {
  pgpipe::async_client client(one_connection(), {.loops = 1});
  std::string lease_pid;
  {
    auto [ec, l] = client.async_acquire(pgpipe::test::use_future_ec).get();
    ASSERT_FALSE(ec);
    auto [pec, pr] = l.async_query("select pg_backend_pid()::text", pgpipe::test::use_future_ec).get();
    ASSERT_FALSE(pec);
    lease_pid = pr[0].get<std::string>(0);
    auto [sec, sr] = l.async_query("set statement_timeout = 4321", pgpipe::test::use_future_ec).get();
    ASSERT_FALSE(sec) << sr.diag().to_string();
  }
  // The connection was retired: the shared callers get a fresh session.
  EXPECT_EQ(value(client, "show statement_timeout"), "0");
  EXPECT_NE(value(client, "select pg_backend_pid()::text"), lease_pid);
}

TEST(async_sharing, a_lease_that_only_used_its_transaction_keeps_its_connection) {
  pgpipe::async_client client(one_connection(), {.loops = 1});
  const std::string pid = value(client, "select pg_backend_pid()::text");
  {
    auto [ec, l] = client.async_acquire(pgpipe::test::use_future_ec).get();
    ASSERT_FALSE(ec);
    for (const char* sql : {"begin", "set local statement_timeout = 4321", "commit"}) {
      auto [qec, r] = l.async_query(sql, pgpipe::test::use_future_ec).get();
      ASSERT_FALSE(qec) << sql << ": " << r.diag().to_string();
    }
  }
  EXPECT_EQ(value(client, "select pg_backend_pid()::text"), pid);
}

TEST(async_sharing, a_lease_with_a_temp_table_dropped_at_commit_keeps_its_connection) {
  pgpipe::async_client client(one_connection(), {.loops = 1});
  const std::string pid = value(client, "select pg_backend_pid()::text");
  {
    auto [ec, l] = client.async_acquire(pgpipe::test::use_future_ec).get();
    ASSERT_FALSE(ec);
    for (const char* sql : {"begin", "create temporary table pgpipe_ord(n int) on commit drop", "commit"}) {
      auto [qec, r] = l.async_query(sql, pgpipe::test::use_future_ec).get();
      ASSERT_FALSE(qec) << sql << ": " << r.diag().to_string();
    }
  }
  EXPECT_EQ(value(client, "select pg_backend_pid()::text"), pid);
}

namespace {

// Past the per-connection bound the least recently used statement makes room,
// and is really gone from the server: with a protocol-level Close where the
// loaded libpq has PQsendClosePrepared (17+), with DEALLOCATE where not.
// stats() says which.
TEST(async_sharing, an_evicted_statement_is_dropped_on_the_server) {
  pgpipe::async_client client(one_connection());
  constexpr std::size_t bound = 1000;  // default_statement_capacity (core/statements)
  for (std::size_t i = 0; i <= bound; ++i) {
    ASSERT_EQ(value(client, "select '" + std::to_string(i) + "'::text"), std::to_string(i));
  }
  EXPECT_EQ(value(client, "select count(*)::text from pg_prepared_statements"), std::to_string(bound));
  EXPECT_EQ(value(client, "select count(*)::text from pg_prepared_statements where statement = 'select ''0''::text'"),
            "0")
      << "the least recently used statement is still on the server";
  EXPECT_EQ(value(client, "select count(*)::text from pg_prepared_statements where statement = 'select ''1000''::text'"),
            "1");
  const pgpipe::runtime_info rt = client.stats().runtime;
  EXPECT_EQ(rt.fast_paths.close_prepared, PQlibVersion() >= 170000);
  EXPECT_EQ(rt.fast_paths.pipeline_sync, PQlibVersion() >= 170000);
  EXPECT_EQ(rt.fast_paths.cancel_on_loop, PQlibVersion() >= 170000);
  EXPECT_EQ(client.stats().connects, 1u);
}

}  // namespace
