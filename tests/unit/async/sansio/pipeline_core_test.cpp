// pipeline_core tests with a scripted fake server: no libpq, no sockets, no
// sleeping. Time moves only when a test advances it. The fake answers each
// written request the way libpq reports a pipeline segment: (Parse result,
// NULL)?, Execute result(s), NULL, PIPELINE_SYNC. A coalesced batch (sends
// without a Sync) is one segment: after an error, every later command of it
// is PIPELINE_ABORTED (+ NULL), and only the last request is followed by the
// PIPELINE_SYNC.
#include "async/sansio/pipeline_core.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using pgpipe::detail::pipe_action;
using pgpipe::detail::pipe_id;
using pgpipe::detail::pipe_keep;
using pgpipe::detail::pipe_outcome;
using pgpipe::detail::pipe_request;
using pgpipe::detail::pipe_result;
using pgpipe::detail::pipeline_core;
using pgpipe::detail::pipeline_params;
using pgpipe::detail::time_point;
using pgpipe::detail::tx_state;

using kind = pipe_action::kind;

pipeline_params base_params() {
  pipeline_params p;
  p.depth = 4;
  p.max_prepared = 3;
  p.stall_timeout = 0ms;
  p.cancel_bound = 1000ms;
  return p;
}

pipe_request shared_req(std::string sql = "select 1") {
  pipe_request r;
  r.sql = std::move(sql);
  r.pooled = true;
  return r;
}

pipe_request lease_req(std::string sql = "select 1") {
  pipe_request r;
  r.sql = std::move(sql);
  r.on_lease = true;
  return r;
}

// The server's answer to the head of the wire. `exec` is the Execute's
// result; `err_in_parse` makes the Parse fail instead.
struct server_answer {
  pipe_result exec = pipe_result::command_ok;
  std::string sqlstate;
  bool retryable = false;
  bool err_in_parse = false;
  tx_state tx = tx_state::idle;
  int rows = 0;  ///< extra single-row results before the final one
};

// Carries out the core's actions the way the shell would, and records them.
struct harness {
  explicit harness(pipeline_params p = base_params()) : core(p), depth(p.depth) {}

  pipeline_core core;
  std::size_t depth;
  time_point now{std::chrono::seconds(1000)};

  struct wire_entry {
    pipe_id id;
    bool parse;
    std::string name;  ///< statement executed, or the SQL of an internal send
    bool internal;
    bool sync = true;  ///< a Sync follows it
  };
  std::deque<wire_entry> wire;  ///< sent, Sync not yet answered
  std::vector<wire_entry> sent_log;
  std::map<pipe_id, std::vector<pipe_outcome>> outcomes;
  std::vector<pipe_id> completion_order;
  std::vector<pipe_id> cancels;
  std::vector<pipe_id> single_rows;
  std::vector<std::string> closes;
  std::size_t released = 0;
  std::size_t flushes = 0;
  bool sent_after_close = false;
  std::vector<pipe_id> copies;      ///< start_copy actions
  bool copy_over_pipeline = false;  ///< a COPY started with requests still on the wire
  std::size_t max_outstanding = 0;
  // Coalesced batches, as the server sees them.
  bool batch_failed = false;          ///< a command of the open batch failed: the rest is skipped
  std::vector<pipe_id> batch_answered;  ///< answered requests of the open batch (no Sync yet)
  std::set<pipe_id> executed;           ///< requests whose Execute ran on the server
  bool replayed_executed = false;       ///< one of those was written again
  std::size_t syncs_on_wire = 0;

