// pipeline_core unit tests (fake server: pipeline_core_harness.hpp).
// Chains: lease requests marked `chained` share the next one's Sync (a
// transaction sent as one pipeline); a request the server skipped after an
// error in its chain completes as skipped and is never written again.
#include "pipeline_core_harness.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {
using namespace pgpipe::test::pipeline_harness;

pipe_request link(std::string sql, bool more) {
  auto r = lease_req(std::move(sql));
  r.chained = more;
  return r;
}

// BEGIN, three statements, COMMIT: the chain's last request carries the Sync.
void submit_chain(harness& h, pipe_id first) {
  h.submit(first, link("begin", true));
  h.submit(first + 1, link("update a", true));
  h.submit(first + 2, link("update b", true));
  h.submit(first + 3, link("insert c", true));
  h.submit(first + 4, link("commit", false));
}

TEST(pipeline_core_chain, a_chain_is_one_segment_with_one_sync_and_parses_inside_it) {
  auto p = base_params();
  p.depth = 16;
  p.max_prepared = 10;
  harness h(p);
  submit_chain(h, 1);
  h.write();
  EXPECT_EQ(syncs_of(h), (std::vector<bool>{false, false, false, false, true}));
  EXPECT_EQ(h.core.syncs_sent(), 1u);
  // First use of each text: every one carries its Parse, mid-chain too.
  for (const auto& w : h.sent_log) EXPECT_TRUE(w.parse);
  for (int i = 0; i < 4; ++i) h.reply();
  EXPECT_TRUE(h.outcomes.empty());  // decided at the Sync
  h.reply();
  EXPECT_EQ(h.completion_order, (std::vector<pipe_id>{1, 2, 3, 4, 5}));
  for (pipe_id id = 1; id <= 5; ++id) EXPECT_EQ(h.outcome(id), pipe_outcome::ok);
  // Prepared now: the next chain sends no Parse.
  submit_chain(h, 6);
  h.write();
  for (std::size_t i = 5; i < h.sent_log.size(); ++i) EXPECT_FALSE(h.sent_log[i].parse);
}

TEST(pipeline_core_chain, an_error_mid_chain_skips_the_rest_which_complete_skipped_and_are_not_resent) {
  auto p = base_params();
  p.depth = 16;
  p.max_prepared = 10;
  harness h(p);
  submit_chain(h, 1);
  h.write();
  h.reply();                                 // begin
  h.reply({pipe_result::error, "23505"});    // update a fails
  h.reply();                                 // update b: skipped (the fake aborts it)
  h.reply();                                 // insert c: skipped
  server_answer last;
  last.tx = tx_state::failed;                // BEGIN ran: the block is aborted
  h.reply(last);                             // commit: skipped, then the Sync
  EXPECT_EQ(h.outcome(1), pipe_outcome::ok);
  EXPECT_EQ(h.outcome(2), pipe_outcome::sql_error);
  EXPECT_EQ(h.outcome(3), pipe_outcome::skipped);
  EXPECT_EQ(h.outcome(4), pipe_outcome::skipped);
  EXPECT_EQ(h.outcome(5), pipe_outcome::skipped);
  for (pipe_id id = 1; id <= 5; ++id) EXPECT_EQ(h.completions(id), 1u);
  EXPECT_EQ(h.core.written(), 0u);
  EXPECT_EQ(h.core.waiting(), 0u);
  h.write();
  EXPECT_EQ(h.sent_log.size(), 5u);  // nothing written again
  // The skipped Parses made no statements: the next use parses again.
  h.submit(6, lease_req("update b"));
  h.write();
  EXPECT_TRUE(h.sent_log.back().parse);
}

