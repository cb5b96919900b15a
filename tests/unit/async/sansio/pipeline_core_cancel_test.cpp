// pipeline_core unit tests (fake server: pipeline_core_harness.hpp).
// Cancellation and the cancel hold-back: a PQcancel only for a lease
// request written alone, and nothing written until it returned and the
// target's Sync was read.
#include "pipeline_core_harness.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {
using namespace pgpipe::test::pipeline_harness;

TEST(pipeline_core, cancel_of_a_waiting_request_removes_it_and_releases) {
  harness h;
  h.submit(1, shared_req());
  h.core.cancel(h.now, 1, false);
  h.pump();
  EXPECT_EQ(h.outcome(1), pipe_outcome::cancelled_unsent);
  EXPECT_EQ(h.released, 1u);
  h.write();
  EXPECT_TRUE(h.wire.empty());
}

TEST(pipeline_core, cancel_of_a_written_shared_request_detaches_it) {
  harness h;
  h.submit(1, shared_req());
  h.write();
  h.core.cancel(h.now, 1, false);
  h.pump();
  EXPECT_EQ(h.completions(1), 0u) << "total cancellation leaves a written request running";
  h.core.cancel(h.now, 1, true);
  h.pump();
  EXPECT_EQ(h.outcome(1), pipe_outcome::cancelled_detached);
  EXPECT_TRUE(h.cancels.empty()) << "no PQcancel on a shared connection";
  EXPECT_EQ(h.released, 0u) << "capacity is held until the server is past it";
  auto keeps = h.reply();
  EXPECT_EQ(keeps.back(), pipe_keep::discard);
  EXPECT_EQ(h.completions(1), 1u);
  EXPECT_EQ(h.released, 1u);
}

TEST(pipeline_core, lease_cancel_holds_writes_until_returned_and_synced) {
  harness h;
  h.submit(1, lease_req("select pg_sleep(10)"));
  h.write();
  h.core.cancel(h.now, 1, true);
  h.pump();
  EXPECT_EQ(h.cancels, (std::vector<pipe_id>{1}));
  EXPECT_TRUE(h.core.writes_held());
  h.submit(2, lease_req("next"));
  h.write();
  EXPECT_EQ(h.wire.size(), 1u) << "held back while the signal may land";
  h.core.on_cancel_returned();
  h.write();
  EXPECT_EQ(h.wire.size(), 1u) << "still held: the target's Sync was not read";
  h.reply({pipe_result::error, "57014"});
  EXPECT_EQ(h.outcome(1), pipe_outcome::cancelled_by_server);
  EXPECT_FALSE(h.core.writes_held());
  h.write();
  EXPECT_EQ(h.wire.size(), 1u);
  EXPECT_EQ(h.wire.front().id, 2u);
}

TEST(pipeline_core, lease_cancel_with_a_later_segment_written_behind_it_detaches) {
  // The signal could land once the target is over, on the next statement.
  harness h;
  h.submit(1, lease_req("a"));
  h.submit(2, lease_req("b"));
  h.write();
  h.core.cancel(h.now, 1, true);
  h.pump();
  EXPECT_TRUE(h.cancels.empty());
  EXPECT_EQ(h.outcome(1), pipe_outcome::cancelled_detached);
  EXPECT_FALSE(h.core.writes_held());
}

pipe_request chained(std::string sql) {
  auto r = lease_req(std::move(sql));
  r.chained = true;
  return r;
}

TEST(pipeline_core, lease_cancel_of_a_statement_written_with_begin_reaches_it) {
  // async_transaction's first statement: BEGIN (chained) and it share one
  // segment, so two requests are written when the caller cancels it.
  harness h;
  h.submit(1, chained("begin"));
  h.submit(2, lease_req("select pg_sleep(20)"));
  h.write();
  ASSERT_EQ(h.core.written(), 2u);
  h.reply();  // BEGIN's results (the fake sends them before the Sync)
  h.core.cancel(h.now, 2, true);
  h.pump();
  EXPECT_EQ(h.cancels, (std::vector<pipe_id>{2}));
  EXPECT_EQ(h.completions(2), 0u) << "answered when the server confirms, not at once";
  h.submit(3, lease_req("rollback"));
  h.write();
  EXPECT_EQ(h.wire.size(), 1u) << "held back while the signal may land";
  h.core.on_cancel_returned();
  server_answer cancelled{pipe_result::error, "57014"};
  cancelled.tx = tx_state::failed;
  h.reply(cancelled);
  EXPECT_EQ(h.outcome(1), pipe_outcome::ok);
  EXPECT_EQ(h.outcome(2), pipe_outcome::cancelled_by_server);
  h.write();
  ASSERT_EQ(h.wire.size(), 1u);
  EXPECT_EQ(h.wire.front().id, 3u);
}

TEST(pipeline_core, a_lease_cancel_goes_at_once_when_the_requests_ahead_share_its_segment) {
  // The server sends a segment's results only at its Sync: BEGIN's answer
  // cannot be waited for. A signal that lands on BEGIN aborts the segment,
  // and the statement never runs: cancelled all the same.
  harness h;
  h.submit(1, chained("begin"));
  h.submit(2, lease_req("select pg_sleep(20)"));
  h.write();
  h.core.cancel(h.now, 2, true);
  h.pump();
  EXPECT_EQ(h.cancels, (std::vector<pipe_id>{2}));
  h.core.on_cancel_returned();
  h.reply({pipe_result::error, "57014"});  // BEGIN took the signal
  h.reply();                               // the statement: skipped
  EXPECT_EQ(h.outcome(1), pipe_outcome::sql_error);
  EXPECT_EQ(h.outcome(2), pipe_outcome::cancelled_by_server);
  EXPECT_FALSE(h.core.writes_held());
}

