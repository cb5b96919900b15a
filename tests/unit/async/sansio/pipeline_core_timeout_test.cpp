// pipeline_core unit tests (fake server: pipeline_core_harness.hpp).
// Time: request deadlines and the stall timeout.
#include "pipeline_core_harness.hpp"

#include <gtest/gtest.h>

namespace {
using namespace pgpipe::test::pipeline_harness;

TEST(pipeline_core, deadlines_remove_waiting_and_detach_written_requests) {
  harness h;
  auto a = shared_req("a");
  a.deadline = h.now + 100ms;
  auto b = shared_req("b");
  b.deadline = h.now + 100ms;
  h.submit(1, a);
  h.write();
  h.submit(2, b);
  EXPECT_EQ(h.core.next_timer(), h.now + 100ms);
  h.now += 100ms;
  h.core.on_tick(h.now);
  h.pump();
  EXPECT_EQ(h.outcome(1), pipe_outcome::timeout_detached);
  EXPECT_EQ(h.outcome(2), pipe_outcome::timeout_unsent);
  EXPECT_EQ(h.released, 1u) << "only the unsent one; the written one at its Sync";
  h.reply();
  EXPECT_EQ(h.released, 2u);
  EXPECT_EQ(h.completions(1), 1u);
}

TEST(pipeline_core, stall_timeout_breaks_only_with_work_outstanding) {
  auto p = base_params();
  p.stall_timeout = 500ms;
  harness h(p);
  EXPECT_FALSE(h.core.next_timer());
  h.submit(1, shared_req());
  h.write();
  h.now += 400ms;
  h.core.on_input(h.now);
  h.core.on_tick(h.now);
  EXPECT_EQ(h.core.next_timer(), h.now + 500ms);
  h.now += 500ms;
  h.core.on_tick(h.now);
  h.pump();
  EXPECT_EQ(h.outcome(1), pipe_outcome::connection_lost);
  EXPECT_EQ(h.closes.size(), 1u);
}

}  // namespace

namespace {
using namespace pgpipe::test::pipeline_harness;

// One statement text for all: no cache eviction puts a DEALLOCATE on the wire.
pipe_request due(time_point at) {
  auto r = shared_req();
  r.deadline = at;
  return r;
}

TEST(pipeline_core_timer, the_next_timer_follows_deadlines_in_submission_order_as_they_end) {
  harness h;
  const auto t0 = h.now;
  h.submit(1, due(t0 + 100ms));
  h.submit(2, due(t0 + 200ms));
  h.submit(3, due(t0 + 300ms));
  EXPECT_EQ(h.core.next_timer(), t0 + 100ms);
  h.write();
  EXPECT_EQ(h.core.next_timer(), t0 + 100ms);
  h.submit(4, due(t0 + 400ms));
  h.reply();
  EXPECT_EQ(h.core.next_timer(), t0 + 200ms);
  h.reply();
  EXPECT_EQ(h.core.next_timer(), t0 + 300ms);
  h.reply();
  h.write();
  EXPECT_EQ(h.core.next_timer(), t0 + 400ms);
  h.reply();
  EXPECT_FALSE(h.core.next_timer());
}

// A request with a timeout of its own can end sooner than ones submitted
// before it: the timer must find it wherever it sits, waiting or written,
// and find the sorted order again once the queues have emptied.
TEST(pipeline_core_timer, an_earlier_deadline_behind_later_ones_still_sets_the_next_timer) {
  harness h;
  const auto t0 = h.now;
  h.submit(1, due(t0 + 500ms));
  h.submit(2, due(t0 + 100ms));
  h.submit(3, due(t0 + 300ms));
  EXPECT_EQ(h.core.next_timer(), t0 + 100ms) << "waiting";
  h.write();
  EXPECT_EQ(h.core.next_timer(), t0 + 100ms) << "written";
  h.reply();
  EXPECT_EQ(h.core.next_timer(), t0 + 100ms);
  h.reply();
  EXPECT_EQ(h.core.next_timer(), t0 + 300ms);
  h.reply();
  EXPECT_FALSE(h.core.next_timer());
  h.submit(4, due(t0 + 700ms));
  h.submit(5, due(t0 + 600ms));
  EXPECT_EQ(h.core.next_timer(), t0 + 600ms) << "a new unsorted run after the queues emptied";
  h.write();
  h.reply();
  h.reply();
  h.submit(6, due(t0 + 900ms));
  h.submit(7, due(t0 + 800ms));
  EXPECT_EQ(h.core.next_timer(), t0 + 800ms);
}

}  // namespace

namespace {
using namespace pgpipe::test::pipeline_harness;

// Requests from two loops arrive a few microseconds out of deadline order:
// within the slack the later arrival takes the earlier one's deadline (the
// order holds), beyond it each keeps its own and the timer still finds the
// sooner one.
TEST(pipeline_core_timer, a_deadline_within_the_slack_of_the_one_before_takes_it) {
  harness h;
  const auto t0 = h.now;
  auto a = shared_req();
  a.deadline = t0 + 1000ms;
  auto b = shared_req();
  b.deadline = t0 + 999ms;
  h.submit(1, a);
  h.submit(2, b);
  h.write();
  h.reply();
  EXPECT_EQ(h.core.next_timer(), t0 + 1000ms) << "b took a's deadline";
  auto c = shared_req();
  c.deadline = t0 + 500ms;
  h.submit(3, c);
  EXPECT_EQ(h.core.next_timer(), t0 + 500ms) << "c is far sooner: its own";
  h.now = t0 + 500ms;
  h.core.on_tick(h.now);
  h.pump();
  EXPECT_EQ(h.outcome(3), pipe_outcome::timeout_unsent);
}

}  // namespace