TEST(pipeline_core_chain, the_depth_limit_closes_a_chain_with_a_sync_rather_than_leaving_it_open) {
  auto p = base_params();
  p.depth = 3;
  p.max_prepared = 10;  // no eviction (its DEALLOCATE has a Sync of its own)
  harness h(p);
  submit_chain(h, 1);
  h.write();
  EXPECT_EQ(syncs_of(h), (std::vector<bool>{false, false, true}));
  h.reply();
  h.reply();
  h.reply();
  h.write();
  EXPECT_EQ(syncs_of(h), (std::vector<bool>{false, false, true, false, true}));
  h.reply();
  h.reply();
  for (pipe_id id = 1; id <= 5; ++id) EXPECT_EQ(h.outcome(id), pipe_outcome::ok);
}

TEST(pipeline_core_chain, a_chained_request_with_nothing_behind_it_gets_its_own_sync) {
  harness h;
  h.submit(1, link("begin", true));
  h.write();
  EXPECT_EQ(syncs_of(h), (std::vector<bool>{true}));
  h.reply();
  EXPECT_EQ(h.outcome(1), pipe_outcome::ok);
  // Shared requests never chain.
  auto s = shared_req();
  s.chained = true;
  h.submit(2, s);
  h.submit(3, shared_req());
  h.write();
  EXPECT_EQ(syncs_of(h), (std::vector<bool>{true, true, true}));
}

// A transaction helper's chain: BEGIN opens the unit, the rest is its work.
pipe_request opener(bool more) {
  auto r = link("begin", more);
  r.opens_unit = true;
  return r;
}
pipe_request work(std::string sql, bool more) {
  auto r = link(std::move(sql), more);
  r.in_unit = true;
  return r;
}

TEST(pipeline_core_chain, a_chain_split_by_the_depth_limit_whose_begin_failed_writes_nothing_more) {
  auto p = base_params();
  p.depth = 3;
  p.max_prepared = 10;
  harness h(p);
  h.submit(1, opener(true));
  h.submit(2, work("insert a", true));
  h.submit(3, work("insert b", true));
  h.submit(4, work("insert c", true));
  h.submit(5, work("commit", false));
  h.write();
  ASSERT_EQ(h.sent_log.size(), 3u);
  h.reply({pipe_result::error, "0A000"});  // BEGIN fails (SERIALIZABLE on a standby): nothing is open
  h.reply();
  h.reply();
  h.write();
  EXPECT_EQ(h.sent_log.size(), 3u) << "the rest of the chain would run outside any transaction";
  EXPECT_EQ(h.outcome(1), pipe_outcome::sql_error);
  EXPECT_EQ(h.outcome(2), pipe_outcome::skipped);
  EXPECT_EQ(h.outcome(4), pipe_outcome::unit_failed);
  EXPECT_EQ(h.outcome(5), pipe_outcome::unit_failed);
  // A request outside the unit is written as usual.
  h.submit(6, lease_req("rollback"));
  h.write();
  EXPECT_EQ(h.sent_log.size(), 4u);
}

TEST(pipeline_core_chain, work_that_misses_begins_segment_waits_for_begins_answer) {
  for (const bool begin_fails : {true, false}) {
    harness h;
    h.submit(1, opener(true));
    h.write();  // BEGIN alone: the work had not started its first statement
    EXPECT_EQ(syncs_of(h), (std::vector<bool>{true}));
    h.submit(2, work("insert a", false));
    h.submit(3, work("insert b", false));
    h.write();
    EXPECT_EQ(h.sent_log.size(), 1u) << "written before BEGIN's answer, it could run outside the transaction";
    if (begin_fails) {
      h.reply({pipe_result::error, "0A000"});
    } else {
      server_answer ok;
      ok.tx = tx_state::in_transaction;
      h.reply(ok);
    }
    h.write();
    if (begin_fails) {
      EXPECT_EQ(h.sent_log.size(), 1u);
      EXPECT_EQ(h.outcome(2), pipe_outcome::unit_failed);
      EXPECT_EQ(h.outcome(3), pipe_outcome::unit_failed);
    } else {
      EXPECT_EQ(h.sent_log.size(), 3u);
      EXPECT_EQ(h.completions(2), 0u);
    }
  }
}