  void pump() {
    for (pipe_action& a : core.take_actions()) {
      switch (a.what) {
        case kind::send:
        case kind::send_internal: {
          if (!closes.empty()) sent_after_close = true;
          wire_entry w{a.id, a.parse, a.name, a.what == kind::send_internal, a.sync};
          if (executed.count(a.id)) replayed_executed = true;
          wire.push_back(w);
          sent_log.push_back(w);
          if (w.sync) ++syncs_on_wire;
          max_outstanding = std::max(max_outstanding, wire.size() + batch_answered.size());
          break;
        }
        case kind::flush:
          ++flushes;
          break;
        case kind::single_row:
          single_rows.push_back(a.id);
          break;
        case kind::complete:
          outcomes[a.id].push_back(a.outcome);
          completion_order.push_back(a.id);
          break;
        case kind::release:
          released += a.units;
          break;
        case kind::start_cancel:
          cancels.push_back(a.id);
          break;
        case kind::close:
          closes.push_back(a.reason);
          wire.clear();
          batch_answered.clear();
          break;
        case kind::start_copy:
          if (!closes.empty()) sent_after_close = true;
          if (!wire.empty()) copy_over_pipeline = true;
          copies.push_back(a.id);
          break;
      }
    }
  }

  void submit(pipe_id id, pipe_request r) {
    core.submit(now, id, std::move(r));
    pump();
  }
  void write() {
    core.write_pass(now);
    pump();
  }

  using answer = server_answer;
  /// Answers the oldest request on the wire; `synced` gets the requests whose
  /// Sync this answer read (the whole batch when it was the batch's last).
  std::vector<pipe_keep> reply(answer a = answer(), std::vector<pipe_id>* synced = nullptr) {
    std::vector<pipe_keep> keeps;
    EXPECT_FALSE(wire.empty());
    if (wire.empty()) return keeps;
    wire_entry w = wire.front();
    EXPECT_EQ(core.head(), w.id);
    if (batch_failed) {
      // Skipped: an earlier request of this batch failed.
      if (w.parse) {
        keeps.push_back(core.on_result(pipe_result::aborted));
        core.on_command_end();
      }
      keeps.push_back(core.on_result(pipe_result::aborted));
      core.on_command_end();
    } else if (w.parse) {
      if (a.err_in_parse) {
        keeps.push_back(core.on_result(pipe_result::error, "42601"));
        core.on_command_end();
        keeps.push_back(core.on_result(pipe_result::aborted));
      } else {
        keeps.push_back(core.on_result(pipe_result::command_ok));
        core.on_command_end();
        pump();
      }
    }
    if (!batch_failed && !(w.parse && a.err_in_parse)) {
      for (int i = 0; i < a.rows; ++i) keeps.push_back(core.on_result(pipe_result::rows));
      keeps.push_back(core.on_result(a.exec, a.sqlstate, a.retryable));
      if (!(a.exec == pipe_result::error && a.retryable)) executed.insert(w.id);
    }
    if (!batch_failed) {
      core.on_command_end();
      if ((w.parse && a.err_in_parse) || a.exec == pipe_result::error) batch_failed = true;
    }
    wire.pop_front();
    batch_answered.push_back(w.id);
    if (!w.sync) {
      pump();
      return keeps;
    }
    if (synced) *synced = batch_answered;
    batch_answered.clear();
    batch_failed = false;
    core.on_sync(now, a.tx);
    pump();
    return keeps;
  }

  std::size_t completions(pipe_id id) const {
    auto it = outcomes.find(id);
    return it == outcomes.end() ? 0 : it->second.size();
  }
  pipe_outcome outcome(pipe_id id) const { return outcomes.at(id).at(0); }
};

// ---- the FIFO and Sync accounting ------------------------------------------------

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

// ---- the statement cache ------------------------------------------------------

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

// ---- migration repair ------------------------------------------------------------

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

TEST(pipeline_core, a_request_is_rerun_at_most_once) {
  harness h;
  h.submit(1, shared_req("q"));
  h.write();
  h.reply();
  h.submit(2, shared_req("q"));
  h.write();
  h.reply({pipe_result::error, "26000", true});
  h.write();
  // The re-run carries its own Parse: a failure now is reported.
  h.reply({pipe_result::error, "0A000", true});
  EXPECT_EQ(h.outcome(2), pipe_outcome::sql_error);
  EXPECT_EQ(h.completions(2), 1u);
}

