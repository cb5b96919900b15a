// pipeline_core unit tests (fake server: pipeline_core_harness.hpp).
// The statement cache (a Parse on first use, names after, LRU eviction),
// the repair of stale statements after a migration, and pooler detection.
#include "pipeline_core_harness.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {
using namespace pgpipe::test::pipeline_harness;

TEST(pipeline_core, first_use_carries_the_parse_and_later_uses_the_name) {
  harness h;
  h.submit(1, shared_req("select 1"));
  h.submit(2, shared_req("select 1"));
  h.write();
  ASSERT_EQ(h.wire.size(), 2u);
  EXPECT_TRUE(h.wire[0].parse);
  EXPECT_FALSE(h.wire[1].parse);
  EXPECT_FALSE(h.wire[0].name.empty());
  EXPECT_EQ(h.wire[0].name, h.wire[1].name);
  h.reply();
  h.reply();
  EXPECT_EQ(h.outcome(1), pipe_outcome::ok);
  EXPECT_EQ(h.outcome(2), pipe_outcome::ok);
}

TEST(pipeline_core, internal_and_stream_requests_stay_unnamed) {
  harness h;
  auto i = shared_req("select 1");
  i.internal = true;
  auto s = lease_req("select 2");
  s.stream = true;
  h.submit(1, i);
  h.submit(2, s);
  h.write();
  EXPECT_TRUE(h.wire[0].name.empty());
  EXPECT_TRUE(h.wire[1].name.empty());
  EXPECT_EQ(h.core.statements().size(), 0u);
}

TEST(pipeline_core, failed_parse_forgets_the_statement_failed_execute_keeps_it) {
  harness h;
  h.submit(1, shared_req("bad"));
  h.submit(2, shared_req("div"));
  h.write();
  harness::answer parse_fails;
  parse_fails.err_in_parse = true;
  h.reply(parse_fails);
  EXPECT_EQ(h.outcome(1), pipe_outcome::sql_error);
  EXPECT_FALSE(h.core.statements().contains("bad"));
  h.reply({pipe_result::error, "22012"});
  EXPECT_EQ(h.outcome(2), pipe_outcome::sql_error);
  EXPECT_TRUE(h.core.statements().contains("div")) << "the Parse succeeded: the statement exists";
  h.submit(3, shared_req("div"));
  h.write();
  EXPECT_FALSE(h.wire.back().parse);
}

TEST(pipeline_core, full_cache_evicts_the_least_recently_used_and_deallocates_it) {
  harness h;
  for (pipe_id i = 1; i <= 3; ++i) {
    h.submit(i, shared_req("q" + std::to_string(i)));
    h.write();
    h.reply();
  }
  std::string q1_name = h.sent_log[0].name;
  // Touch q1 so that q2 is the least recently used.
  h.submit(4, shared_req("q1"));
  h.write();
  h.reply();
  h.submit(5, shared_req("q4"));
  h.write();
  ASSERT_EQ(h.wire.size(), 2u);
  EXPECT_TRUE(h.wire[0].internal);
  EXPECT_EQ(h.wire[0].name, "deallocate " + h.sent_log[1].name);
  EXPECT_TRUE(h.wire[1].parse);
  EXPECT_EQ(h.core.statements().size(), 3u);
  EXPECT_FALSE(h.core.statements().contains("q2"));
  EXPECT_TRUE(h.core.statements().contains("q1"));
  h.reply();
  h.reply();
  EXPECT_EQ(h.completions(5), 1u);
  ASSERT_TRUE(h.sent_log[4].internal);
  EXPECT_EQ(h.outcomes.count(h.sent_log[4].id), 0u) << "internal requests never complete";
}

pipeline_params closing_params() {
  auto p = base_params();
  p.close_prepared = true;
  return p;
}

TEST(pipeline_core, with_close_prepared_an_evicted_statement_is_closed_not_deallocated) {
  harness h(closing_params());
  for (pipe_id i = 1; i <= 3; ++i) {
    h.submit(i, shared_req("q" + std::to_string(i)));
    h.write();
    h.reply();
  }
  h.submit(4, shared_req("q4"));
  h.write();
  ASSERT_EQ(h.wire.size(), 2u);
  EXPECT_TRUE(h.wire[0].internal);
  EXPECT_TRUE(h.wire[0].close);
  EXPECT_EQ(h.wire[0].name, h.sent_log[0].name) << "the Close names the statement itself, no SQL";
  EXPECT_TRUE(h.wire[0].sync) << "its own Sync: it runs after everything written before it";
  EXPECT_TRUE(h.wire[1].parse);
  EXPECT_FALSE(h.core.statements().contains("q1"));
  h.reply();
  h.reply();
  EXPECT_EQ(h.outcome(4), pipe_outcome::ok);
  EXPECT_EQ(h.outcomes.count(h.sent_log[3].id), 0u) << "the Close never completes to anyone";
}

