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

TEST(pipeline_core, lease_cancel_with_other_requests_written_detaches) {
  harness h;
  h.submit(1, lease_req("a"));
  h.submit(2, lease_req("b"));
  h.write();
  h.core.cancel(h.now, 2, true);
  h.pump();
  EXPECT_TRUE(h.cancels.empty());
  EXPECT_EQ(h.outcome(2), pipe_outcome::cancelled_detached);
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