TEST(pipeline_core, lease_request_is_not_rerun_out_of_order_or_inside_a_transaction) {
  harness h;
  h.submit(1, lease_req("q"));
  h.write();
  h.reply();
  h.submit(2, lease_req("q"));
  h.submit(3, lease_req("other"));
  h.write();
  h.reply({pipe_result::error, "0A000", true});
  EXPECT_EQ(h.outcome(2), pipe_outcome::sql_error) << "request 3 was already written behind it";
  EXPECT_TRUE(h.core.statements().contains("q")) << "a failed Execute does not drop the statement by itself";
  h.reply();
  h.submit(4, lease_req("q"));
  h.write();
  h.reply({pipe_result::error, "0A000", true, false, tx_state::failed});
  EXPECT_EQ(h.outcome(4), pipe_outcome::sql_error) << "the error aborted the lease's transaction";
  h.submit(5, lease_req("q"));
  h.write();
  h.reply({pipe_result::error, "0A000", true});
  EXPECT_EQ(h.completions(5), 0u) << "alone and idle: re-run";
  h.write();
  h.reply();
  EXPECT_EQ(h.outcome(5), pipe_outcome::ok);
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
  EXPECT_TRUE(h.wire.empty()) << "a detached request is not sent again";
}

// ---- the shared-path safety net ---------------------------------------------------

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

// ---- breaks -----------------------------------------------------------------------

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
  h.reply();  // "q" is prepared now
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

// ---- cancellation -------------------------------------------------------------------

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

// ---- time -----------------------------------------------------------------------------

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

// ---- streams ----------------------------------------------------------------------------

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

// ---- randomized interleavings ---------------------------------------------------------------
//
// Thousands of seeded runs of random submits, server answers (rows, SQL
// errors, stale statements, open transactions), breaks, cancels and
// timeouts, checked against a simple model of what a caller may observe.

struct model_request {
  bool written = false;  ///< on the wire (written since it was last queued)
  bool lease = false;
  /// The server's last treatment of it: not answered yet, skipped (aborted
  /// in its batch), ran fine, failed.
  enum class treated { no, skipped, ok, error } last = treated::no;
};

