// Which statements the shared (pipelined) path refuses before sending:
// src/core/shared_statement.*. Both directions matter: every class of
// session-changing statement is refused with its name, and nothing that only
// mentions a keyword (a string, a column, a comment, a DO body) is.
#include "core/sql/shared_statement.hpp"

#include <gtest/gtest.h>

#include <string>

namespace pgpipe::detail {
namespace {

struct refused_case {
  const char* sql;
  errc code;
  const char* statement;
};

TEST(shared_statement, refuses_transactions_and_session_changes) {
  const refused_case cases[] = {
      {"BEGIN", errc::transaction_needs_lease, "BEGIN"},
      {"begin isolation level serializable", errc::transaction_needs_lease, "BEGIN"},
      {"  \n\t-- a comment\n  Begin;", errc::transaction_needs_lease, "BEGIN"},
      {"/* outer /* nested */ still comment */ begin", errc::transaction_needs_lease, "BEGIN"},
      {"start transaction read only", errc::transaction_needs_lease, "START TRANSACTION"},
      {"START\nTRANSACTION", errc::transaction_needs_lease, "START TRANSACTION"},
      {"set statement_timeout = 1", errc::session_state_needs_lease, "SET"},
      {"SET search_path TO app, public", errc::session_state_needs_lease, "SET"},
      {"set session timezone = 'UTC'", errc::session_state_needs_lease, "SET SESSION"},
      {"set role app_reader", errc::session_state_needs_lease, "SET ROLE"},
      {"SET SESSION AUTHORIZATION app", errc::session_state_needs_lease, "SET SESSION AUTHORIZATION"},
      {"set session characteristics as transaction read only", errc::session_state_needs_lease,
       "SET SESSION CHARACTERISTICS"},
      {"reset all", errc::session_state_needs_lease, "RESET"},
      {"RESET search_path", errc::session_state_needs_lease, "RESET"},
      {"listen jobs", errc::session_state_needs_lease, "LISTEN"},
      {"unlisten *", errc::session_state_needs_lease, "UNLISTEN"},
      {"prepare q(int) as select $1", errc::session_state_needs_lease, "PREPARE"},
      {"deallocate all", errc::session_state_needs_lease, "DEALLOCATE"},
      {"discard all", errc::session_state_needs_lease, "DISCARD"},
      {"declare c cursor with hold for select 1", errc::session_state_needs_lease, "DECLARE"},
      {"load 'auto_explain'", errc::session_state_needs_lease, "LOAD"},
      {"copy t to stdout", errc::session_state_needs_lease, "COPY"},
      {"COPY t FROM STDIN", errc::session_state_needs_lease, "COPY"},
      {"create temp table t (a int)", errc::session_state_needs_lease, "CREATE TEMP TABLE"},
      {"CREATE TEMPORARY TABLE t AS SELECT 1", errc::session_state_needs_lease, "CREATE TEMP TABLE"},
      {"create local temporary table t (a int)", errc::session_state_needs_lease, "CREATE TEMP TABLE"},
      {"create global temp sequence s", errc::session_state_needs_lease, "CREATE TEMP SEQUENCE"},
      {"create or replace temp view v as select 1", errc::session_state_needs_lease, "CREATE TEMP VIEW"},
      {"create table pg_temp.t (a int)", errc::session_state_needs_lease, "CREATE TABLE pg_temp.*"},
      {"select 1 as a into temp t", errc::session_state_needs_lease, "SELECT INTO TEMP"},
      {"with x as (select 1) select * into temporary table t from x", errc::session_state_needs_lease,
       "SELECT INTO TEMP"},
      {"select set_config('search_path', 'app', false)", errc::session_state_needs_lease,
       "set_config(..., is_local => false)"},
      {"SELECT pg_catalog.SET_CONFIG('TimeZone', 'UTC', $1)", errc::session_state_needs_lease,
       "set_config(..., is_local => false)"},
      {"select pg_advisory_lock(42)", errc::session_state_needs_lease, "pg_advisory_lock()"},
      {"select pg_try_advisory_lock_shared(1, 2)", errc::session_state_needs_lease,
       "pg_try_advisory_lock_shared()"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.sql);
    auto r = check_shared_statement(c.sql);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->code, c.code);
    EXPECT_EQ(r->statement, c.statement);
    // The message names the statement and the way out.
    EXPECT_NE(r->message.find(c.statement), std::string::npos) << r->message;
    EXPECT_NE(r->message.find("lease"), std::string::npos) << r->message;
    EXPECT_NE(r->message.find("Nothing was sent"), std::string::npos);
  }
}

TEST(shared_statement, session_messages_point_to_on_connect) {
  auto r = check_shared_statement("set search_path = app");
  ASSERT_TRUE(r);
  EXPECT_NE(r->message.find("pool_params::on_connect"), std::string::npos);
  auto b = check_shared_statement("begin");
  ASSERT_TRUE(b);
  EXPECT_NE(b->message.find("async_acquire"), std::string::npos);
  EXPECT_NE(b->message.find("pgpipe::async_transaction"), std::string::npos);
  auto c = check_shared_statement("copy t from stdin");
  ASSERT_TRUE(c);
  EXPECT_NE(c->message.find("copy_in"), std::string::npos) << c->message;
  // LISTEN's way out is a listener: a lease returns its connection (and its
  // channels) to the pool, and a transaction pooler cannot keep one at all.
  for (const char* sql : {"listen jobs", "UNLISTEN *"}) {
    auto l = check_shared_statement(sql);
    ASSERT_TRUE(l) << sql;
    EXPECT_NE(l->message.find("pgpipe::async_listener"), std::string::npos) << l->message;
    EXPECT_NE(l->message.find("blocking_listener"), std::string::npos) << l->message;
    EXPECT_NE(l->message.find("transaction pooler"), std::string::npos) << l->message;
  }
}

TEST(shared_statement, allows_what_only_mentions_a_keyword) {
  const char* allowed[] = {
      "select 1",
      "select 'begin'",
      "select 'set search_path = x; begin'",
      "select e'it\\'s; begin'",
      "select $$begin; set x = 1$$",
      "select $tag$ begin $tag$ || 'x'",
      "select reset_at, begin_time, set_config_name from jobs",
      "select \"begin\" from t",
      "update jobs set reset_at = now() where id = $1",
      "insert into settings (name) values ('set role x')",
      "-- begin\nselect 1",
      "/* begin /* set */ reset */ select 1",
      "set local statement_timeout = 100",
      "SET LOCAL search_path TO app",
      "set transaction isolation level serializable",
      "set constraints all deferred",
      "select set_config('search_path', 'app', true)",
      "select set_config('a.b', (select 'x'), 'true')",
      "select set_config('a.b', f(1, 2), TRUE)",
      "select pg_advisory_xact_lock(42)",
      "prepare transaction 'tx1'",
      "commit prepared 'tx1'",
      "commit",
      "rollback",
      "notify jobs, 'payload'",
      "do $$ begin raise notice 'x'; end $$",
      "create table t (a int)",
      "create table temp_stuff (a int)",
      "create view v as select 1",
      "alter table t reset (fillfactor)",
      "alter role app set search_path = app",
      "select * from temp_table",
      "insert into temp select 1",
      "select a into strict x from t",
      "explain select 1",
      "",
      "   ",
      "-- only a comment",
      "/* unterminated",
      "select 'unterminated",
      "values (1)",
      "with w as (select 1) select * from w",
      "execute q(1)",
  };
  for (const char* sql : allowed) {
    SCOPED_TRACE(sql);
    auto r = check_shared_statement(sql);
    EXPECT_FALSE(r.has_value()) << r->statement;
  }
}

TEST(shared_statement, temp_tables_dropped_at_commit_do_not_outlive_the_transaction) {
  auto dropped = check_shared_statement("create temporary table ord(n int) on commit drop");
  ASSERT_TRUE(dropped);
  EXPECT_EQ(dropped->code, errc::session_state_needs_lease);  // still refused on the shared path
  EXPECT_FALSE(dropped->outlives_transaction);
  auto kept = check_shared_statement("create temp table t(n int) on commit delete rows");
  ASSERT_TRUE(kept);
  EXPECT_TRUE(kept->outlives_transaction);
  auto quoted = check_shared_statement("create temp table t(note text default 'on commit drop')");
  ASSERT_TRUE(quoted);
  EXPECT_TRUE(quoted->outlives_transaction);
  EXPECT_TRUE(check_shared_statement("set search_path = x")->outlives_transaction);
}

TEST(shared_statement, quoting_is_not_confused_by_escapes) {
  // '' inside a string does not end it; the BEGIN after the string is real.
  EXPECT_FALSE(check_shared_statement("select 'it''s; begin'"));
  EXPECT_TRUE(check_shared_statement("select 'x''y', set_config('a', 'b', false)"));
  // A comment marker inside a string is not a comment.
  EXPECT_TRUE(check_shared_statement("select '--', pg_advisory_lock(1)"));
  EXPECT_FALSE(check_shared_statement("select '/*', 1 -- pg_advisory_lock(1)"));
}

TEST(shared_statement, session_calls_are_found_among_other_underscores_in_any_case) {
  // The search for set_config and advisory locks starts at underscores:
  // others before, between and after must not hide a call, nor a case.
  auto r = check_shared_statement("update a_b set c_d = set_config('x_y', 'z', false) where e_f = 1");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->statement, "set_config(..., is_local => false)");
  r = check_shared_statement("select x_y, Pg_Advisory_Lock(1) from t_z");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->statement, "pg_advisory_lock()");
  r = check_shared_statement("select _, __, pg_try_advisory_lock(1)");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->statement, "pg_try_advisory_lock()");
  EXPECT_FALSE(check_shared_statement("select a_set_config_b, advisory_locks_x from t_u"));
  EXPECT_FALSE(check_shared_statement("select set_confi, advisory_loc"));
}

TEST(shared_statement, classify_decides_as_check_without_a_message) {
  for (const char* sql : {"begin", "set search_path = x", "copy t to stdout", "listen c",
                          "create temp table t (a int) on commit drop", "select pg_advisory_lock(1)", "select 1"}) {
    SCOPED_TRACE(sql);
    const auto checked = check_shared_statement(sql);
    const auto classified = classify_shared_statement(sql);
    ASSERT_EQ(checked.has_value(), classified.has_value());
    if (!checked) continue;
    EXPECT_EQ(classified->code, checked->code);
    EXPECT_EQ(classified->statement, checked->statement);
    EXPECT_EQ(classified->outlives_transaction, checked->outlives_transaction);
    EXPECT_TRUE(classified->message.empty());
    EXPECT_FALSE(checked->message.empty());
  }
}

}  // namespace
}  // namespace pgpipe::detail
