// pipeline_core unit tests (fake server: pipeline_core_harness.hpp).
// Sync coalescing: reads the core may coalesce share one Sync; the requests
// the server skipped after an error in their batch are written again.
#include "pipeline_core_harness.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {
using namespace pgpipe::test::pipeline_harness;

TEST(pipeline_core, coalesced_reads_share_one_sync_and_a_batch_never_waits_to_fill) {
  harness h(coalescing_params(10));
  for (pipe_id id = 1; id <= 3; ++id) h.submit(id, read_req());
  h.write();
  EXPECT_EQ(syncs_of(h), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(h.core.syncs_sent(), 1u);
  EXPECT_EQ(h.core.requests_sent(), 3u);
  // Results of a batch are decided at its Sync, in order.
  h.reply();
  h.reply();
  EXPECT_TRUE(h.outcomes.empty());
  EXPECT_EQ(h.core.written(), 3u);  // still counted against the depth until the Sync
  h.reply();
  EXPECT_EQ(h.completion_order, (std::vector<pipe_id>{1, 2, 3}));
  EXPECT_EQ(h.released, 3u);
  // Alone in the queue: written at once with its own Sync.
  h.submit(4, read_req());
  h.write();
  EXPECT_TRUE(h.sent_log.back().sync);
  h.reply();
  EXPECT_EQ(h.outcome(4), pipe_outcome::ok);
}

TEST(pipeline_core, batches_are_bounded_by_count_and_depth) {
  harness h(coalescing_params(2));
  for (pipe_id id = 1; id <= 5; ++id) h.submit(id, read_req());
  h.write();
  EXPECT_EQ(syncs_of(h), (std::vector<bool>{false, true, false, true, true}));
  auto p = coalescing_params(10);
  p.depth = 3;
  harness d(p);
  for (pipe_id id = 1; id <= 5; ++id) d.submit(id, read_req());
  d.write();
  // The depth limit closes the batch: nothing is left open on the wire.
  EXPECT_EQ(syncs_of(d), (std::vector<bool>{false, false, true}));
  d.reply();
  d.reply();
  d.reply();
  d.write();
  EXPECT_EQ(syncs_of(d), (std::vector<bool>{false, false, true, false, true}));
}

TEST(pipeline_core, unmarked_lease_and_stream_requests_keep_their_own_sync) {
  harness h(coalescing_params(10));
  h.submit(1, read_req());
  h.submit(2, shared_req());  // unmarked: closes the batch before it
  h.submit(3, read_req());
  auto l = lease_req();
  coalescible(l);  // ignored on a lease
  h.submit(4, l);
  h.submit(5, read_req());
  h.write();
  EXPECT_EQ(syncs_of(h), (std::vector<bool>{true, true, true, true, true}));
  harness off(coalescing_params(1));  // sync_batch 1: coalescing off
  off.submit(1, read_req());
  off.submit(2, read_req());
  off.write();
  EXPECT_EQ(syncs_of(off), (std::vector<bool>{true, true}));
}

TEST(pipeline_core, a_read_coalesces_only_with_every_fact_for_it) {
  // The core alone decides from the shell's facts: the caller's read-only
  // marker, a read-only session, a statement that may share a Sync. Any one
  // missing keeps the request's own Sync (and closes the batch before it).
  harness h(coalescing_params(10));
  h.submit(1, read_req());
  auto unmarked = read_req();
  unmarked.read_only = false;
  h.submit(2, unmarked);
  h.submit(3, read_req());
  auto read_write_session = read_req();
  read_write_session.session_read_only = false;
  h.submit(4, read_write_session);
  h.submit(5, read_req());
  auto may_write = read_req("select set_config('a.b', 'x', true)");
  may_write.may_share_sync = false;
  h.submit(6, may_write);
  h.submit(7, read_req());
  h.submit(8, read_req());
  h.write();
  EXPECT_EQ(syncs_of(h), (std::vector<bool>{true, true, true, true, true, true, false, true}));
}

TEST(pipeline_core, error_mid_batch_fails_only_its_request_and_resends_the_skipped_ones) {
  harness h(coalescing_params(10));
  for (pipe_id id = 1; id <= 4; ++id) h.submit(id, read_req("q"));
  h.write();
  EXPECT_EQ(syncs_of(h), (std::vector<bool>{false, false, false, true}));
  EXPECT_TRUE(h.sent_log[0].parse);
  h.reply();                                     // 1 runs (and prepares q)
  h.reply({pipe_result::error, "22012"});        // 2 fails
  auto k3 = h.reply();                           // 3 and 4 are skipped by the server
  auto k4 = h.reply();
  EXPECT_EQ(k3, (std::vector<pipe_keep>{pipe_keep::discard}));
  EXPECT_EQ(k4, (std::vector<pipe_keep>{pipe_keep::discard}));
  EXPECT_EQ(h.outcome(1), pipe_outcome::ok);
  EXPECT_EQ(h.outcome(2), pipe_outcome::sql_error);
  EXPECT_EQ(h.completions(3), 0u);
  EXPECT_EQ(h.completions(4), 0u);
  EXPECT_EQ(h.released, 2u);  // 3 and 4 keep their capacity
  EXPECT_EQ(h.core.waiting(), 2u);
  h.write();
  ASSERT_EQ(h.sent_log.size(), 6u);
  EXPECT_EQ(h.sent_log[4].id, 3u);
  EXPECT_EQ(h.sent_log[5].id, 4u);
  EXPECT_FALSE(h.sent_log[4].parse);  // the statement exists: 1's Parse ran
  h.reply();
  h.reply();
  EXPECT_EQ(h.outcome(3), pipe_outcome::ok);
  EXPECT_EQ(h.outcome(4), pipe_outcome::ok);
  EXPECT_FALSE(h.replayed_executed);
  EXPECT_EQ(h.released, 4u);
  EXPECT_EQ(h.core.syncs_sent(), 2u);
  EXPECT_EQ(h.core.requests_sent(), 6u);
}

TEST(pipeline_core, a_request_carrying_a_parse_leads_its_batch) {
  harness h(coalescing_params(10));
  h.submit(1, read_req("a"));
  h.submit(2, read_req("b"));
  h.submit(3, read_req("b"));
  h.submit(4, read_req("a"));
  h.write();
  // b's Parse is never behind a neighbour that could fail and skip it.
  EXPECT_EQ(syncs_of(h), (std::vector<bool>{true, false, false, true}));
  EXPECT_TRUE(h.sent_log[1].parse);
  EXPECT_FALSE(h.sent_log[2].parse);
}

TEST(pipeline_core, skipped_requests_go_ahead_of_newer_work_in_their_order) {
  harness h(coalescing_params(10));
  for (pipe_id id = 1; id <= 3; ++id) h.submit(id, read_req());
  h.write();
  h.submit(4, shared_req());  // waiting while the batch is answered
  h.reply({pipe_result::error, "22012"});
  h.reply();
  h.reply();
  h.write();
  ASSERT_EQ(h.sent_log.size(), 6u);
  EXPECT_EQ(h.sent_log[3].id, 2u);
  EXPECT_EQ(h.sent_log[4].id, 3u);
  EXPECT_EQ(h.sent_log[5].id, 4u);
  EXPECT_EQ(syncs_of(h), (std::vector<bool>{false, false, true, false, true, true}));
}

TEST(pipeline_core, skipped_requests_of_two_batches_are_resent_in_submission_order) {
  harness h(coalescing_params(3));
  for (pipe_id id = 1; id <= 6; ++id) h.submit(id, read_req());
  h.write();
  ASSERT_EQ(syncs_of(h), (std::vector<bool>{false, false, true, false, false, true}));
  h.submit(7, read_req());  // newer work, waiting
  // Each batch fails at its first request; both Syncs are read before the
  // next write pass.
  h.reply({pipe_result::error, "22012"});
  h.reply();  // 2 and 3 skipped
  h.reply();
  h.reply({pipe_result::error, "22012"});
  h.reply();  // 5 and 6 skipped
  h.reply();
  ASSERT_EQ(h.completion_order, (std::vector<pipe_id>{1, 4}));
  h.write();
  std::vector<pipe_id> resent;
  for (std::size_t i = 6; i < h.sent_log.size(); ++i) resent.push_back(h.sent_log[i].id);
  EXPECT_EQ(resent, (std::vector<pipe_id>{2, 3, 5, 6, 7})) << "the earlier batch's skipped requests first";
  while (!h.wire.empty()) h.reply();
  EXPECT_EQ(h.completion_order, (std::vector<pipe_id>{1, 4, 2, 3, 5, 6, 7}));
  for (pipe_id id : {2, 3, 5, 6, 7}) EXPECT_EQ(h.outcome(id), pipe_outcome::ok) << id;
  EXPECT_FALSE(h.replayed_executed);
}

TEST(pipeline_core, break_mid_batch_reports_every_request_of_it_lost_exactly_once) {
  harness h(coalescing_params(10));
  for (pipe_id id = 1; id <= 3; ++id) h.submit(id, read_req());
  h.write();
  h.submit(4, read_req());
  h.reply();  // 1 answered, its Sync not read
  h.core.on_broken("eof");
  h.pump();
  for (pipe_id id = 1; id <= 3; ++id) {
    EXPECT_EQ(h.completions(id), 1u);
    EXPECT_EQ(h.outcome(id), pipe_outcome::connection_lost);
  }
  EXPECT_EQ(h.outcome(4), pipe_outcome::not_sent);
}

TEST(pipeline_core, cancelled_or_expired_batch_requests_complete_once_and_are_not_resent) {
  harness h(coalescing_params(10));
  auto timed = read_req();
  timed.deadline = h.now + 100ms;
  h.submit(1, read_req());
  h.submit(2, read_req());
  h.submit(3, timed);
  h.write();
  h.reply({pipe_result::error, "22012"});
  h.core.cancel(h.now, 2, true);  // skipped or not, its caller is answered now
  h.pump();
  EXPECT_EQ(h.outcome(2), pipe_outcome::cancelled_detached);
  h.now += 200ms;
  h.core.on_tick(h.now);
  h.pump();
  EXPECT_EQ(h.outcome(3), pipe_outcome::timeout_detached);
  h.reply();
  h.reply();
  h.write();
  EXPECT_EQ(h.sent_log.size(), 3u);  // nothing re-sent for callers already answered
  for (pipe_id id = 1; id <= 3; ++id) EXPECT_EQ(h.completions(id), 1u);
  EXPECT_EQ(h.released, 3u);
  EXPECT_EQ(h.core.written(), 0u);
}

TEST(pipeline_core, stale_statement_in_a_batch_is_repaired_and_the_skipped_rest_resent) {
  harness h(coalescing_params(10));
  h.submit(1, read_req("a"));
  h.write();
  h.reply();  // "a" prepared
  h.submit(2, read_req("a"));
  h.submit(3, read_req("a"));
  h.write();
  EXPECT_FALSE(h.sent_log[1].sync);
  h.reply({pipe_result::error, "0A000", true});  // plan changed: refused before executing
  h.reply();                                      // 3 skipped
  h.write();
  EXPECT_EQ(h.completions(2), 0u);
  EXPECT_EQ(h.completions(3), 0u);
  // 2 again with a fresh Parse leading the batch, 3 behind it, then the
  // DEALLOCATE of the stale name.
  ASSERT_EQ(h.sent_log.size(), 6u);
  EXPECT_EQ(h.sent_log[3].id, 2u);
  EXPECT_TRUE(h.sent_log[3].parse);
  EXPECT_EQ(h.sent_log[4].id, 3u);
  EXPECT_FALSE(h.sent_log[4].parse);
  EXPECT_TRUE(h.sent_log[5].internal);
  while (!h.wire.empty()) h.reply();
  EXPECT_EQ(h.outcome(2), pipe_outcome::ok);
  EXPECT_EQ(h.outcome(3), pipe_outcome::ok);
}

}  // namespace