TEST(pipeline_core_chain, a_full_statement_cache_never_splits_a_chain) {
  auto p = base_params();
  p.depth = 16;
  p.max_prepared = 2;
  harness h(p);
  h.submit(1, lease_req("select 1"));
  h.submit(2, lease_req("select 2"));
  h.write();
  h.reply();
  h.reply();
  ASSERT_EQ(h.core.statements().size(), 2u);  // full
  h.submit(3, opener(true));
  h.submit(4, work("insert a", true));
  h.submit(5, work("commit", false));
  h.write();
  // BEGIN may evict (its DEALLOCATE goes ahead of the chain); inside the
  // chain a statement that finds the cache full goes unnamed.
  std::size_t at = 0;
  while (at < h.sent_log.size() && h.sent_log[at].id != 3) ++at;
  ASSERT_LT(at, h.sent_log.size());
  std::vector<bool> chain_syncs;
  for (std::size_t i = at; i < h.sent_log.size(); ++i) {
    EXPECT_FALSE(h.sent_log[i].internal) << "a DEALLOCATE, and its Sync, inside the chain";
    chain_syncs.push_back(h.sent_log[i].sync);
  }
  EXPECT_EQ(chain_syncs, (std::vector<bool>{false, false, true}));
}

// BEGIN's answer waits for the Sync it shares with the work's first
// statement: its deadline is that statement's. With its own shorter one it
// would "time out" while the statement, and so BEGIN, ran on and succeeded.
TEST(pipeline_core_chain, begin_written_with_the_first_statement_takes_its_deadline) {
  harness h;
  auto begin = opener(true);
  begin.deadline = h.now + 1s;
  auto first = work("select pg_sleep(2)", false);
  first.deadline = h.now + 10s;
  h.submit(1, begin);
  h.submit(2, first);
  h.write();
  ASSERT_EQ(syncs_of(h), (std::vector<bool>{false, true}));
  h.now += 2s;
  h.core.on_tick(h.now);
  h.pump();
  EXPECT_EQ(h.completions(1), 0u) << "BEGIN answered before the statement it waits for";
  h.reply();
  h.reply();
  EXPECT_EQ(h.outcome(1), pipe_outcome::ok);
  EXPECT_EQ(h.outcome(2), pipe_outcome::ok);
}

// A written chain marked cancel_at_deadline (async_transaction_batch): its
// deadline does not answer it. The core cancels the statement the server
// runs and waits for the server's answer, which decides every outcome.
void submit_deadline_chain(harness& h, time_point deadline) {
  const char* sql[] = {"begin", "insert marker", "select pg_sleep(5)", "commit"};
  for (pipe_id id = 1; id <= 4; ++id) {
    auto r = link(sql[id - 1], id < 4);
    r.cancel_at_deadline = true;
    r.deadline = deadline;
    h.submit(id, r);
  }
  h.write();
  ASSERT_EQ(syncs_of(h), (std::vector<bool>{false, false, false, true}));
}

TEST(pipeline_core_chain, a_written_chain_past_its_deadline_is_cancelled_and_the_server_decides) {
  auto p = base_params();
  p.max_prepared = 10;  // no eviction's DEALLOCATE ahead of the ROLLBACK
  harness h(p);
  submit_deadline_chain(h, h.now + 300ms);
  h.reply();  // begin
  h.reply();  // the marker insert
  h.now += 300ms;
  h.core.on_tick(h.now);
  h.pump();
  EXPECT_EQ(h.cancels, (std::vector<pipe_id>{3})) << "the cancel goes to the statement the server runs";
  EXPECT_TRUE(h.outcomes.empty()) << "the deadline answered the chain itself";
  h.submit(5, lease_req("rollback"));
  h.write();
  EXPECT_EQ(h.wire.size(), 2u) << "held back while the signal may land";
  h.core.on_cancel_returned();
  h.reply({pipe_result::error, "57014"});  // the sleep, stopped
  server_answer last;
  last.tx = tx_state::failed;
  h.reply(last);  // commit: skipped, then the Sync
  EXPECT_EQ(h.outcome(1), pipe_outcome::ok);
  EXPECT_EQ(h.outcome(2), pipe_outcome::ok);
  EXPECT_EQ(h.outcome(3), pipe_outcome::timed_out_on_server);
  EXPECT_EQ(h.outcome(4), pipe_outcome::skipped);
  for (pipe_id id = 1; id <= 4; ++id) EXPECT_EQ(h.completions(id), 1u);
  EXPECT_TRUE(h.closes.empty());
  h.write();
  ASSERT_EQ(h.wire.size(), 1u);
  EXPECT_EQ(h.wire.front().id, 5u);
}