TEST(pipeline_core, with_close_prepared_a_stale_statement_is_closed) {
  harness h(closing_params());
  h.submit(1, shared_req("select * from t"));
  h.write();
  h.reply();
  const std::string old_name = h.sent_log[0].name;
  h.submit(2, shared_req("select * from t"));
  h.write();
  h.reply({pipe_result::error, "0A000", true});
  h.write();
  ASSERT_EQ(h.wire.size(), 2u);
  EXPECT_EQ(h.wire[0].id, 2u);
  EXPECT_TRUE(h.wire[1].close);
  EXPECT_EQ(h.wire[1].name, old_name);
  h.reply();
  h.reply();
  EXPECT_EQ(h.outcome(2), pipe_outcome::ok);
  EXPECT_EQ(h.completions(2), 1u);
}

TEST(pipeline_core, statements_in_flight_are_never_evicted) {
  harness h;
  for (pipe_id i = 1; i <= 3; ++i) h.submit(i, shared_req("q" + std::to_string(i)));
  h.write();  // all three in flight, cache full
  h.submit(4, shared_req("q4"));
  h.write();
  ASSERT_EQ(h.wire.size(), 4u);
  EXPECT_FALSE(h.wire[3].internal);
  EXPECT_TRUE(h.wire[3].name.empty()) << "no idle statement to evict: unnamed";
}

TEST(pipeline_core, stale_plan_is_dropped_and_the_request_rerun_once_transparently) {
  harness h;
  h.submit(1, shared_req("select * from t"));
  h.write();
  h.reply();
  const std::string old_name = h.sent_log[0].name;
  h.submit(2, shared_req("select * from t"));
  h.write();
  EXPECT_FALSE(h.wire.front().parse);
  h.reply({pipe_result::error, "0A000", true});
  EXPECT_EQ(h.completions(2), 0u) << "the caller does not see 0A000";
  EXPECT_EQ(h.released, 1u) << "capacity stays held while the request is re-run";
  h.write();
  ASSERT_EQ(h.wire.size(), 2u);
  EXPECT_EQ(h.wire[0].id, 2u);
  EXPECT_TRUE(h.wire[0].parse);
  EXPECT_NE(h.wire[0].name, old_name);
  EXPECT_TRUE(h.wire[1].internal);
  EXPECT_EQ(h.wire[1].name, "deallocate " + old_name);
  h.reply();
  h.reply({pipe_result::error, "26000"});  // a failing DEALLOCATE is nobody's business
  EXPECT_EQ(h.outcome(2), pipe_outcome::ok);
  EXPECT_EQ(h.completions(2), 1u);
  EXPECT_EQ(h.released, 2u);
}

TEST(pipeline_core, missing_statement_is_prepared_again_without_deallocate) {
  harness h;
  h.submit(1, shared_req("q"));
  h.write();
  h.reply();
  h.submit(2, shared_req("q"));
  h.write();
  h.reply({pipe_result::error, "26000", true});
  h.write();
  ASSERT_EQ(h.wire.size(), 1u);
  EXPECT_TRUE(h.wire[0].parse);
  h.reply();
  EXPECT_EQ(h.outcome(2), pipe_outcome::ok);
}

// The repair bound is the policy's (statement_cache::max_repairs), counted
// over the request's re-runs, whether or not a re-run carried its own Parse.
TEST(pipeline_core, a_request_is_rerun_at_most_max_repairs_times) {
  harness h;
  h.submit(1, shared_req("q"));
  h.write();
  h.reply();
  h.submit(2, shared_req("q"));
  h.write();
  h.reply({pipe_result::error, "26000", true});
  for (unsigned i = 0; i < pgpipe::detail::statement_cache::max_repairs; ++i) {
    h.write();
    ASSERT_EQ(h.completions(2), 0u) << "after " << i << " re-runs";
    while (!h.wire.empty() && h.wire.front().internal) h.reply();  // the stale statement's DEALLOCATE
    ASSERT_FALSE(h.wire.empty());
    EXPECT_TRUE(h.wire.front().parse) << "each re-run prepares afresh";
    h.reply({pipe_result::error, "0A000", true});
  }
  EXPECT_EQ(h.outcome(2), pipe_outcome::sql_error);
  EXPECT_EQ(h.completions(2), 1u);
}

