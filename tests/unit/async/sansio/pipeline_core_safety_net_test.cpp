// pipeline_core unit tests (fake server: pipeline_core_harness.hpp).
// The shared-path safety net: a shared request that leaves a transaction
// open retires the connection; a lease may hold one open.
#include "pipeline_core_harness.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {
using namespace pgpipe::test::pipeline_harness;

TEST(pipeline_core, shared_request_leaving_a_transaction_open_retires_the_connection) {
  harness h;
  h.submit(1, shared_req("begin-ish"));
  h.submit(2, shared_req("b"));
  h.write();
  h.submit(3, shared_req("c"));
  h.reply({pipe_result::command_ok, "", false, false, tx_state::in_transaction});
  EXPECT_EQ(h.outcome(1), pipe_outcome::transaction_left_open);
  EXPECT_EQ(h.outcome(2), pipe_outcome::connection_lost) << "may have run inside the transaction";
  EXPECT_EQ(h.outcome(3), pipe_outcome::not_sent);
  ASSERT_EQ(h.closes.size(), 1u);
  EXPECT_EQ(h.released, 0u) << "the pool forgets a broken slot's grants";
  h.write();
  EXPECT_FALSE(h.sent_after_close);
}

TEST(pipeline_core, lease_may_hold_a_transaction_open) {
  harness h;
  h.submit(1, lease_req("begin"));
  h.write();
  h.reply({pipe_result::command_ok, "", false, false, tx_state::in_transaction});
  EXPECT_EQ(h.outcome(1), pipe_outcome::ok);
  EXPECT_TRUE(h.closes.empty());
}

}  // namespace