TEST(pipeline_core, randomized_interleavings_keep_the_contract) {
  constexpr int runs = 3000;
  constexpr int steps = 200;
  std::size_t total_requests = 0;
  std::size_t total_at_break = 0;  ///< requests pending at a break, over all runs
  std::size_t total_skipped = 0;   ///< answers that were PIPELINE_ABORTED in a batch
  std::set<std::size_t> error_positions;  ///< where in a batch a failing request stood
  for (int seed = 1; seed <= runs; ++seed) {
    std::mt19937 rng(static_cast<unsigned>(seed));
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    auto p = base_params();
    p.depth = 1 + static_cast<std::size_t>(pick(6));
    p.max_prepared = static_cast<std::size_t>(pick(4));
    p.stall_timeout = pick(2) ? 300ms : 0ms;
    p.sync_batch = 1 + static_cast<std::size_t>(pick(5));
    harness h(p);
    const bool lease = pick(2) == 0;
    std::map<pipe_id, model_request> reqs;
    std::vector<pipe_id> answered;  ///< ids whose Sync the server sent, user requests
    pipe_id next = 1;
    auto write = [&] {
      h.write();
      for (auto& w : h.wire) {
        if (reqs.count(w.id)) reqs[w.id].written = true;
      }
    };
    auto answer = [&](const server_answer& a) {
      const auto w = h.wire.front();
      const pipe_id id = w.id;
      const bool skipped = h.batch_failed;
      if (skipped) ++total_skipped;
      const std::size_t position = h.batch_answered.size();  // in its batch
      const bool was_open = reqs.count(id) && h.completions(id) == 0;
      std::vector<pipe_id> synced;
      auto keeps = h.reply(a, &synced);
      if (reqs.count(id)) {
        answered.push_back(id);
        using t = model_request::treated;
        const bool failed = (w.parse && a.err_in_parse) || a.exec == pipe_result::error;
        reqs[id].last = skipped ? t::skipped : failed ? t::error : t::ok;
        if (failed && !skipped && !w.sync) error_positions.insert(position);  // a batch went on behind it
        // The shell keeps the result of the request it belongs to, nothing of a skipped one.
        if (skipped) {
          for (auto k : keeps) EXPECT_EQ(k, pipe_keep::discard) << "seed " << seed << " request " << id;
        } else if (was_open && !failed && !w.internal) {
          EXPECT_NE(keeps.back(), pipe_keep::discard) << "seed " << seed << " request " << id;
        }
      }
      // Synced but not completed: skipped in its batch, or refused before
      // executing (statement repair): queued again, not on the wire any more.
      for (pipe_id s : synced)
        if (reqs.count(s) && h.completions(s) == 0) reqs[s].written = false;
    };
    // A break's promise to callers, checked at every break: each request still
    // waiting for its answer completes exactly once, with connection_lost when
    // it is on the wire (sent, its Sync not read: it may have executed) and
    // with not_sent when it is not (never written, or queued again for a
    // statement repair: safe to retry). The wire is the fake server's, not
    // the core's bookkeeping, so a core that mislabels a request fails here.
    std::size_t checked_at_break = 0;
    auto break_now = [&](const char* reason) {
      std::map<pipe_id, bool> pending;  // id -> on the wire
      for (auto& [id, m] : reqs) {
        if (h.completions(id) != 0) continue;
        pending[id] = std::any_of(h.wire.begin(), h.wire.end(), [id = id](const auto& w) { return w.id == id; }) ||
                      std::count(h.batch_answered.begin(), h.batch_answered.end(), id) != 0;
      }
      h.core.on_broken(reason);
      h.pump();
      for (auto& [id, on_wire] : pending) {
        ASSERT_EQ(h.completions(id), 1u) << "seed " << seed << " request " << id;
        EXPECT_EQ(h.outcome(id), on_wire ? pipe_outcome::connection_lost : pipe_outcome::not_sent)
            << "seed " << seed << " request " << id << (on_wire ? " (on the wire)" : " (not written)");
      }
      checked_at_break += pending.size();
    };
    for (int s = 0; s < steps && h.closes.empty(); ++s) {
      switch (pick(10)) {
        case 0:
        case 1:
        case 2: {
          auto r = lease ? lease_req("q" + std::to_string(pick(5))) : shared_req("q" + std::to_string(pick(5)));
          if (pick(8) == 0) r.deadline = h.now + std::chrono::milliseconds(pick(500));
          if (lease && pick(10) == 0) r.stream = true;
          // Shared runs: reads marked for coalescing, often in bursts of a
          // few statements, so batches are long and fail at every position.
          const int burst = !lease && pick(3) != 0 ? 1 + pick(6) : 1;
          for (int b = 0; b < burst; ++b) {
            if (burst > 1) {
              r.coalesce = true;
              r.sql = "r" + std::to_string(pick(2));
            }
            reqs[next] = {false, lease};
            h.submit(next++, r);
          }
          break;
        }
        case 3:
          write();
          break;
        case 4:
        case 5:
        case 6: {
          if (h.wire.empty()) break;
          harness::answer a;
          switch (pick(8)) {
            case 0:
              a.exec = pipe_result::error;
              a.sqlstate = "22012";
              break;
            case 1:
              a.exec = pipe_result::error;
              a.sqlstate = pick(2) ? "0A000" : "26000";
              a.retryable = true;
              break;
            case 2:
              a.err_in_parse = true;
              break;
            case 3:
              a.rows = pick(4);
              a.exec = pipe_result::rows;
              break;
            default:
              break;
          }
          if (pick(40) == 0) a.tx = tx_state::in_transaction;
          // The head the core expects must be the oldest request on the wire.
          ASSERT_EQ(h.core.head(), h.wire.front().id) << "seed " << seed;
          answer(a);
          break;
        }
        case 7:
          if (next > 1) {
            h.core.cancel(h.now, 1 + static_cast<pipe_id>(pick(static_cast<int>(next - 1))), pick(3) != 0);
            h.pump();
          }
          if (pick(2)) {
            h.core.on_cancel_returned();
            write();
          }
          break;
        case 8:
          h.now += std::chrono::milliseconds(pick(400));
          h.core.on_tick(h.now);
          h.pump();
          break;
        case 9:
          if (pick(15) == 0) break_now("random break");
          break;
      }
      ASSERT_LE(h.core.written(), p.depth) << "seed " << seed;
      ASSERT_LE(h.max_outstanding, p.depth) << "seed " << seed;
      ASSERT_LE(h.core.statements().size(), p.max_prepared) << "seed " << seed;
    }
    // Drain: the server answers everything, then the connection breaks.
    for (int guard = 0; guard < 1000 && h.closes.empty(); ++guard) {
      h.core.on_cancel_returned();
      write();
      if (h.wire.empty()) {
        h.now += 10s;  // expire what is still waiting
        h.core.on_tick(h.now);
        h.pump();
        if (h.core.waiting() == 0 && h.core.written() == 0) break;
        continue;
      }
      answer(server_answer());
    }
    break_now("end");
    ASSERT_FALSE(h.sent_after_close) << "seed " << seed;
    ASSERT_FALSE(h.replayed_executed) << "seed " << seed << ": a request that ran was written again";
    for (auto& [id, m] : reqs) {
      ASSERT_EQ(h.completions(id), 1u) << "seed " << seed << " request " << id;
      const pipe_outcome o = h.outcome(id);
      // Lost exactly when it was on the wire; not sent exactly when not.
      if (o == pipe_outcome::connection_lost || o == pipe_outcome::not_sent) {
        EXPECT_EQ(o == pipe_outcome::connection_lost, m.written) << "seed " << seed << " request " << id;
      }
      // A request answered successfully was answered by its own Sync.
      if (o == pipe_outcome::ok) {
        EXPECT_NE(std::find(answered.begin(), answered.end(), id), answered.end()) << "seed " << seed;
      }
      // Its outcome is what the server did with it the last time: a skipped
      // request is never reported as run (it is re-sent, or fails unsent/lost/cancelled).
      using t = model_request::treated;
      if (o == pipe_outcome::ok) {
        EXPECT_EQ(m.last, t::ok) << "seed " << seed << " request " << id;
      }
      if (o == pipe_outcome::sql_error || o == pipe_outcome::pooler_suspected) {
        EXPECT_EQ(m.last, t::error) << "seed " << seed << " request " << id;
      }
      if (m.last == t::skipped) {
        EXPECT_TRUE(o != pipe_outcome::ok && o != pipe_outcome::sql_error && o != pipe_outcome::no_result)
            << "seed " << seed << " request " << id;
      }
    }
    // In order: requests completed by their Sync complete in the order the
    // server answered them.
    std::vector<pipe_id> by_sync;
    for (pipe_id id : h.completion_order) {
      auto o = h.outcome(id);
      if (o == pipe_outcome::ok || o == pipe_outcome::sql_error) by_sync.push_back(id);
    }
    std::vector<pipe_id> last_answer;
    std::set<pipe_id> seen;
    for (auto it = answered.rbegin(); it != answered.rend(); ++it)
      if (seen.insert(*it).second) last_answer.insert(last_answer.begin(), *it);
    std::vector<pipe_id> expected;
    for (pipe_id id : last_answer)
      if (std::find(by_sync.begin(), by_sync.end(), id) != by_sync.end()) expected.push_back(id);
    ASSERT_EQ(by_sync, expected) << "seed " << seed;
    total_requests += reqs.size();
    total_at_break += checked_at_break;
  }
  RecordProperty("interleavings", runs);
  RecordProperty("requests", static_cast<int>(total_requests));
  RecordProperty("pending_at_a_break", static_cast<int>(total_at_break));
  RecordProperty("skipped_in_a_batch", static_cast<int>(total_skipped));
  // Coalescing really happened and failed mid-batch often.
  EXPECT_GT(total_skipped, static_cast<std::size_t>(runs / 4));
  for (std::size_t pos = 0; pos < 4; ++pos) EXPECT_TRUE(error_positions.count(pos)) << "no error at position " << pos;
  EXPECT_GT(total_requests, static_cast<std::size_t>(runs * 10));
  // The break check above saw real work: many requests were pending at a break.
  EXPECT_GT(total_at_break, static_cast<std::size_t>(runs));
}

}  // namespace