// A migration of two statements (add a column, then change a type): a
// re-run that executed a statement another re-run prepared between the two
// meets the second change. It never parsed anything itself, so it is repaired
// again instead of reporting 0A000 to its caller.
TEST(pipeline_core, a_rerun_on_a_statement_another_rerun_prepared_is_repaired_again) {
  harness h;
  h.submit(1, shared_req("q"));
  h.write();
  h.reply();
  h.submit(2, shared_req("q"));
  h.submit(3, shared_req("q"));
  h.write();
  ASSERT_EQ(h.wire.size(), 2u);
  h.reply({pipe_result::error, "0A000", true});  // first change: 2 repaired
  h.reply({pipe_result::error, "0A000", true});  // 3 too, no second DEALLOCATE
  EXPECT_EQ(h.completions(2) + h.completions(3), 0u);
  h.write();
  // 2 prepares the statement again; 3 executes it by name.
  std::string fresh;
  for (const auto& w : h.wire) {
    if (w.id == 2) {
      EXPECT_TRUE(w.parse);
      fresh = w.name;
    }
  }
  for (const auto& w : h.wire) {
    if (w.id == 3) {
      ASSERT_FALSE(w.parse) << "precondition: 3 uses 2's statement";
      EXPECT_EQ(w.name, fresh);
    }
  }
  // The second change lands after 2 ran and before 3 did.
  while (!h.wire.empty()) {
    if (h.wire.front().id == 3) h.reply({pipe_result::error, "0A000", true});
    else h.reply();
  }
  EXPECT_EQ(h.outcome(2), pipe_outcome::ok);
  EXPECT_EQ(h.completions(3), 0u) << "3 parsed nothing itself: its 0A000 is repaired, not reported";
  h.write();
  bool parsed = false;
  for (const auto& w : h.wire) {
    if (w.id == 3) parsed = w.parse;
  }
  EXPECT_TRUE(parsed) << "the second re-run prepares its own statement";
  while (!h.wire.empty()) h.reply();
  EXPECT_EQ(h.outcome(3), pipe_outcome::ok);
  EXPECT_EQ(h.completions(3), 1u);
}

// A statement that keeps changing under its callers is not chased for ever:
// eight callers, every execution meets a changed plan. Each round the
// oldest re-run prepares the statement and the others use it, so without a
// bound the youngest would run eight times.
TEST(pipeline_core, a_request_is_repaired_a_bounded_number_of_times) {
  pipeline_params p = base_params();
  p.depth = 16;  // all eight on the wire together
  harness h(p);
  h.submit(1, shared_req("q"));
  h.write();
  h.reply();
  for (pipe_id id = 2; id <= 9; ++id) h.submit(id, shared_req("q"));
  for (int round = 0; round < 20 && h.core.has_written_or_waiting(); ++round) {
    h.write();
    while (!h.wire.empty()) {
      if (h.wire.front().internal) h.reply();
      else h.reply({pipe_result::error, "0A000", true});
    }
  }
  for (pipe_id id = 2; id <= 9; ++id) {
    EXPECT_EQ(h.completions(id), 1u) << id;
    if (h.completions(id) == 1) {
      EXPECT_EQ(h.outcome(id), pipe_outcome::sql_error) << id;
    }
  }
  std::size_t runs_of_9 = 0;
  for (const auto& w : h.sent_log) runs_of_9 += w.id == 9 ? 1 : 0;
  EXPECT_GE(runs_of_9, 2u);
  EXPECT_LE(runs_of_9, 4u) << "at most three repairs";
}

