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

}  // namespace
