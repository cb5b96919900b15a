// The scripted fake server of pipeline_core's unit tests: no libpq, no
// sockets, no sleeping. Time moves only when a test advances it. The fake
// answers each written request the way libpq reports a pipeline segment:
// (Parse result, NULL)?, Execute result(s), NULL, PIPELINE_SYNC. A coalesced
// batch (sends without a Sync) is one segment: after an error, every later
// command of it is PIPELINE_ABORTED (+ NULL), and only the last request is
// followed by the PIPELINE_SYNC. Shared by the pipeline_core_*_test.cpp files.
#pragma once

#include "async/sansio/pipeline_core.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace pgpipe::test::pipeline_harness {

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

inline pipeline_params base_params() {
  pipeline_params p;
  p.depth = 4;
  p.max_prepared = 3;
  p.stall_timeout = 0ms;
  p.cancel_bound = 1000ms;
  return p;
}

inline pipe_request shared_req(std::string sql = "select 1") {
  pipe_request r;
  r.sql = std::move(sql);
  r.pooled = true;
  return r;
}

inline pipe_request lease_req(std::string sql = "select 1") {
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
    bool close = false;  ///< a protocol-level Close of statement `name`
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
  std::vector<pipe_id> copies;      ///< start_solo actions
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
        case kind::send_internal:
        case kind::close_statement: {
          if (!closes.empty()) sent_after_close = true;
          wire_entry w{a.id, a.parse, a.name, a.what != kind::send, a.sync, a.what == kind::close_statement};
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
        case kind::start_solo:
          if (!closes.empty()) sent_after_close = true;
          if (!wire.empty()) copy_over_pipeline = true;
          copies.push_back(a.id);
          break;
      }
    }
  }

  void submit(pipe_id id, pipe_request r) {
    core.submit(id, std::move(r));
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

// ---- request kinds --------------------------------------------------------------

inline pipeline_params coalescing_params(std::size_t batch) {
  auto p = base_params();
  p.depth = 16;
  p.sync_batch = batch;
  return p;
}

/// The shell's facts for a read it may coalesce: marked read-only, on a
/// read-only session, a statement that may share a Sync.
inline void coalescible(pipe_request& r) {
  r.read_only = true;
  r.session_read_only = true;
  r.may_share_sync = true;
}

/// A read the core may coalesce.
inline pipe_request read_req(std::string sql = "select 1") {
  auto r = shared_req(std::move(sql));
  coalescible(r);
  return r;
}

/// Whether each send so far carried a Sync.
inline std::vector<bool> syncs_of(const harness& h) {
  std::vector<bool> v;
  for (const auto& w : h.sent_log) v.push_back(w.sync);
  return v;
}

inline pipe_request copy_req(std::string sql = "copy t from stdin") {
  pipe_request r = lease_req(std::move(sql));
  r.solo = true;
  return r;
}

}  // namespace pgpipe::test::pipeline_harness