TEST(pipeline_core, a_lease_cancel_waits_for_the_segments_written_ahead_of_it) {
  // A signal now could stop the earlier statement and let the target run.
  harness h;
  h.submit(1, lease_req("select pg_sleep(1)"));
  h.submit(2, lease_req("select pg_sleep(20)"));
  h.write();
  h.core.cancel(h.now, 2, true);
  h.pump();
  EXPECT_TRUE(h.cancels.empty());
  EXPECT_TRUE(h.core.writes_held());
  EXPECT_EQ(h.completions(2), 0u);
  h.submit(3, lease_req("next"));
  h.reply();
  EXPECT_EQ(h.outcome(1), pipe_outcome::ok) << "the request ahead is not hit";
  EXPECT_EQ(h.cancels, (std::vector<pipe_id>{2}));
  h.write();
  EXPECT_EQ(h.wire.size(), 1u) << "held back while the signal may land";
}

TEST(pipeline_core, a_pending_lease_cancel_is_bounded_like_a_sent_one) {
  harness h;
  h.submit(1, lease_req("select pg_sleep(100)"));
  h.submit(2, lease_req("select pg_sleep(20)"));
  h.write();
  h.core.cancel(h.now, 2, true);
  h.pump();
  h.now += 1000ms;
  h.core.on_tick(h.now);
  h.pump();
  EXPECT_EQ(h.outcome(2), pipe_outcome::cancel_unconfirmed);
  EXPECT_TRUE(h.closes.empty()) << "no signal was sent: nothing can land late";
  h.reply();
  EXPECT_EQ(h.cancels, (std::vector<pipe_id>{2})) << "still stopped on the server once it runs";
}

TEST(pipeline_core, lease_cancel_inside_a_chain_reaches_it_with_the_rest_of_its_segment_behind) {
  harness h;
  h.submit(1, chained("begin"));
  h.submit(2, chained("update a"));
  h.submit(3, lease_req("commit"));
  h.write();
  h.reply();
  h.core.cancel(h.now, 2, true);
  h.pump();
  EXPECT_EQ(h.cancels, (std::vector<pipe_id>{2}));
  h.core.on_cancel_returned();
  h.reply({pipe_result::error, "57014"});
  server_answer last;
  last.tx = tx_state::idle;
  h.reply(last);
  EXPECT_EQ(h.outcome(2), pipe_outcome::cancelled_by_server);
  EXPECT_EQ(h.outcome(3), pipe_outcome::skipped);
  EXPECT_FALSE(h.core.writes_held());
}

TEST(pipeline_core, unanswered_cancel_breaks_the_connection) {
  harness h;
  h.submit(1, lease_req("a"));
  h.write();
  h.core.cancel(h.now, 1, true);
  h.pump();
  ASSERT_TRUE(h.core.next_timer());
  EXPECT_EQ(*h.core.next_timer(), h.now + 1000ms);
  h.now += 1000ms;
  h.core.on_tick(h.now);
  h.pump();
  EXPECT_EQ(h.closes.size(), 1u);
  EXPECT_EQ(h.outcome(1), pipe_outcome::connection_lost);
}

TEST(pipeline_core, cancel_returned_but_no_answer_by_the_deadline_is_unconfirmed) {
  harness h;
  h.submit(1, lease_req("a"));
  h.write();
  h.core.cancel(h.now, 1, true);
  h.core.on_cancel_returned();
  h.now += 1000ms;
  h.core.on_tick(h.now);
  h.pump();
  EXPECT_EQ(h.outcome(1), pipe_outcome::cancel_unconfirmed);
  EXPECT_TRUE(h.closes.empty());
}

TEST(pipeline_core, failed_cancel_start_detaches_the_request) {
  harness h;
  h.submit(1, lease_req("a"));
  h.write();
  h.core.cancel(h.now, 1, true);
  h.core.on_cancel_failed(1);
  h.pump();
  EXPECT_EQ(h.outcome(1), pipe_outcome::cancelled_detached);
  EXPECT_FALSE(h.core.writes_held());
}

// libpq 17's PQcancelPoll can fail after the CancelRequest went out (the
// postmaster signals the backend, then the exchange breaks): the signal may
// still land. The request is answered, but nothing more is written until the
// target's Sync, or the next query could take its 57014.
TEST(pipeline_core, a_cancel_that_failed_once_started_holds_writes_until_the_targets_sync) {
  harness h;
  h.submit(1, lease_req("select pg_sleep(10)"));
  h.write();
  h.core.cancel(h.now, 1, true);
  h.pump();
  ASSERT_EQ(h.cancels, (std::vector<pipe_id>{1}));
  h.core.on_cancel_failed_once_started(1);
  h.pump();
  EXPECT_EQ(h.outcome(1), pipe_outcome::cancelled_detached);
  EXPECT_TRUE(h.core.writes_held()) << "the signal may still land";
  h.submit(2, lease_req("next"));
  h.write();
  EXPECT_EQ(h.wire.size(), 1u) << "written while the signal may land on it";
  h.reply({pipe_result::error, "57014"});
  EXPECT_EQ(h.completions(1), 1u);
  EXPECT_FALSE(h.core.writes_held());
  h.write();
  ASSERT_EQ(h.wire.size(), 1u);
  EXPECT_EQ(h.wire.front().id, 2u);
}

}  // namespace
