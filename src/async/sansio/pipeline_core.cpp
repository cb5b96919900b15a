// pipeline_core: the FIFO, writes, results, breaks and time (contract in
// pipeline_core.hpp). What a Sync decides is in pipeline_settle.cpp, the
// statement cache's use in pipeline_statements.cpp, coalescing in
// pipeline_batches.cpp, cancellation in pipeline_cancel.cpp, solo requests
// (COPY, scripts) in pipeline_solo.cpp.
//
// Policy reasons:
//  - One Sync per request: an error aborts only its own segment, so one
//    caller's SQL error never fails a neighbour's pipelined query.
//  - Capacity goes back to the pool (release) at the request's Sync, not when
//    its caller was answered: a detached request still occupies the
//    connection until the server is past it.
//  - Stalls, unanswered cancels, COPY and session-fatal errors all end in the
//    same break: whatever was written may have executed; the rest was not sent.
#include "async/sansio/pipeline_core.hpp"

#include <algorithm>
#include <limits>
#include <utility>

namespace pgpipe::detail {

pipeline_core::pipeline_core(pipeline_params p)
    : p_(p), cache_(p.max_prepared), blocks_(p.memory), next_internal_(std::numeric_limits<pipe_id>::max()) {
  if (p_.depth == 0) p_.depth = 1;
}

std::vector<pipe_action> pipeline_core::take_actions() {
  flush_release();
  return std::exchange(actions_, {});
}

void pipeline_core::take_actions(std::vector<pipe_action>& out) {
  flush_release();
  out.clear();
  out.swap(actions_);
}

void pipeline_core::flush_release() {
  if (release_units_ == 0) return;
  pipe_action a{pipe_action::kind::release};
  a.units = std::exchange(release_units_, 0);
  actions_.push_back(std::move(a));
}

std::optional<pipe_id> pipeline_core::head() const {
  if (written_.empty()) return std::nullopt;
  return written_.front().id;
}

bool pipeline_core::head_is_internal() const {
  return !written_.empty() && written_.front().to == recipient::core;
}

bool pipeline_core::can_close() const {
  if (!waiting_.empty()) return false;
  auto done = [](const entry& e) { return !e.awaited(); };
  return std::all_of(written_.begin(), written_.end(), done) && std::all_of(batch_.begin(), batch_.end(), done);
}

void pipeline_core::complete(entry& e, pipe_outcome o) {
  if (!e.awaited()) return;
  e.to = recipient::detached;
  pipe_action a{pipe_action::kind::complete};
  a.id = e.id;
  a.outcome = o;
  actions_.push_back(std::move(a));
}

void pipeline_core::release_unit(const entry& e) {
  if (e.req.pooled && !broken_) ++release_units_;
}

// ---- submit and write ---------------------------------------------------------

void pipeline_core::submit(pipe_id id, pipe_request r) {
  entry e;
  e.id = id;
  e.seq = next_seq_++;
  e.req = std::move(r);
  if (e.req.deadline != time_point::max()) any_deadline_ = true;
  if (broken_) {
    // The pool forgot this slot's grants when it broke: nothing to release.
    complete(e, pipe_outcome::not_sent);
    return;
  }
  if (e.req.opens_unit && e.req.on_lease) {
    unit_ = unit_state::pending;
    unit_opener_ = id;
  }
  // Requests granted on two loops reach this connection microseconds out of
  // the order of their deadlines (each is set on the caller's thread). A
  // deadline at most deadline_slack sooner than the one submitted before it
  // takes that one, so the queues keep the order next_timer() reads one
  // entry of; a timeout fires that much later at most, within the loop's
  // own timer resolution.
  if (e.to != recipient::core && e.req.deadline != time_point::max()) {
    if (e.req.deadline < last_submitted_deadline_ && last_submitted_deadline_ - e.req.deadline <= deadline_slack)
      e.req.deadline = last_submitted_deadline_;
    last_submitted_deadline_ = e.req.deadline;
  }
  waiting_.push_back(std::move(e));
  peak_waiting_ = std::max(peak_waiting_, waiting_.size());
}

bool pipeline_core::send(entry& e) {
  e.at = stage::execute;
  e.heard = answer::none;
  e.carried_parse = false;
  e.name.clear();
  e.sqlstate.clear();
  e.single_row_set = false;
  e.batch_last = true;
  if (e.to == recipient::core) {
    pipe_action a{e.closes_statement ? pipe_action::kind::close_statement : pipe_action::kind::send_internal};
    a.id = e.id;
    a.name = std::string(e.req.sql.view());
    actions_.push_back(std::move(a));
    return true;
  }
  name_statement(e);
  pipe_action a{pipe_action::kind::send};
  a.id = e.id;
  a.parse = e.carried_parse;
  a.name = e.name;
  actions_.push_back(std::move(a));
  ++requests_sent_;
  return true;
}

void pipeline_core::write_pass(time_point now) {
  if (broken_ || writes_held()) return;
  const bool was_quiet = written_.empty();
  bool sent = false;
  std::size_t batch_run = 0;  // requests in the batch being written, this one excluded
  while (!waiting_.empty() && written() < p_.depth) {
    if (unit_blocks_queue() || waiting_.empty()) break;
    if (solo_blocks_queue()) break;
    entry e = std::move(waiting_.front());
    waiting_.pop_front();
    if (e.req.param_count > max_params) {
      release_unit(e);
      complete(e, pipe_outcome::too_many_params);
      continue;
    }
    send(e);
    // A chained request is answered at the Sync this one shares (or carries):
    // it cannot be over before this one, so it takes this one's deadline
    // (BEGIN's is its first statement's).
    if (!written_.empty() && !written_.back().batch_last && written_.back().req.chained)
      written_.set_deadline(written_.back(), e.req.deadline);
    // sync_batch 1 (coalescing off): every request has its own Sync, chains apart.
    if ((p_.sync_batch > 1 || e.req.chained) && batch_stays_open(e, batch_run)) {
      actions_.back().sync = false;  // send() pushed e's action last
      e.batch_last = false;
      ++batch_run;
    } else {
      ++syncs_sent_;
      batch_run = 0;
    }
    written_.push_back(std::move(e));
    sent = true;
  }
  if (!sent) return;
  if (was_quiet) last_progress_ = now;  // the stall clock starts with outstanding work
  prime_single_row();
  actions_.push_back(pipe_action{pipe_action::kind::flush});
}

void pipeline_core::prime_single_row() {
  // Pipeline mode: single-row mode is set when the query becomes the one
  // libpq is processing, before any of its results are parsed.
  if (written_.empty() || broken_) return;
  entry& h = written_.front();
  if (!h.req.stream || h.single_row_set || h.at != stage::execute) return;
  h.single_row_set = true;
  pipe_action a{pipe_action::kind::single_row};
  a.id = h.id;
  actions_.push_back(std::move(a));
}

// ---- results ------------------------------------------------------------------

pipe_keep pipeline_core::on_result(pipe_result r, std::string_view sqlstate, bool retryable) {
  if (written_.empty()) return pipe_keep::discard;
  entry& h = written_.front();
  switch (r) {
    case pipe_result::aborted:
      // An earlier request of its batch failed: this command never ran.
      if (h.heard == answer::none) h.heard = answer::skipped;
      return pipe_keep::discard;
    case pipe_result::error:
      if (is_error(h.heard)) return pipe_keep::discard;  // the first error is the one that matters
      if (h.at == stage::parse) {
        h.heard = answer::parse_error;
      } else if (retryable && !h.name.empty()) {
        h.heard = answer::stale_statement;
      } else {
        h.heard = answer::error;
      }
      h.sqlstate = std::string(sqlstate);
      return h.awaited() ? pipe_keep::as_error : pipe_keep::discard;
    case pipe_result::rows:
      if (h.req.stream) return !h.awaited() || h.abandoned ? pipe_keep::discard : pipe_keep::stream_row;
      [[fallthrough]];
    case pipe_result::command_ok:
      // The Execute's result replaces the Parse's COMMAND_OK.
      if (!is_error(h.heard)) h.heard = answer::ok;
      return h.awaited() ? pipe_keep::as_ok : pipe_keep::discard;
  }
  return pipe_keep::discard;
}

void pipeline_core::on_command_end() {
  if (written_.empty()) return;
  entry& h = written_.front();
  if (h.at == stage::parse) {
    h.at = stage::execute;
    prime_single_row();
    return;
  }
  if (h.batch_last) return;
  // A coalesced request's results are over; the batch's Sync decides its outcome.
  h.at = stage::ended;
  batch_.push_back(std::move(h));
  written_.pop_front();
}

void pipeline_core::on_input(time_point now) { last_progress_ = now; }

// ---- breaks ---------------------------------------------------------------------

void pipeline_core::break_all(const std::string& reason, std::optional<pipe_outcome> head_outcome) {
  if (broken_) return;
  auto batch = std::move(batch_);
  auto written = std::move(written_);
  auto waiting = std::move(waiting_);
  batch_.clear();
  written_.clear();
  waiting_.clear();
  release_units_ = 0;  // the pool forgets every grant of a broken slot
  broken_ = true;
  cancel_running_ = false;
  cancel_target_ = 0;
  cancel_fired_ = false;
  cancel_deadline_ = time_point::max();
  solo_id_ = 0;
  pipe_action c{pipe_action::kind::close};
  c.reason = reason;
  if (head_outcome && !written.empty()) complete(written.front(), *head_outcome);
  actions_.push_back(std::move(c));
  for (auto& e : batch) complete(e, pipe_outcome::connection_lost);
  for (auto& e : written) complete(e, pipe_outcome::connection_lost);
  for (auto& e : waiting) complete(e, pipe_outcome::not_sent);
}

void pipeline_core::on_session_ended(const std::string& reason) { break_all(reason, pipe_outcome::session_ended); }

void pipeline_core::on_broken(const std::string& reason) { break_all(reason, std::nullopt); }

void pipeline_core::abort() {
  if (broken_) return;
  broken_ = true;
  release_units_ = 0;
  cancel_running_ = false;
  cancel_target_ = 0;
  cancel_fired_ = false;
  solo_id_ = 0;
  for (auto& e : batch_) complete(e, pipe_outcome::closed);
  for (auto& e : written_) complete(e, pipe_outcome::closed);
  for (auto& e : waiting_) complete(e, pipe_outcome::closed);
  batch_.clear();
  written_.clear();
  waiting_.clear();
}

// ---- time -----------------------------------------------------------------------

void pipeline_core::on_tick(time_point now) {
  if (broken_) return;
  if (p_.stall_timeout.count() > 0 && solo_id_ == 0 && written() > 0 && now - last_progress_ >= p_.stall_timeout) {
    break_all("no progress for " + std::to_string(p_.stall_timeout.count()) + " ms (stall_timeout)", std::nullopt);
    return;
  }
  if (cancel_running_ && now >= cancel_deadline_) {
    // PQcancel has not returned: the signal may land at any time, on any
    // later query. The connection cannot be used safely any more.
    break_all("the cancel request was not answered within " + std::to_string(p_.cancel_bound.count()) + " ms",
              std::nullopt);
    return;
  }
  // Expired, not written: removed. Expired, written: answered at once, detached.
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->to != recipient::core && it->req.deadline <= now) {
      release_unit(*it);
      complete(*it, pipe_outcome::timeout_unsent);
      it = waiting_.erase(it);
      continue;
    }
    ++it;
  }
  for (auto* q : {&batch_, &written_}) {
    for (auto& e : *q) {
      if (!e.awaited() || e.req.deadline > now) continue;
      if (e.req.cancel_at_deadline) {
        if (!outlive_deadline(now, *q, e)) return;
        continue;
      }
      complete(e, e.cancel_sent ? pipe_outcome::cancel_unconfirmed : pipe_outcome::timeout_detached);
    }
  }
}

std::optional<time_point> pipeline_core::next_timer() const {
  if (broken_) return std::nullopt;
  time_point next = cancel_running_ ? cancel_deadline_ : time_point::max();
  // Asked after every batch of work: skip the scan (every request in the
  // queues, up to the depth) when no request ever had a deadline.
  if (any_deadline_) next = std::min({next, waiting_.earliest(), batch_.earliest(), written_.earliest()});
  if (p_.stall_timeout.count() > 0 && solo_id_ == 0 && written() > 0)
    next = std::min(next, last_progress_ + p_.stall_timeout);
  if (next == time_point::max()) return std::nullopt;
  return next;
}

}  // namespace pgpipe::detail
