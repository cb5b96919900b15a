// pipeline_core unit tests (fake server: pipeline_core_harness.hpp).
// FIFO and Sync accounting: requests are written in order, up to the
// depth limit, one Sync each, and each completes at its own Sync.
#include "pipeline_core_harness.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {
using namespace pgpipe::test::pipeline_harness;

TEST(pipeline_core, write_pass_sends_waiting_requests_then_flushes_once) {
  harness h;
  h.submit(1, shared_req("a"));
  h.submit(2, shared_req("b"));
  EXPECT_TRUE(h.wire.empty()) << "nothing is written before the write pass";
  h.write();
  ASSERT_EQ(h.wire.size(), 2u);
  EXPECT_EQ(h.wire[0].id, 1u);
  EXPECT_EQ(h.wire[1].id, 2u);
  EXPECT_EQ(h.flushes, 1u);
  h.write();
  EXPECT_EQ(h.flushes, 1u) << "an empty write pass flushes nothing";
}

TEST(pipeline_core, results_complete_requests_in_order_and_release_at_sync) {
  harness h;
  h.submit(1, shared_req("a"));
  h.submit(2, shared_req("b"));
  h.write();
  h.reply();
  EXPECT_EQ(h.outcome(1), pipe_outcome::ok);
  EXPECT_EQ(h.completions(2), 0u);
  EXPECT_EQ(h.released, 1u);
  h.reply();
  EXPECT_EQ(h.outcome(2), pipe_outcome::ok);
  EXPECT_EQ(h.completion_order, (std::vector<pipe_id>{1, 2}));
  EXPECT_EQ(h.released, 2u);
  EXPECT_FALSE(h.core.head());
}

TEST(pipeline_core, sql_error_fails_only_its_own_segment) {
  harness h;
  h.submit(1, shared_req("a"));
  h.submit(2, shared_req("b"));
  h.write();
  auto keeps = h.reply({pipe_result::error, "22012"});
  EXPECT_EQ(keeps.back(), pipe_keep::as_error);
  h.reply();
  EXPECT_EQ(h.outcome(1), pipe_outcome::sql_error);
  EXPECT_EQ(h.outcome(2), pipe_outcome::ok);
}

TEST(pipeline_core, sync_without_result_is_a_protocol_error) {
  harness h;
  h.submit(1, lease_req());
  h.write();
  h.core.on_command_end();
  h.core.on_sync(h.now, tx_state::idle);
  h.pump();
  EXPECT_EQ(h.outcome(1), pipe_outcome::no_result);
}

TEST(pipeline_core, depth_limit_holds_requests_back_until_a_sync) {
  harness h;
  for (pipe_id i = 1; i <= 6; ++i) h.submit(i, shared_req("q" + std::to_string(i)));
  h.write();
  EXPECT_EQ(h.wire.size(), 4u);
  EXPECT_EQ(h.core.waiting(), 2u);
  h.reply();
  h.write();
  EXPECT_EQ(h.wire.size(), 4u);
  EXPECT_EQ(h.wire.back().id, 5u);
}

TEST(pipeline_core, too_many_parameters_are_refused_without_writing) {
  harness h;
  auto r = shared_req();
  r.param_count = 65536;
  h.submit(1, r);
  h.write();
  EXPECT_TRUE(h.wire.empty());
  EXPECT_EQ(h.outcome(1), pipe_outcome::too_many_params);
  EXPECT_EQ(h.released, 1u);
}

}  // namespace