TEST(pipeline_core, lease_request_is_not_rerun_out_of_order_or_inside_a_transaction) {
  harness h;
  // Prepares "q" (an answer with a Parse on the wire) and runs it once named.
  pipe_id next = 1;
  auto prepare_q = [&] {
    h.submit(next, lease_req("q"));
    h.write();
    while (!h.wire.empty()) h.reply();
    EXPECT_EQ(h.outcome(next), pipe_outcome::ok);
    ++next;
  };
  prepare_q();
  h.submit(10, lease_req("q"));
  h.submit(11, lease_req("other"));
  h.write();
  h.reply({pipe_result::error, "0A000", true});
  EXPECT_EQ(h.outcome(10), pipe_outcome::sql_error) << "request 11 was already written behind it";
  h.reply();
  h.write();  // the stale statement's DEALLOCATE
  while (!h.wire.empty()) h.reply();
  prepare_q();
  h.submit(12, lease_req("q"));
  h.write();
  h.reply({pipe_result::error, "0A000", true, false, tx_state::failed});
  EXPECT_EQ(h.outcome(12), pipe_outcome::sql_error) << "the error aborted the lease's transaction";
  h.write();
  while (!h.wire.empty()) h.reply({pipe_result::error, "25P02", false, false, tx_state::failed});
  prepare_q();
  h.submit(13, lease_req("q"));
  h.write();
  h.reply({pipe_result::error, "0A000", true});
  EXPECT_EQ(h.completions(13), 0u) << "alone and idle: re-run";
  h.write();
  while (!h.wire.empty()) h.reply();
  EXPECT_EQ(h.outcome(13), pipe_outcome::ok);
  EXPECT_TRUE(h.closes.empty());
}

// A lease request that cannot run again (inside a transaction the error
// aborted, or with requests written behind it) reports the error, and the
// statement is dropped all the same: it is stale for every later use, so
// the next one prepares it afresh instead of failing the same way.
TEST(pipeline_core, a_stale_statement_a_lease_cannot_rerun_is_dropped_so_its_next_use_prepares_it) {
  for (const bool in_transaction : {true, false}) {
    SCOPED_TRACE(in_transaction ? "inside a transaction" : "with a request written behind it");
    harness h;
    h.submit(1, lease_req("q"));
    h.write();
    h.reply();
    const std::string old_name = h.sent_log[0].name;
    h.submit(2, lease_req("q"));
    if (!in_transaction) h.submit(3, lease_req("other"));
    h.write();
    h.reply({pipe_result::error, "0A000", true, false, in_transaction ? tx_state::failed : tx_state::idle});
    EXPECT_EQ(h.outcome(2), pipe_outcome::sql_error);
    EXPECT_FALSE(h.core.statements().contains("q")) << "the stale statement is still cached";
    if (!in_transaction) h.reply();
    // The old name is dropped by the lease's own request, whatever the
    // server says to it (25P02 inside the aborted transaction).
    h.write();
    ASSERT_EQ(h.wire.size(), 1u);
    EXPECT_TRUE(h.wire.front().internal);
    EXPECT_EQ(h.wire.front().name, "deallocate " + old_name);
    h.reply({pipe_result::error, in_transaction ? "25P02" : "", false, false,
             in_transaction ? tx_state::failed : tx_state::idle});
    EXPECT_TRUE(h.closes.empty()) << h.closes.front();
    h.submit(4, lease_req("q"));
    h.write();
    ASSERT_EQ(h.wire.size(), 1u);
    EXPECT_TRUE(h.wire.front().parse) << "the next use runs the stale statement again";
    EXPECT_NE(h.wire.front().name, old_name);
    h.reply();
    EXPECT_EQ(h.outcome(4), pipe_outcome::ok);
  }
}

// The repair on a lease queues its DEALLOCATE behind what the lease had
// already submitted: with depth 1, a BEGIN waiting behind the stale
// statement goes first, and the DEALLOCATE's Sync finds the lease's
// transaction open. That is the lease's transaction, not a shared request
// that left one open: the connection stays, and the lease's COMMIT runs.
TEST(pipeline_core, a_repairs_deallocate_inside_the_leases_transaction_keeps_the_connection) {
  auto p = base_params();
  p.depth = 1;
  harness h(p);
  h.submit(1, lease_req("q"));
  h.write();
  h.reply();
  h.submit(2, lease_req("q"));
  h.write();
  h.submit(3, lease_req("begin"));
  h.reply({pipe_result::error, "0A000", true});
  EXPECT_EQ(h.completions(2), 0u) << "alone and idle: re-run";
  std::vector<std::string> order;
  tx_state tx = tx_state::idle;
  for (int i = 0; i < 3; ++i) {
    h.write();
    ASSERT_EQ(h.wire.size(), 1u);
    const auto w = h.wire.front();
    order.push_back(w.internal ? "deallocate" : std::to_string(w.id));
    if (w.id == 3) tx = tx_state::in_transaction;
    h.reply({pipe_result::command_ok, "", false, false, tx});
  }
  EXPECT_EQ(order, (std::vector<std::string>{"2", "3", "deallocate"}));
  EXPECT_TRUE(h.closes.empty()) << "the lease's own DEALLOCATE tripped the shared-path safety net";
  EXPECT_EQ(h.outcome(2), pipe_outcome::ok);
  EXPECT_EQ(h.outcome(3), pipe_outcome::ok);
  h.submit(4, lease_req("commit"));
  h.write();
  h.reply();
  EXPECT_EQ(h.outcome(4), pipe_outcome::ok);
}

