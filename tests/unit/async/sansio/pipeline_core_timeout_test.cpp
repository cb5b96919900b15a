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
