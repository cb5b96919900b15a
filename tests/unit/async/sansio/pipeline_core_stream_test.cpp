// pipeline_core unit tests (fake server: pipeline_core_harness.hpp).
// Streams: single-row mode when the stream becomes the head, and a stream
// its reader abandoned.
#include "pipeline_core_harness.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace {
using namespace pgpipe::test::pipeline_harness;

TEST(pipeline_core, stream_gets_single_row_mode_when_it_becomes_the_head) {
  harness h;
  h.submit(1, lease_req("a"));
  auto s = lease_req("big");
  s.stream = true;
  h.submit(2, s);
  h.write();
  EXPECT_TRUE(h.single_rows.empty()) << "not while another query is current";
  h.reply();
  EXPECT_EQ(h.single_rows, (std::vector<pipe_id>{2}));
  harness::answer rows;
  rows.rows = 3;
  auto keeps = h.reply(rows);
  EXPECT_EQ(std::count(keeps.begin(), keeps.end(), pipe_keep::stream_row), 3);
  EXPECT_EQ(keeps.back(), pipe_keep::as_ok) << "the final empty result carries the command tag";
  EXPECT_EQ(h.outcome(2), pipe_outcome::ok);
}

TEST(pipeline_core, abandoned_stream_discards_rows_and_asks_the_server_to_stop) {
  harness h;
  auto s = lease_req("big");
  s.stream = true;
  h.submit(1, s);
  h.write();
  EXPECT_EQ(h.single_rows, (std::vector<pipe_id>{1}));
  EXPECT_EQ(h.core.on_result(pipe_result::rows), pipe_keep::stream_row);
  h.core.stream_abandoned(h.now, 1);
  h.pump();
  EXPECT_EQ(h.cancels, (std::vector<pipe_id>{1}));
  EXPECT_EQ(h.core.on_result(pipe_result::rows), pipe_keep::discard);
}

TEST(pipeline_core, abandoned_waiting_stream_is_removed) {
  harness h;
  h.submit(1, lease_req("a"));
  auto s = lease_req("big");
  s.stream = true;
  h.write();
  h.submit(2, s);
  h.core.stream_abandoned(h.now, 2);
  h.pump();
  EXPECT_EQ(h.outcome(2), pipe_outcome::cancelled_unsent);
}

}  // namespace