// ---- prepared statements off, and pooler detection -------------------------------

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
  // From now on: unnamed, even for SQL seen before.
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

// ---- Sync coalescing ----------------------------------------------------------------

namespace {

pipeline_params coalescing_params(std::size_t batch) {
  auto p = base_params();
  p.depth = 16;
  p.sync_batch = batch;
  return p;
}

pipe_request read_req(std::string sql = "select 1") {
  auto r = shared_req(std::move(sql));
  r.coalesce = true;
  return r;
}

std::vector<bool> syncs_of(const harness& h) {
  std::vector<bool> v;
  for (const auto& w : h.sent_log) v.push_back(w.sync);
  return v;
}

}  // namespace

TEST(pipeline_core, coalesced_reads_share_one_sync_and_a_batch_never_waits_to_fill) {
  harness h(coalescing_params(10));
  for (pipe_id id = 1; id <= 3; ++id) h.submit(id, read_req());
  h.write();
  EXPECT_EQ(syncs_of(h), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(h.core.syncs_sent(), 1u);
  EXPECT_EQ(h.core.requests_sent(), 3u);
  // Results of a batch are decided at its Sync, in order.
  h.reply();
  h.reply();
  EXPECT_TRUE(h.outcomes.empty());
  EXPECT_EQ(h.core.written(), 3u);  // still counted against the depth until the Sync
  h.reply();
  EXPECT_EQ(h.completion_order, (std::vector<pipe_id>{1, 2, 3}));
  EXPECT_EQ(h.released, 3u);
  // Alone in the queue: written at once with its own Sync.
  h.submit(4, read_req());
  h.write();
  EXPECT_TRUE(h.sent_log.back().sync);
  h.reply();
  EXPECT_EQ(h.outcome(4), pipe_outcome::ok);
}

TEST(pipeline_core, batches_are_bounded_by_count_and_depth) {
  harness h(coalescing_params(2));
  for (pipe_id id = 1; id <= 5; ++id) h.submit(id, read_req());
  h.write();
  EXPECT_EQ(syncs_of(h), (std::vector<bool>{false, true, false, true, true}));
  auto p = coalescing_params(10);
  p.depth = 3;
  harness d(p);
  for (pipe_id id = 1; id <= 5; ++id) d.submit(id, read_req());
  d.write();
  // The depth limit closes the batch: nothing is left open on the wire.
  EXPECT_EQ(syncs_of(d), (std::vector<bool>{false, false, true}));
  d.reply();
  d.reply();
  d.reply();
  d.write();
  EXPECT_EQ(syncs_of(d), (std::vector<bool>{false, false, true, false, true}));
}

TEST(pipeline_core, unmarked_lease_and_stream_requests_keep_their_own_sync) {
  harness h(coalescing_params(10));
  h.submit(1, read_req());
  h.submit(2, shared_req());  // unmarked: closes the batch before it
  h.submit(3, read_req());
  auto l = lease_req();
  l.coalesce = true;  // ignored on a lease
  h.submit(4, l);
  h.submit(5, read_req());
  h.write();
  EXPECT_EQ(syncs_of(h), (std::vector<bool>{true, true, true, true, true}));
  harness off(coalescing_params(1));  // sync_batch 1: coalescing off
  off.submit(1, read_req());
  off.submit(2, read_req());
  off.write();
  EXPECT_EQ(syncs_of(off), (std::vector<bool>{true, true}));
}

TEST(pipeline_core, error_mid_batch_fails_only_its_request_and_resends_the_skipped_ones) {
  harness h(coalescing_params(10));
  for (pipe_id id = 1; id <= 4; ++id) h.submit(id, read_req("q"));
  h.write();
  EXPECT_EQ(syncs_of(h), (std::vector<bool>{false, false, false, true}));
  EXPECT_TRUE(h.sent_log[0].parse);
  h.reply();                                     // 1 runs (and prepares q)
  h.reply({pipe_result::error, "22012"});        // 2 fails
  auto k3 = h.reply();                           // 3 and 4 are skipped by the server
  auto k4 = h.reply();
  EXPECT_EQ(k3, (std::vector<pipe_keep>{pipe_keep::discard}));
  EXPECT_EQ(k4, (std::vector<pipe_keep>{pipe_keep::discard}));
  EXPECT_EQ(h.outcome(1), pipe_outcome::ok);
  EXPECT_EQ(h.outcome(2), pipe_outcome::sql_error);
  EXPECT_EQ(h.completions(3), 0u);
  EXPECT_EQ(h.completions(4), 0u);
  EXPECT_EQ(h.released, 2u);  // 3 and 4 keep their capacity
  EXPECT_EQ(h.core.waiting(), 2u);
  h.write();
  ASSERT_EQ(h.sent_log.size(), 6u);
  EXPECT_EQ(h.sent_log[4].id, 3u);
  EXPECT_EQ(h.sent_log[5].id, 4u);
  EXPECT_FALSE(h.sent_log[4].parse);  // the statement exists: 1's Parse ran
  h.reply();
  h.reply();
  EXPECT_EQ(h.outcome(3), pipe_outcome::ok);
  EXPECT_EQ(h.outcome(4), pipe_outcome::ok);
  EXPECT_FALSE(h.replayed_executed);
  EXPECT_EQ(h.released, 4u);
  EXPECT_EQ(h.core.syncs_sent(), 2u);
  EXPECT_EQ(h.core.requests_sent(), 6u);
}

TEST(pipeline_core, a_request_carrying_a_parse_leads_its_batch) {
  harness h(coalescing_params(10));
  h.submit(1, read_req("a"));
  h.submit(2, read_req("b"));
  h.submit(3, read_req("b"));
  h.submit(4, read_req("a"));
  h.write();
  // b's Parse is never behind a neighbour that could fail and skip it.
  EXPECT_EQ(syncs_of(h), (std::vector<bool>{true, false, false, true}));
  EXPECT_TRUE(h.sent_log[1].parse);
  EXPECT_FALSE(h.sent_log[2].parse);
}

TEST(pipeline_core, skipped_requests_go_ahead_of_newer_work_in_their_order) {
  harness h(coalescing_params(10));
  for (pipe_id id = 1; id <= 3; ++id) h.submit(id, read_req());
  h.write();
  h.submit(4, shared_req());  // waiting while the batch is answered
  h.reply({pipe_result::error, "22012"});
  h.reply();
  h.reply();
  h.write();
  ASSERT_EQ(h.sent_log.size(), 6u);
  EXPECT_EQ(h.sent_log[3].id, 2u);
  EXPECT_EQ(h.sent_log[4].id, 3u);
  EXPECT_EQ(h.sent_log[5].id, 4u);
  EXPECT_EQ(syncs_of(h), (std::vector<bool>{false, false, true, false, true, true}));
}

TEST(pipeline_core, break_mid_batch_reports_every_request_of_it_lost_exactly_once) {
  harness h(coalescing_params(10));
  for (pipe_id id = 1; id <= 3; ++id) h.submit(id, read_req());
  h.write();
  h.submit(4, read_req());
  h.reply();  // 1 answered, its Sync not read
  h.core.on_broken("eof");
  h.pump();
  for (pipe_id id = 1; id <= 3; ++id) {
    EXPECT_EQ(h.completions(id), 1u);
    EXPECT_EQ(h.outcome(id), pipe_outcome::connection_lost);
  }
  EXPECT_EQ(h.outcome(4), pipe_outcome::not_sent);
}

TEST(pipeline_core, cancelled_or_expired_batch_requests_complete_once_and_are_not_resent) {
  harness h(coalescing_params(10));
  auto timed = read_req();
  timed.deadline = h.now + 100ms;
  h.submit(1, read_req());
  h.submit(2, read_req());
  h.submit(3, timed);
  h.write();
  h.reply({pipe_result::error, "22012"});
  h.core.cancel(h.now, 2, true);  // skipped or not, its caller is answered now
  h.pump();
  EXPECT_EQ(h.outcome(2), pipe_outcome::cancelled_detached);
  h.now += 200ms;
  h.core.on_tick(h.now);
  h.pump();
  EXPECT_EQ(h.outcome(3), pipe_outcome::timeout_detached);
  h.reply();
  h.reply();
  h.write();
  EXPECT_EQ(h.sent_log.size(), 3u);  // nothing re-sent for callers already answered
  for (pipe_id id = 1; id <= 3; ++id) EXPECT_EQ(h.completions(id), 1u);
  EXPECT_EQ(h.released, 3u);
  EXPECT_EQ(h.core.written(), 0u);
}

TEST(pipeline_core, stale_statement_in_a_batch_is_repaired_and_the_skipped_rest_resent) {
  harness h(coalescing_params(10));
  h.submit(1, read_req("a"));
  h.write();
  h.reply();  // "a" prepared
  h.submit(2, read_req("a"));
  h.submit(3, read_req("a"));
  h.write();
  EXPECT_FALSE(h.sent_log[1].sync);
  h.reply({pipe_result::error, "0A000", true});  // plan changed: refused before executing
  h.reply();                                      // 3 skipped
  h.write();
  EXPECT_EQ(h.completions(2), 0u);
  EXPECT_EQ(h.completions(3), 0u);
  // 2 again with a fresh Parse leading the batch, 3 behind it, then the
  // DEALLOCATE of the stale name.
  ASSERT_EQ(h.sent_log.size(), 6u);
  EXPECT_EQ(h.sent_log[3].id, 2u);
  EXPECT_TRUE(h.sent_log[3].parse);
  EXPECT_EQ(h.sent_log[4].id, 3u);
  EXPECT_FALSE(h.sent_log[4].parse);
  EXPECT_TRUE(h.sent_log[5].internal);
  while (!h.wire.empty()) h.reply();
  EXPECT_EQ(h.outcome(2), pipe_outcome::ok);
  EXPECT_EQ(h.outcome(3), pipe_outcome::ok);
}

// ---- COPY ---------------------------------------------------------------------------------

namespace {
pipe_request copy_req(std::string sql = "copy t from stdin") {
  pipe_request r = lease_req(std::move(sql));
  r.copy = true;
  return r;
}
}  // namespace

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
  EXPECT_EQ(h.core.copy_running(), 3u);
  EXPECT_TRUE(h.core.writes_held());
  EXPECT_EQ(h.core.head(), 3u);
  h.write();
  EXPECT_TRUE(h.wire.empty()) << "nothing is written while the COPY owns the connection";
  h.core.on_copy_end(h.now, false);
  h.pump();
  EXPECT_EQ(h.outcome(3), pipe_outcome::ok);
  EXPECT_EQ(h.core.copy_running(), 0u);
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
  h.core.on_copy_end(h.now, true);
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
  h.core.on_copy_end(h.now, false);  // a late report changes nothing
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
  h.core.on_copy_end(h.now, true);
  h.pump();
  EXPECT_EQ(h.completions(1), 1u);
  EXPECT_FALSE(h.core.writes_held());
}

TEST(pipeline_core, stopping_a_copy_removes_it_unstarted_or_cancels_it_running) {
  harness h;
  h.submit(1, lease_req("a"));
  h.submit(2, copy_req("copy t to stdout"));
  h.write();
  EXPECT_TRUE(h.core.copy_stop(h.now, 2));
  h.pump();
  EXPECT_EQ(h.outcome(2), pipe_outcome::cancelled_unsent);
  h.reply();
  h.submit(3, copy_req("copy t to stdout"));
  h.write();
  ASSERT_EQ(h.copies, (std::vector<pipe_id>{3}));
  EXPECT_FALSE(h.core.copy_stop(h.now, 3));
  h.pump();
  EXPECT_EQ(h.cancels, (std::vector<pipe_id>{3})) << "alone on a lease: PQcancel cannot hit another query";
  EXPECT_FALSE(h.core.copy_stop(h.now, 3));
  h.pump();
  EXPECT_EQ(h.cancels.size(), 1u) << "one cancel";
  h.core.on_cancel_returned();
  h.core.on_copy_end(h.now, true);
  h.pump();
  EXPECT_EQ(h.outcome(3), pipe_outcome::cancelled_by_server);
  EXPECT_FALSE(h.core.writes_held());
}
