// pipeline_core unit tests (fake server: pipeline_core_harness.hpp).
// Breaks: whatever was written may have executed (connection_lost), the
// rest was not sent (not_sent); each request completes exactly once.
#include "pipeline_core_harness.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {
using namespace pgpipe::test::pipeline_harness;

TEST(pipeline_core, break_fails_written_as_lost_and_waiting_as_not_sent) {
  harness h;
  h.submit(1, shared_req("a"));
  h.submit(2, shared_req("b"));
  h.write();
  h.submit(3, shared_req("c"));
  h.core.on_broken("eof");
  h.pump();
  EXPECT_EQ(h.outcome(1), pipe_outcome::connection_lost);
  EXPECT_EQ(h.outcome(2), pipe_outcome::connection_lost);
  EXPECT_EQ(h.outcome(3), pipe_outcome::not_sent);
  EXPECT_EQ(h.closes, (std::vector<std::string>{"eof"}));
  h.submit(4, shared_req("d"));
  h.write();
  EXPECT_EQ(h.outcome(4), pipe_outcome::not_sent);
  EXPECT_FALSE(h.sent_after_close);
  EXPECT_FALSE(h.core.next_timer());
}

// The retry-safety contract on every path that leaves a request unwritten
// when the connection dies: behind the depth limit, held back by a lease
// cancel, queued again for a statement repair, submitted after the break.
// Each completes exactly once: connection_lost exactly when it was written.
TEST(pipeline_core, after_a_break_each_request_is_lost_exactly_when_it_was_written) {
  auto p = base_params();
  p.depth = 2;
  harness h(p);
  h.submit(1, shared_req("q"));
  h.write();
  h.reply();  // "q" is prepared from here on
  h.submit(2, shared_req("q"));  // runs named
  h.submit(3, shared_req("b"));
  h.submit(4, shared_req("c"));  // behind the depth limit
  h.write();
  ASSERT_EQ(h.wire.size(), 2u);
  ASSERT_EQ(h.wire[0].id, 2u);
  ASSERT_FALSE(h.wire[0].parse);
  // The statement vanished (26000): 2 is refused before executing and queued
  // again, off the wire.
  h.reply({pipe_result::error, "26000", true});
  ASSERT_EQ(h.completions(2), 0u);
  ASSERT_EQ(h.wire.size(), 1u);
  ASSERT_EQ(h.wire[0].id, 3u);
  h.core.on_broken("eof");
  h.pump();
  EXPECT_EQ(h.outcome(1), pipe_outcome::ok);
  EXPECT_EQ(h.outcome(3), pipe_outcome::connection_lost);  // written
  EXPECT_EQ(h.outcome(2), pipe_outcome::not_sent);         // queued again
  EXPECT_EQ(h.outcome(4), pipe_outcome::not_sent);         // behind the depth limit
  h.submit(5, shared_req("e"));
  h.write();
  EXPECT_EQ(h.outcome(5), pipe_outcome::not_sent);  // after the break
  for (pipe_id id = 1; id <= 5; ++id) EXPECT_EQ(h.completions(id), 1u) << id;
  EXPECT_FALSE(h.sent_after_close);

  // A lease cancel holds later requests back, unwritten: they are safe to retry.
  harness l;
  l.submit(1, lease_req("slow"));
  l.write();
  l.core.cancel(l.now, 1, true);
  l.pump();
  ASSERT_EQ(l.cancels, (std::vector<pipe_id>{1}));
  l.submit(2, lease_req("next"));
  l.submit(3, lease_req("after"));
  l.write();
  ASSERT_EQ(l.wire.size(), 1u);  // held back behind the cancel
  l.core.on_broken("eof");
  l.pump();
  EXPECT_EQ(l.outcome(1), pipe_outcome::connection_lost);
  EXPECT_EQ(l.outcome(2), pipe_outcome::not_sent);
  EXPECT_EQ(l.outcome(3), pipe_outcome::not_sent);
  for (pipe_id id = 1; id <= 3; ++id) EXPECT_EQ(l.completions(id), 1u) << id;
}

TEST(pipeline_core, session_fatal_error_ends_the_head_with_the_server_error) {
  harness h;
  h.submit(1, shared_req("a"));
  h.submit(2, shared_req("b"));
  h.write();
  EXPECT_EQ(h.core.on_result(pipe_result::error, "57P01"), pipe_keep::as_error);
  h.core.on_session_ended("terminated");
  h.pump();
  EXPECT_EQ(h.outcome(1), pipe_outcome::session_ended);
  EXPECT_EQ(h.outcome(2), pipe_outcome::connection_lost);
}

TEST(pipeline_core, abort_closes_everything_without_a_close_action) {
  harness h;
  h.submit(1, shared_req("a"));
  h.write();
  h.submit(2, shared_req("b"));
  h.core.abort();
  h.pump();
  EXPECT_EQ(h.outcome(1), pipe_outcome::closed);
  EXPECT_EQ(h.outcome(2), pipe_outcome::closed);
  EXPECT_TRUE(h.closes.empty());
}

TEST(pipeline_core, graceful_close_waits_only_for_requests_someone_waits_for) {
  harness h;
  h.submit(1, shared_req("a"));
  h.write();
  EXPECT_FALSE(h.core.can_close());
  h.core.cancel(h.now, 1, true);
  h.pump();
  EXPECT_TRUE(h.core.can_close());
}

}  // namespace
