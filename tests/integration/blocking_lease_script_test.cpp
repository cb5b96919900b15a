// blocking_lease::execute_script against a real server: a script of several
// statements as one simple query. The last statement's result, or the first
// error with its diagnostics and nothing of the implicit transaction left
// (also when the script's own COMMIT comes after the failure, which PQexec
// would report as success); an explicit COMMIT's work stays; COPY inside
// it; bad input refused before anything is sent; the lease serves the next
// statement after each.
#include <pgpipe/blocking_pool.hpp>

#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"

#include <gtest/gtest.h>

#include <string>

using pgpipe::test::app_conninfo;
using pgpipe::test::params_for;
using pgpipe::test::shared_cluster;

namespace {

// What execute_script threw: its code and the server's (or client's) message.
struct thrown {
  std::error_code ec;
  std::string message;
};

template <class Fn>
thrown thrown_by(Fn&& fn) {
  try {
    fn();
  } catch (const pgpipe::error& e) {
    return {e.code(), e.diag().message.empty() ? e.diag().client_message : e.diag().message};
  }
  return {};
}

std::string regclass(const std::string& table) {
  return shared_cluster().query_value("select coalesce(to_regclass('" + table + "')::text, 'none')");
}

TEST(blocking_lease_script, a_migration_returns_its_last_statements_result) {
  shared_cluster().exec("drop table if exists bscript_items");
  pgpipe::blocking_pool pool(params_for(app_conninfo("blocking_script"), 1));
  auto lease = pool.acquire();
  const pgpipe::result r = lease.execute_script(
      "create table bscript_items (id int primary key, name text);\n"
      "insert into bscript_items values (1, 'a'), (2, 'b; not a statement');\n"
      "/* a comment; with a semicolon */ select count(*)::int from bscript_items");
  EXPECT_EQ(r.value<int>(), 2);
  EXPECT_EQ(lease.exec("select name from bscript_items where id = $1", 2).value<std::string>(), "b; not a statement");
}

TEST(blocking_lease_script, a_failing_statement_throws_and_leaves_nothing_also_in_a_transaction_the_script_began) {
  shared_cluster().exec("drop table if exists bscript_fail");
  shared_cluster().exec("drop table if exists bscript_fail2");
  pgpipe::blocking_pool pool(params_for(app_conninfo("blocking_script_fail"), 1));
  auto lease = pool.acquire();
  const thrown implicit = thrown_by([&] {
    (void)lease.execute_script("create table bscript_fail (v int); select 1 / 0; insert into bscript_fail values (1)");
  });
  EXPECT_EQ(implicit.ec, pgpipe::make_sqlstate("22012"));
  EXPECT_EQ(implicit.message, "division by zero");
  EXPECT_EQ(regclass("bscript_fail"), "none");
  // The server stops at the error, before the script's COMMIT: the
  // transaction the script began is rolled back, not left open and aborted.
  const thrown explicit_tx = thrown_by([&] {
    (void)lease.execute_script("begin; create table bscript_fail2 (v int); select 1 / 0; commit");
  });
  EXPECT_EQ(explicit_tx.ec, pgpipe::make_sqlstate("22012"));
  EXPECT_EQ(regclass("bscript_fail2"), "none");
  EXPECT_EQ(lease.exec("select 'served'").value<std::string>(), "served");
  // A transaction the caller began stays theirs: aborted, its COMMIT 25P02.
  (void)lease.exec("begin");
  EXPECT_EQ(thrown_by([&] { (void)lease.execute_script("select 1 / 0"); }).ec, pgpipe::make_sqlstate("22012"));
  EXPECT_EQ(thrown_by([&] { (void)lease.exec("commit"); }).ec, pgpipe::make_sqlstate("25P02"));
}

TEST(blocking_lease_script, what_an_explicit_commit_committed_stays_after_a_later_failure) {
  shared_cluster().exec("drop table if exists bscript_committed");
  pgpipe::blocking_pool pool(params_for(app_conninfo("blocking_script_commit"), 1));
  auto lease = pool.acquire();
  const thrown t = thrown_by(
      [&] { (void)lease.execute_script("begin; create table bscript_committed (v int); commit; select 1 / 0"); });
  EXPECT_EQ(t.ec, pgpipe::make_sqlstate("22012"));
  EXPECT_EQ(regclass("bscript_committed"), "bscript_committed");
}

TEST(blocking_lease_script, copy_from_stdin_fails_the_script_and_copy_to_stdout_is_dropped) {
  shared_cluster().exec("drop table if exists bscript_copy");
  shared_cluster().exec("create table bscript_copy (v int)");
  pgpipe::blocking_pool pool(params_for(app_conninfo("blocking_script_copy"), 1));
  auto lease = pool.acquire();
  const thrown t =
      thrown_by([&] { (void)lease.execute_script("insert into bscript_copy values (1); copy bscript_copy from stdin"); });
  EXPECT_EQ(t.ec, pgpipe::make_sqlstate("57014"));
  EXPECT_NE(t.message.find("blocking_copy_in"), std::string::npos) << t.message;
  EXPECT_EQ(shared_cluster().query_value("select count(*) from bscript_copy"), "0");
  const pgpipe::result r =
      lease.execute_script("copy (select g from generate_series(1, 5000) g) to stdout; select 'after'");
  EXPECT_EQ(r.value<std::string>(), "after");
  EXPECT_EQ(lease.exec("select 'served'").value<std::string>(), "served");
}

TEST(blocking_lease_script, bad_input_is_refused_before_anything_is_sent) {
  pgpipe::blocking_pool pool(params_for(app_conninfo("blocking_script_refused"), 1));
  auto lease = pool.acquire();
  const thrown empty = thrown_by([&] { (void)lease.execute_script(" ;; -- nothing\n"); });
  EXPECT_EQ(empty.ec, pgpipe::make_error_code(pgpipe::errc::invalid_argument));
  EXPECT_NE(empty.message.find("no statement"), std::string::npos) << empty.message;
  std::string with_nul = "select 1;";
  with_nul += '\0';
  with_nul += " drop table x";
  const thrown nul = thrown_by([&] { (void)lease.execute_script(with_nul); });
  EXPECT_EQ(nul.ec, pgpipe::make_error_code(pgpipe::errc::invalid_argument));
  EXPECT_NE(nul.message.find("NUL"), std::string::npos) << nul.message;
}

}  // namespace