TEST(pipeline_core_chain, a_chain_whose_commit_got_through_before_the_cancel_succeeds) {
  harness h;
  submit_deadline_chain(h, h.now + 300ms);
  h.now += 300ms;
  h.core.on_tick(h.now);
  h.pump();
  EXPECT_EQ(h.cancels, (std::vector<pipe_id>{1}));
  h.core.on_cancel_returned();
  for (int i = 0; i < 4; ++i) h.reply();  // the signal landed on an idle backend
  for (pipe_id id = 1; id <= 4; ++id) EXPECT_EQ(h.outcome(id), pipe_outcome::ok);
  EXPECT_FALSE(h.core.writes_held());
}

TEST(pipeline_core_chain, a_server_silent_after_the_deadline_cancel_retires_the_connection) {
  harness h;
  submit_deadline_chain(h, h.now + 300ms);
  h.reply();
  h.now += 300ms;
  h.core.on_tick(h.now);
  h.pump();
  ASSERT_EQ(h.cancels, (std::vector<pipe_id>{2}));
  h.core.on_cancel_returned();
  h.now += 999ms;
  h.core.on_tick(h.now);
  h.pump();
  EXPECT_TRUE(h.outcomes.empty()) << "answered before the cancel's bound";
  h.now += 1ms;
  h.core.on_tick(h.now);
  h.pump();
  ASSERT_EQ(h.closes.size(), 1u);
  EXPECT_NE(h.closes[0].find("may have committed"), std::string::npos) << h.closes[0];
  for (pipe_id id = 1; id <= 4; ++id) EXPECT_EQ(h.outcome(id), pipe_outcome::connection_lost);
}

TEST(pipeline_core_chain, a_chain_with_a_segment_written_behind_it_is_not_signalled_and_still_waits) {
  // A signal could land on the later segment: none is sent. The chain still
  // waits for the server, whose answer decides as before.
  auto p = base_params();
  p.depth = 16;
  harness h(p);
  submit_deadline_chain(h, h.now + 300ms);
  h.submit(5, lease_req("select 1"));
  h.write();
  ASSERT_EQ(h.core.written(), 5u);
  h.now += 300ms;
  h.core.on_tick(h.now);
  h.pump();
  EXPECT_TRUE(h.cancels.empty());
  EXPECT_TRUE(h.outcomes.empty());
  for (int i = 0; i < 4; ++i) h.reply();
  for (pipe_id id = 1; id <= 4; ++id) EXPECT_EQ(h.outcome(id), pipe_outcome::ok);
  h.reply();
  EXPECT_EQ(h.outcome(5), pipe_outcome::ok);
  EXPECT_TRUE(h.closes.empty());
}

TEST(pipeline_core_chain, without_the_mark_a_written_chain_past_its_deadline_is_detached) {
  harness h;
  auto begin = link("begin", true);
  begin.deadline = h.now + 300ms;
  auto stmt = lease_req("select pg_sleep(5)");
  stmt.deadline = h.now + 300ms;
  h.submit(1, begin);
  h.submit(2, stmt);
  h.write();
  h.now += 300ms;
  h.core.on_tick(h.now);
  h.pump();
  EXPECT_TRUE(h.cancels.empty());
  EXPECT_EQ(h.outcome(1), pipe_outcome::timeout_detached);
  EXPECT_EQ(h.outcome(2), pipe_outcome::timeout_detached);
}

}  // namespace
