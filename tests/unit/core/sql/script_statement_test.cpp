// What execute_script accepts and what it leaves behind, decided from the
// text (core/sql/script_statement.hpp), for both drivers.
#include "core/sql/script_statement.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using pgpipe::detail::check_script;
using pgpipe::detail::leaves_session_changed;

TEST(script_statement, a_script_of_plain_statements_is_accepted_and_changes_nothing) {
  const auto c = check_script("create table t(a int); insert into t values (1); select * from t", "execute_script");
  EXPECT_EQ(c.refusal, "");
  EXPECT_FALSE(c.changes_session);
}

TEST(script_statement, a_nul_byte_is_refused_naming_the_call) {
  const std::string sql("select 1;\0 drop table t", 23);
  const auto c = check_script(sql, "async_execute_script");
  EXPECT_EQ(c.refusal,
            "async_execute_script: SQL text contains a NUL byte at offset 9 (libpq would cut the text there); "
            "nothing was sent");
}

TEST(script_statement, a_text_without_a_statement_is_refused) {
  for (const char* sql : {"", " ;; ", "-- only a comment\n", "/* nothing */ ;"}) {
    const auto c = check_script(sql, "execute_script");
    EXPECT_EQ(c.refusal, "execute_script: the script holds no statement; nothing was sent") << '"' << sql << '"';
  }
}

TEST(script_statement, a_session_change_anywhere_in_the_script_is_seen) {
  EXPECT_TRUE(check_script("select 1; set search_path = x; select 2", "execute_script").changes_session);
  EXPECT_TRUE(check_script("begin; listen ch; commit", "execute_script").changes_session);
  EXPECT_FALSE(check_script("begin; set local work_mem = '1MB'; commit", "execute_script").changes_session);
  EXPECT_FALSE(check_script("select 'set x = 1'; select 2", "execute_script").changes_session);
}

TEST(script_statement, only_changes_that_outlive_the_transaction_count) {
  EXPECT_TRUE(leaves_session_changed("create temp table t(a int)"));
  EXPECT_FALSE(leaves_session_changed("create temp table t(a int) on commit drop"));
  EXPECT_FALSE(leaves_session_changed("begin"));  // a transaction, not a session change
  EXPECT_FALSE(leaves_session_changed("select 1"));
}

}  // namespace
