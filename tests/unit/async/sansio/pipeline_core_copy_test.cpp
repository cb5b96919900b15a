// pipeline_core unit tests (fake server: pipeline_core_harness.hpp).
// COPY: it waits for the pipeline to drain, runs alone outside pipeline
// mode, and holds back what follows it.
#include "pipeline_core_harness.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {
using namespace pgpipe::test::pipeline_harness;

TEST(pipeline_core, copy_waits_for_the_pipeline_to_drain_and_holds_what_follows) {
  harness h;
  h.submit(1, lease_req("a"));
  h.submit(2, lease_req("b"));
  h.submit(3, copy_req());
  h.submit(4, lease_req("after"));
  h.write();
  EXPECT_EQ(h.wire.size(), 2u) << "the queries before the COPY go out";
  EXPECT_TRUE(h.copies.empty()) << "libpq leaves pipeline mode only with nothing in flight";
  h.reply();
  h.write();
  EXPECT_TRUE(h.copies.empty());
  h.reply();
  h.write();
  EXPECT_EQ(h.copies, (std::vector<pipe_id>{3}));
  EXPECT_FALSE(h.copy_over_pipeline);
  EXPECT_EQ(h.core.solo_running(), 3u);
  EXPECT_TRUE(h.core.writes_held());
  EXPECT_EQ(h.core.head(), 3u);
  h.write();
  EXPECT_TRUE(h.wire.empty()) << "nothing is written while the COPY owns the connection";
  h.core.on_solo_end(h.now, false);
  h.pump();
  EXPECT_EQ(h.outcome(3), pipe_outcome::ok);
  EXPECT_EQ(h.core.solo_running(), 0u);
  h.write();
  ASSERT_EQ(h.wire.size(), 1u);
  EXPECT_EQ(h.wire.front().id, 4u);
  h.reply();
  EXPECT_EQ(h.outcome(4), pipe_outcome::ok);
  for (pipe_id id : {1, 2, 3, 4}) EXPECT_EQ(h.completions(id), 1u) << id;
}

TEST(pipeline_core, failed_copy_completes_with_the_servers_error_and_the_lease_goes_on) {
  harness h;
  h.submit(1, copy_req());
  h.write();
  ASSERT_EQ(h.copies, (std::vector<pipe_id>{1}));
  h.submit(2, lease_req("next"));
  h.write();
  EXPECT_TRUE(h.wire.empty());
  h.core.on_solo_end(h.now, true);
  h.pump();
  EXPECT_EQ(h.outcome(1), pipe_outcome::sql_error);
  h.write();
  ASSERT_EQ(h.wire.size(), 1u);
  h.reply();
  EXPECT_EQ(h.outcome(2), pipe_outcome::ok);
  EXPECT_TRUE(h.closes.empty());
}

TEST(pipeline_core, break_mid_copy_loses_it_once_and_sends_nothing_more) {
  harness h;
  h.submit(1, copy_req());
  h.write();
  h.submit(2, lease_req("next"));
  h.core.on_broken("socket closed");
  h.pump();
  EXPECT_EQ(h.outcome(1), pipe_outcome::connection_lost) << "it may have been committed only at its end";
  EXPECT_EQ(h.outcome(2), pipe_outcome::not_sent);
  h.core.on_solo_end(h.now, false);  // a late report changes nothing
  h.submit(3, copy_req());
  h.write();
  h.pump();
  EXPECT_EQ(h.copies.size(), 1u);
  EXPECT_FALSE(h.sent_after_close);
  EXPECT_EQ(h.completions(1), 1u);
  EXPECT_EQ(h.outcome(3), pipe_outcome::not_sent);
}

TEST(pipeline_core, copy_deadline_answers_once_and_the_end_is_still_awaited) {
  auto p = base_params();
  p.stall_timeout = 100ms;
  harness h(p);
  auto c = copy_req();
  c.deadline = h.now + 5s;
  h.submit(1, c);
  h.write();
  h.now += 1s;
  h.core.on_tick(h.now);
  h.pump();
  EXPECT_TRUE(h.closes.empty()) << "the caller paces a COPY: no stall timeout while it runs";
  EXPECT_EQ(h.core.next_timer(), h.now + 4s);
  h.now += 4s;
  h.core.on_tick(h.now);
  h.pump();
  EXPECT_EQ(h.outcome(1), pipe_outcome::timeout_detached);
  EXPECT_TRUE(h.core.writes_held()) << "the shell still has to end the COPY on the wire";
  h.core.on_solo_end(h.now, true);
  h.pump();
  EXPECT_EQ(h.completions(1), 1u);
  EXPECT_FALSE(h.core.writes_held());
}

TEST(pipeline_core, stopping_a_copy_removes_it_unstarted_or_cancels_it_running) {
  harness h;
  h.submit(1, lease_req("a"));
  h.submit(2, copy_req("copy t to stdout"));
  h.write();
  EXPECT_TRUE(h.core.solo_stop(h.now, 2));
  h.pump();
  EXPECT_EQ(h.outcome(2), pipe_outcome::cancelled_unsent);
  h.reply();
  h.submit(3, copy_req("copy t to stdout"));
  h.write();
  ASSERT_EQ(h.copies, (std::vector<pipe_id>{3}));
  EXPECT_FALSE(h.core.solo_stop(h.now, 3));
  h.pump();
  EXPECT_EQ(h.cancels, (std::vector<pipe_id>{3})) << "alone on a lease: PQcancel cannot hit another query";
  EXPECT_FALSE(h.core.solo_stop(h.now, 3));
  h.pump();
  EXPECT_EQ(h.cancels.size(), 1u) << "one cancel";
  h.core.on_cancel_returned();
  h.core.on_solo_end(h.now, true);
  h.pump();
  EXPECT_EQ(h.outcome(3), pipe_outcome::cancelled_by_server);
  EXPECT_FALSE(h.core.writes_held());
}

}  // namespace