// Eviction on a lease: the DEALLOCATE written just ahead of a new statement
// inside the lease's transaction is the lease's too.
TEST(pipeline_core, an_eviction_inside_a_leases_transaction_keeps_the_connection) {
  harness h;  // max_prepared 3: "begin", "q2", "q3" fill the cache
  h.submit(1, lease_req("begin"));
  h.write();
  h.reply({pipe_result::command_ok, "", false, false, tx_state::in_transaction});
  for (pipe_id i = 2; i <= 3; ++i) {
    h.submit(i, lease_req("q" + std::to_string(i)));
    h.write();
    h.reply({pipe_result::command_ok, "", false, false, tx_state::in_transaction});
  }
  h.submit(4, lease_req("q4"));  // the cache is full: one is evicted
  h.write();
  ASSERT_EQ(h.wire.size(), 2u);
  EXPECT_TRUE(h.wire.front().internal);
  h.reply({pipe_result::command_ok, "", false, false, tx_state::in_transaction});
  EXPECT_TRUE(h.closes.empty()) << "the lease's eviction tripped the shared-path safety net";
  ASSERT_EQ(h.wire.size(), 1u);
  h.reply({pipe_result::command_ok, "", false, false, tx_state::in_transaction});
  EXPECT_EQ(h.outcome(4), pipe_outcome::ok);
}

TEST(pipeline_core, non_retryable_errors_and_detached_requests_are_not_rerun) {
  harness h;
  h.submit(1, shared_req("q"));
  h.write();
  h.reply();
  h.submit(2, shared_req("q"));
  h.submit(3, shared_req("q"));
  h.write();
  h.core.cancel(h.now, 3, true);
  h.pump();
  h.reply({pipe_result::error, "0A000", false});
  EXPECT_EQ(h.outcome(2), pipe_outcome::sql_error);
  h.reply({pipe_result::error, "0A000", true});
  EXPECT_EQ(h.outcomes.at(3), (std::vector<pipe_outcome>{pipe_outcome::cancelled_detached}));
  h.write();
  for (const auto& w : h.wire) EXPECT_NE(w.id, 3u) << "a detached request is not sent again";
}

TEST(pipeline_core, two_repairs_read_in_one_go_rerun_in_submission_order) {
  harness h;
  h.submit(1, shared_req("a"));
  h.submit(2, shared_req("b"));
  h.write();
  h.reply();
  h.reply();  // "a" and "b" prepared
  h.submit(3, shared_req("a"));
  h.submit(4, shared_req("b"));
  h.write();
  ASSERT_FALSE(h.wire[0].parse);
  ASSERT_FALSE(h.wire[1].parse);
  h.submit(5, shared_req("c"));  // newer work, waiting
  // Both plans changed; both Syncs are read before the next write pass.
  h.reply({pipe_result::error, "0A000", true});
  h.reply({pipe_result::error, "0A000", true});
  ASSERT_EQ(h.completions(3) + h.completions(4), 0u);
  h.write();
  std::vector<pipe_id> rerun;
  for (std::size_t i = 4; i < h.sent_log.size(); ++i)
    if (!h.sent_log[i].internal) rerun.push_back(h.sent_log[i].id);
  EXPECT_EQ(rerun, (std::vector<pipe_id>{3, 4, 5})) << "the earlier repair first, then newer work";
  while (!h.wire.empty()) h.reply();
  h.write();
  while (!h.wire.empty()) h.reply();
  EXPECT_EQ(h.completion_order, (std::vector<pipe_id>{1, 2, 3, 4, 5}));
  for (pipe_id id : {3, 4, 5}) EXPECT_EQ(h.outcome(id), pipe_outcome::ok) << id;
}

