// The statement rule of Sync coalescing (async/sync_coalescing.hpp): which
// read-only-marked statements may share a Sync on a read-only session.
#include "async/sansio/sync_coalescing.hpp"

#include <gtest/gtest.h>

namespace {

using pgpipe::detail::may_share_sync;

TEST(sync_coalescing, plain_reads_may_share_a_sync) {
  EXPECT_TRUE(may_share_sync("select ten, so_luong from san_pham where ma = $1"));
  EXPECT_TRUE(may_share_sync("  SELECT 1"));
  EXPECT_TRUE(may_share_sync("\n\t(select 1) union (select 2)"));
  EXPECT_TRUE(may_share_sync("with x as (select 1) select * from x"));
  EXPECT_TRUE(may_share_sync("values (1), (2)"));
  EXPECT_TRUE(may_share_sync("table san_pham"));
  EXPECT_TRUE(may_share_sync("select 1/$1::int"));
}

TEST(sync_coalescing, statements_that_could_leave_read_only_or_act_at_commit_keep_their_own_sync) {
  // A first SET could make the batch's transaction read-write.
  EXPECT_FALSE(may_share_sync("set transaction read write"));
  EXPECT_FALSE(may_share_sync("SET LOCAL transaction_read_only = off"));
  EXPECT_FALSE(may_share_sync("reset all"));
  // Settings for the neighbours, notifications delivered at commit.
  EXPECT_FALSE(may_share_sync("select set_config('search_path', 'x', true)"));
  EXPECT_FALSE(may_share_sync("select SET_CONFIG('a.b', 'x', true)"));
  EXPECT_FALSE(may_share_sync("select pg_notify('c', 'x')"));
  EXPECT_FALSE(may_share_sync("notify c"));
  EXPECT_FALSE(may_share_sync("select pg_catalog.set_config('a.b', 'x', true)"));
  EXPECT_FALSE(may_share_sync("select \"set_config\"('a.b', 'x', true)"));
  // Writes and everything else: not reads by their first word.
  EXPECT_FALSE(may_share_sync("insert into t values (1)"));
  EXPECT_FALSE(may_share_sync("update t set a = 1"));
  EXPECT_FALSE(may_share_sync("do $$ begin perform 1; end $$"));
  EXPECT_FALSE(may_share_sync("call p()"));
  EXPECT_FALSE(may_share_sync("/* a comment */ select 1"));  // conservative: own Sync
  EXPECT_FALSE(may_share_sync("selection"));
  EXPECT_FALSE(may_share_sync("tablespace"));
  EXPECT_FALSE(may_share_sync(""));
  EXPECT_FALSE(may_share_sync("   "));
}

// Every spelling of a name the text check cannot read keeps its own Sync: a
// Unicode-escaped identifier (U&"\0073et_config", any escape character
// chosen with UESCAPE), SQL run from a string (query_to_xml and its kin),
// where E'' escapes or an expression can spell anything, and dblink, which
// acts outside the batch's transaction.
TEST(sync_coalescing, names_the_text_check_cannot_read_keep_their_own_sync) {
  EXPECT_FALSE(may_share_sync("select U&\"\\0073et_config\"('a.b', 'x', true)"));
  EXPECT_FALSE(may_share_sync("select u&\"pg\\005fnotify\"('c', 'x')"));
  EXPECT_FALSE(may_share_sync("select U&\"!0073et_config\" UESCAPE '!' ('a.b', 'x', true)"));
  EXPECT_FALSE(may_share_sync("select pg_catalog.U&\"\\+000073et_config\"('a.b', 'x', true)"));
  EXPECT_FALSE(may_share_sync("select query_to_xml(E'select s\\x65t_config(''a.b'', ''x'', true)', true, true, '')"));
  EXPECT_FALSE(
      may_share_sync("select query_to_xml(convert_from(decode('73656c65637420', 'hex'), 'utf8'), true, true, '')"));
  EXPECT_FALSE(may_share_sync("select * from dblink('dbname=x', 'select 1') as t(a int)"));
  // A reader that merely contains the letters keeps sharing.
  EXPECT_TRUE(may_share_sync("select menu&1 from t"));
  EXPECT_TRUE(may_share_sync("select 'U&' || name from t"));
}

// What the rule cannot promise: it reads the statement, not the bodies of
// the functions it calls. Such a call passes, and only the caller's read-only
// marker vouches for it (docs/reliability.md, "Sync coalescing").
TEST(sync_coalescing, a_function_call_is_judged_by_its_name_only) {
  EXPECT_TRUE(may_share_sync("select notify_and_read($1)"));
}

}  // namespace
