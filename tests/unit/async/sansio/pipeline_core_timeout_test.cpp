// pipeline_core unit tests (fake server: pipeline_core_harness.hpp).
// Time: request deadlines, the stall timeout, and the next timer, which
// reads one entry per queue while the deadlines there are in order
// (request_queue.hpp): every way an entry enters a queue or its deadline
// moves must keep that fact true.
#include "pipeline_core_harness.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <initializer_list>

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

// One statement text for all: no cache eviction puts a DEALLOCATE on the wire.
pipe_request due(time_point at, pipe_request r = shared_req()) {
  r.deadline = at;
  return r;
}

// Submits requests first, first + 1, ... due at t0 + each of `after`.
void submit_due(harness& h, pipe_id first, time_point t0, std::initializer_list<std::chrono::milliseconds> after) {
  for (auto d : after) h.submit(first++, due(t0 + d));
}

TEST(pipeline_core_timer, the_next_timer_follows_deadlines_in_submission_order_as_they_end) {
  harness h;
  const auto t0 = h.now;
  submit_due(h, 1, t0, {100ms, 200ms, 300ms});
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
  submit_due(h, 1, t0, {500ms, 100ms, 300ms});
  EXPECT_EQ(h.core.next_timer(), t0 + 100ms) << "waiting";
  h.write();
  EXPECT_EQ(h.core.next_timer(), t0 + 100ms) << "written";
  h.reply();
  EXPECT_EQ(h.core.next_timer(), t0 + 100ms);
  h.reply();
  EXPECT_EQ(h.core.next_timer(), t0 + 300ms);
  h.reply();
  EXPECT_FALSE(h.core.next_timer());
  submit_due(h, 4, t0, {700ms, 600ms});
  EXPECT_EQ(h.core.next_timer(), t0 + 600ms) << "a new unsorted run after the queues emptied";
  h.write();
  h.reply();
  h.reply();
  submit_due(h, 6, t0, {900ms, 800ms});
  EXPECT_EQ(h.core.next_timer(), t0 + 800ms);
}

// Requests from two loops arrive a few microseconds out of deadline order:
// within the slack the later arrival takes the earlier one's deadline (the
// order holds), beyond it each keeps its own and the timer still finds the
// sooner one.
TEST(pipeline_core_timer, a_deadline_within_the_slack_of_the_one_before_takes_it) {
  harness h;
  const auto t0 = h.now;
  submit_due(h, 1, t0, {1000ms, 999ms});
  h.write();
  h.reply();
  EXPECT_EQ(h.core.next_timer(), t0 + 1000ms) << "2 took 1's deadline";
  h.submit(3, due(t0 + 500ms));
  EXPECT_EQ(h.core.next_timer(), t0 + 500ms) << "3 is far sooner: its own";
  h.now = t0 + 500ms;
  h.core.on_tick(h.now);
  h.pump();
  EXPECT_EQ(h.outcome(3), pipe_outcome::timeout_unsent);
}

// A caller answered before its Sync (cancelled, detached) no longer counts:
// a push looks past it to the last request that does.
TEST(pipeline_core_timer, a_push_behind_a_detached_request_compares_with_the_one_before_it) {
  harness h;
  const auto t0 = h.now;
  submit_due(h, 1, t0, {500ms, 600ms});
  h.write();
  h.core.cancel(h.now, 2, true);
  h.pump();
  ASSERT_EQ(h.outcome(2), pipe_outcome::cancelled_detached);
  h.submit(3, due(t0 + 300ms));
  h.write();
  EXPECT_EQ(h.core.written(), 3u);
  EXPECT_EQ(h.core.next_timer(), t0 + 300ms);
}

// Entries placed or moved without a push: a skipped request written again
// goes ahead of newer work by submission order, whatever its deadline.
TEST(pipeline_core_timer, a_skipped_request_queued_again_ahead_of_a_sooner_deadline_leaves_it_next) {
  harness h(coalescing_params(10));
  const auto t0 = h.now;
  h.submit(1, due(t0 + 800ms, read_req()));
  h.submit(2, due(t0 + 900ms, read_req()));
  h.write();
  h.submit(3, due(t0 + 300ms));
  EXPECT_EQ(h.core.next_timer(), t0 + 300ms);
  h.reply({pipe_result::error, "22012"});
  h.reply();  // 2: skipped, waiting again ahead of 3
  ASSERT_EQ(h.core.waiting(), 2u);
  EXPECT_EQ(h.core.next_timer(), t0 + 300ms);
}

// A chain's first request takes the deadline of the one written after it.
TEST(pipeline_core_timer, a_chained_request_taking_a_sooner_deadline_behind_a_later_one_sets_the_timer) {
  harness h;
  const auto t0 = h.now;
  h.submit(1, due(t0 + 500ms, lease_req()));
  auto begin = due(t0 + 900ms, lease_req("begin"));
  begin.chained = true;
  h.submit(2, begin);
  h.submit(3, due(t0 + 300ms, lease_req()));
  h.write();
  ASSERT_FALSE(h.sent_log[1].sync) << "begin shares the statement's Sync";
  EXPECT_EQ(h.core.next_timer(), t0 + 300ms);
}

// A written chain past its deadline waits cancel_bound more for the server:
// a later deadline than the requests written behind it.
TEST(pipeline_core_timer, a_written_chain_waiting_past_its_deadline_leaves_the_next_request_next) {
  harness h;
  const auto t0 = h.now;
  auto chain = due(t0 + 100ms, lease_req());
  chain.cancel_at_deadline = true;
  h.submit(1, chain);
  h.submit(2, due(t0 + 200ms, lease_req()));
  h.write();
  h.now = t0 + 100ms;
  h.core.on_tick(h.now);
  h.pump();
  EXPECT_TRUE(h.outcomes.empty());
  EXPECT_EQ(h.core.next_timer(), t0 + 200ms);
}

// A cancel bounds its target's deadline by cancel_bound: sooner than the
// request of the segment ahead of it.
TEST(pipeline_core_timer, a_cancel_bounding_the_last_request_sooner_than_the_one_ahead_sets_the_timer) {
  harness h;
  const auto t0 = h.now;
  h.submit(1, due(t0 + 2000ms, lease_req()));
  h.submit(2, due(t0 + 5000ms, lease_req()));
  h.write();
  h.core.cancel(h.now, 2, true);
  h.pump();
  EXPECT_TRUE(h.cancels.empty()) << "pending behind 1's segment";
  EXPECT_EQ(h.core.next_timer(), t0 + 1000ms);
}

}  // namespace