TEST(pipeline_core, prepared_statements_off_sends_every_request_unnamed_and_pipelined) {
  auto p = base_params();
  p.prepared_statements = false;
  harness h(p);
  for (pipe_id id = 1; id <= 3; ++id) h.submit(id, shared_req("select $1"));
  h.write();
  ASSERT_EQ(h.wire.size(), 3u) << "still pipelined: all three written before any answer";
  for (const auto& w : h.wire) {
    EXPECT_TRUE(w.name.empty());
    EXPECT_FALSE(w.parse);
  }
  EXPECT_EQ(h.flushes, 1u);
  h.reply();
  // A 26000 on an unnamed request is the statement's own error, never repaired.
  h.reply({pipe_result::error, "26000", true});
  h.reply();
  EXPECT_EQ(h.outcome(1), pipe_outcome::ok);
  EXPECT_EQ(h.outcome(2), pipe_outcome::sql_error);
  EXPECT_EQ(h.outcome(3), pipe_outcome::ok);
  EXPECT_EQ(h.core.statements().size(), 0u);
  EXPECT_EQ(h.sent_log.size(), 3u) << "nothing re-sent";
  EXPECT_FALSE(h.core.pooler_detected());
}

TEST(pipeline_core, fresh_name_already_existing_means_a_pooler_and_turns_names_off) {
  harness h;
  h.submit(1, shared_req("select 1"));
  h.submit(2, shared_req("select 2"));
  h.write();
  // The Parse of a name this connection never used fails with 42P05: another
  // client made it on the same server session.
  h.core.on_result(pipe_result::error, "42P05");
  h.core.on_command_end();
  h.core.on_result(pipe_result::aborted);
  h.core.on_command_end();
  h.wire.pop_front();
  h.core.on_sync(h.now, tx_state::idle);
  h.pump();
  EXPECT_EQ(h.outcome(1), pipe_outcome::pooler_suspected);
  EXPECT_TRUE(h.core.pooler_detected());
  EXPECT_TRUE(h.core.take_pooler_warning());
  EXPECT_FALSE(h.core.take_pooler_warning()) << "logged once per connection";
  EXPECT_EQ(h.released, 1u);
  h.reply();  // request 2 was written named before the detection
  EXPECT_EQ(h.outcome(2), pipe_outcome::ok);
  // From here on: unnamed, even for SQL seen before.
  h.submit(3, shared_req("select 2"));
  h.submit(4, shared_req("select 4"));
  h.write();
  ASSERT_EQ(h.wire.size(), 2u);
  EXPECT_TRUE(h.wire[0].name.empty());
  EXPECT_TRUE(h.wire[1].name.empty());
  EXPECT_FALSE(h.wire[0].parse);
}

TEST(pipeline_core, repair_whose_fresh_parse_vanishes_again_means_a_pooler) {
  harness h;
  h.submit(1, shared_req("q"));
  h.write();
  h.reply();
  h.submit(2, shared_req("q"));
  h.write();
  h.reply({pipe_result::error, "26000", true});  // repaired: re-run with a fresh Parse
  EXPECT_EQ(h.completions(2), 0u);
  EXPECT_FALSE(h.core.pooler_detected()) << "one 26000 may be a DEALLOCATE on a lease: repaired silently";
  h.write();
  ASSERT_TRUE(h.wire.front().parse);
  h.reply({pipe_result::error, "26000", true});  // our own Parse, gone at once
  EXPECT_EQ(h.outcome(2), pipe_outcome::pooler_suspected);
  EXPECT_EQ(h.completions(2), 1u);
  EXPECT_TRUE(h.core.pooler_detected());
}

TEST(pipeline_core, other_errors_after_a_fresh_parse_are_not_taken_for_a_pooler) {
  harness h;
  h.submit(1, shared_req("select 1/0"));
  h.write();
  h.reply({pipe_result::error, "22012"});
  harness::answer syntax;
  syntax.err_in_parse = true;  // 42601
  h.submit(2, shared_req("selec"));
  h.write();
  h.reply(syntax);
  EXPECT_EQ(h.outcome(1), pipe_outcome::sql_error);
  EXPECT_EQ(h.outcome(2), pipe_outcome::sql_error);
  EXPECT_FALSE(h.core.pooler_detected());
}

}  // namespace
