// pipeline_core: see pipeline_core.hpp for the contract.
//
// Policy reasons:
//  - One Sync per request: an error aborts only its own segment, so one
//    caller's SQL error never fails a neighbour's pipelined query.
//  - Capacity goes back to the pool (release) at the request's Sync, not when
//    its caller was answered: a detached request still occupies the
//    connection until the server is past it.
//  - A DEALLOCATE is sent as an ordinary unnamed statement with its own Sync
//    (libpq 15 has no Close-statement call): it runs after every request
//    written before it, so a statement in flight is never dropped under it.
//  - A retried request goes back to the front of the waiting queue: it was
//    first among the waiting when it was written, and gets a fresh Parse.
//  - Stalls, unanswered cancels, COPY and session-fatal errors all end in the
//    same break: whatever was written may have executed; the rest was not sent.
//  - Coalesced batches: outcomes wait for the batch's Sync (like capacity), so
//    a break mid-batch reports every request of it as lost, never half of the
//    batch as answered. A request the server skipped never ran: it is written
//    again ahead of newer work, so its caller sees no difference except time;
//    one that ran (result or error) is never written again. Progress is
//    certain: a re-sent request is older than anything behind it, so only its
//    own error can stop it once it leads a batch.
//  - A request carrying a Parse always leads its batch: nothing before it in
//    the segment can fail and skip the Parse, so a statement named by requests
//    already written in later batches is never missing for a neighbour's sake
//    (which would cost them their one statement repair).
#include "async/sansio/pipeline_core.hpp"

#include "pq/libpq_failure.hpp"

#include <algorithm>
#include <utility>
#include <limits>

namespace pgpipe::detail {

namespace {
// The wire format's Bind carries at most 65535 parameters.
constexpr std::size_t max_params = 65535;
}  // namespace

pipeline_core::pipeline_core(pipeline_params p)
    : p_(p), cache_(p.max_prepared), next_internal_(std::numeric_limits<pipe_id>::max()) {
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

bool pipeline_core::head_is_internal() const { return !written_.empty() && written_.front().core_owned; }

bool pipeline_core::can_close() const {
  if (!waiting_.empty()) return false;
  auto done = [](const entry& e) { return e.detached || e.core_owned; };
  return std::all_of(written_.begin(), written_.end(), done) && std::all_of(batch_.begin(), batch_.end(), done);
}

void pipeline_core::complete(entry& e, pipe_outcome o) {
  if (e.detached || e.core_owned) return;
  e.detached = true;
  pipe_action a{pipe_action::kind::complete};
  a.id = e.id;
  a.outcome = o;
  actions_.push_back(std::move(a));
}

void pipeline_core::release_unit(const entry& e) {
  if (e.req.pooled && !broken_) ++release_units_;
}

// ---- submit and write ---------------------------------------------------------

void pipeline_core::submit(time_point now, pipe_id id, pipe_request r) {
  (void)now;
  entry e;
  e.id = id;
  e.req = std::move(r);
  if (e.req.deadline != time_point::max()) any_deadline_ = true;
  if (broken_) {
    // The pool forgot this slot's grants when it broke: nothing to release.
    complete(e, pipe_outcome::not_sent);
    return;
  }
  waiting_.push_back(std::move(e));
}

void pipeline_core::push_internal(std::string sql, bool front) {
  entry e;
  e.id = next_internal_--;
  e.core_owned = true;
  e.req.sql = std::move(sql);
  e.req.internal = true;
  if (front) {
    waiting_.push_front(std::move(e));
  } else {
    waiting_.push_back(std::move(e));
  }
}

bool pipeline_core::send(entry& e) {
  e.in_execute = true;
  e.carried_parse = false;
  e.name.clear();
  e.has_ok = e.has_error = e.err_in_parse = e.retryable = false;
  e.sqlstate.clear();
  e.single_row_set = false;
  e.batch_last = true;
  e.aborted = false;
  if (e.core_owned) {
    pipe_action a{pipe_action::kind::send_internal};
    a.id = e.id;
    a.name = std::string(e.req.sql.view());
    actions_.push_back(std::move(a));
    return true;
  }
  pipe_action a{pipe_action::kind::send};
  a.id = e.id;
  // Streams stay unnamed: single-row mode must be set when the Execute
  // becomes current, which a preceding Parse would complicate.
  if (p_.prepared_statements && !pooler_seen_ && !e.req.internal && !e.req.stream && p_.max_prepared > 0) {
    if (const std::string* n = cache_.find(e.req.sql)) {
      e.name = *n;
    } else {
      if (!cache_.has_room()) {
        // Room for the DEALLOCATE too, or this one simply goes unnamed.
        if (written() + 2 <= p_.depth) {
          if (auto old = cache_.evict()) {
            entry d;
            d.id = next_internal_--;
            d.core_owned = true;
            d.req.internal = true;
            d.req.sql = "deallocate " + *old;
            send(d);
            ++syncs_sent_;  // it closes an open batch, if any (batch_last)
            written_.push_back(std::move(d));
          }
        }
      }
      if (cache_.has_room()) {
        e.name = cache_.add(e.req.sql);
        e.carried_parse = true;
        e.in_execute = false;  // the Parse's results come first
      }
    }
  }
  if (!e.name.empty()) cache_.use(e.req.sql, e.name, +1);
  a.parse = e.carried_parse;
  a.name = e.name;
  actions_.push_back(std::move(a));
  ++requests_sent_;
  return true;
}

bool pipeline_core::needs_parse(const entry& e) const {
  return p_.prepared_statements && !pooler_seen_ && p_.max_prepared > 0 && !cache_.contains(e.req.sql);
}

bool pipeline_core::may_coalesce(const entry& e) const {
  return p_.sync_batch > 1 && e.req.coalesce && !e.req.on_lease && !e.req.stream && !e.req.internal && !e.core_owned &&
         e.req.param_count <= max_params;
}

void pipeline_core::write_pass(time_point now) {
  if (broken_ || writes_held()) return;
  const bool was_quiet = written_.empty();
  bool sent = false;
  std::size_t batch_run = 0;  // requests in the batch being written, this one excluded
  while (!waiting_.empty() && written() < p_.depth) {
    if (copy_blocks_queue()) break;
    entry e = std::move(waiting_.front());
    waiting_.pop_front();
    if (e.req.param_count > max_params) {
      release_unit(e);
      complete(e, pipe_outcome::too_many_params);
      continue;
    }
    send(e);
    // Leave the batch open only if the next request joins it now: a batch
    // never waits to fill, so low load keeps one round trip per request.
    const bool more = may_coalesce(e) && batch_run + 1 < p_.sync_batch && written() + 1 < p_.depth &&
                      !waiting_.empty() && may_coalesce(waiting_.front()) && !needs_parse(waiting_.front());
    if (more) {
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
  if (!h.req.stream || h.single_row_set || !h.in_execute) return;
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
      h.aborted = true;  // an earlier request of its batch failed: this command never ran
      return pipe_keep::discard;
    case pipe_result::error:
      if (h.has_error) return pipe_keep::discard;  // the first error is the one that matters
      h.has_error = true;
      h.err_in_parse = !h.in_execute;
      h.retryable = retryable && h.in_execute && !h.name.empty() && !h.carried_parse;
      h.sqlstate = std::string(sqlstate);
      return h.detached || h.core_owned ? pipe_keep::discard : pipe_keep::as_error;
    case pipe_result::rows:
      if (h.req.stream) return h.detached || h.abandoned ? pipe_keep::discard : pipe_keep::stream_row;
      [[fallthrough]];
    case pipe_result::command_ok:
      // The Execute's result replaces the Parse's COMMAND_OK.
      h.has_ok = true;
      return h.detached || h.core_owned ? pipe_keep::discard : pipe_keep::as_ok;
  }
  return pipe_keep::discard;
}

void pipeline_core::on_command_end() {
  if (written_.empty()) return;
  entry& h = written_.front();
  if (!h.in_execute) {
    h.in_execute = true;
    prime_single_row();
    return;
  }
  if (h.batch_last) return;
  // A coalesced request's results are over; the batch's Sync decides its outcome.
  batch_.push_back(std::move(h));
  written_.pop_front();
}

void pipeline_core::finish_statement(entry& e) {
  if (e.name.empty()) return;
  cache_.use(e.req.sql, e.name, -1);
  // A failed Parse leaves no statement; a failed Execute leaves it in place.
  if (e.has_error && e.err_in_parse) cache_.forget(e.req.sql, e.name);
}

void pipeline_core::on_sync(time_point now, tx_state tx) {
  if (written_.empty() || broken_) return;
  if (!batch_.empty()) {
    on_batch_sync(now, tx);
    return;
  }
  entry e = std::move(written_.front());
  written_.pop_front();
  last_progress_ = now;
  finish_statement(e);
  if (e.id == cancel_target_) cancel_target_ = 0;  // the backend is past it

  if (!e.req.on_lease && (tx == tx_state::in_transaction || tx == tx_state::failed)) {
    // Safety net: neighbours' requests are pipelined behind this one and
    // would run inside the transaction. Retire the connection.
    release_unit(e);
    complete(e, pipe_outcome::transaction_left_open);
    break_all("a request on the shared path left a transaction open; the connection was retired", std::nullopt);
    return;
  }

  if (e.has_error && e.carried_parse && is_pooler_symptom(e.sqlstate)) {
    // We sent this Parse under a name never used before on this connection:
    // 42P05 means another client made that name on the same server session,
    // 26000 that our Parse ran on another one. A re-run would meet the same.
    pooler_seen_ = true;
    release_unit(e);
    complete(e, pipe_outcome::pooler_suspected);
    prime_single_row();
    return;
  }

  const bool lease_may_retry = tx == tx_state::idle && written_.empty();
  if (e.has_error && e.retryable && !e.retried && !e.detached && (!e.req.on_lease || lease_may_retry)) {
    // The server refused the stale statement before executing anything.
    const bool exists = e.sqlstate != "26000";
    if (cache_.forget(e.req.sql, e.name) && exists) push_internal("deallocate " + e.name, false);
    e.retried = true;
    e.detached = false;
    waiting_.push_front(std::move(e));
    return;
  }

  release_unit(e);
  if (e.has_error) {
    complete(e, e.cancel_sent && e.sqlstate == "57014" ? pipe_outcome::cancelled_by_server : pipe_outcome::sql_error);
  } else if (e.has_ok) {
    complete(e, pipe_outcome::ok);
  } else {
    complete(e, pipe_outcome::no_result);
  }
  prime_single_row();
}

void pipeline_core::on_batch_sync(time_point now, tx_state tx) {
  batch_.push_back(std::move(written_.front()));
  written_.pop_front();
  auto batch = std::exchange(batch_, {});
  last_progress_ = now;
  for (auto& e : batch) {
    finish_statement(e);
    // A Parse the server skipped made no statement.
    if (e.carried_parse && e.aborted && !e.has_ok && !e.has_error) cache_.forget(e.req.sql, e.name);
    if (e.id == cancel_target_) cancel_target_ = 0;
  }
  if (tx == tx_state::in_transaction || tx == tx_state::failed) {
    // Coalesced requests are reads that cannot open a block; if one did
    // anyway, nobody knows which: the last one is blamed, the others may
    // have executed inside it.
    for (auto& e : batch) {
      release_unit(e);
      complete(e, &e == &batch.back() ? pipe_outcome::transaction_left_open : pipe_outcome::connection_lost);
    }
    break_all("a request on the shared path left a transaction open; the connection was retired", std::nullopt);
    return;
  }
  std::vector<entry*> again;  // written again, in their order
  for (auto& e : batch) {
    const bool never_ran = e.aborted && !e.has_ok && !e.has_error;
    if (never_ran) {
      if (e.detached) {
        release_unit(e);  // its caller was answered (cancel, timeout): nothing to run
      } else {
        again.push_back(&e);
      }
      continue;
    }
    if (e.has_error && e.carried_parse && is_pooler_symptom(e.sqlstate)) {
      pooler_seen_ = true;  // as in on_sync
      release_unit(e);
      complete(e, pipe_outcome::pooler_suspected);
      continue;
    }
    if (e.has_error && e.retryable && !e.retried && !e.detached) {
      // Stale statement, refused before executing: repaired as in on_sync.
      const bool exists = e.sqlstate != "26000";
      if (cache_.forget(e.req.sql, e.name) && exists) push_internal("deallocate " + e.name, false);
      e.retried = true;
      again.push_back(&e);
      continue;
    }
    release_unit(e);
    if (e.has_error) {
      complete(e, pipe_outcome::sql_error);
    } else if (e.has_ok) {
      complete(e, pipe_outcome::ok);
    } else {
      complete(e, pipe_outcome::no_result);
    }
  }
  for (auto it = again.rbegin(); it != again.rend(); ++it) waiting_.push_front(std::move(**it));
  prime_single_row();
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
  cancel_deadline_ = time_point::max();
  copy_id_ = 0;
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
  copy_id_ = 0;
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
  if (p_.stall_timeout.count() > 0 && copy_id_ == 0 && written() > 0 && now - last_progress_ >= p_.stall_timeout) {
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
  // Expired, not written: removed. Expired, written: answered now, detached.
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (!it->core_owned && it->req.deadline <= now) {
      release_unit(*it);
      complete(*it, pipe_outcome::timeout_unsent);
      it = waiting_.erase(it);
      continue;
    }
    ++it;
  }
  for (auto* q : {&batch_, &written_}) {
    for (auto& e : *q) {
      if (e.detached || e.core_owned || e.req.deadline > now) continue;
      complete(e, e.cancel_sent ? pipe_outcome::cancel_unconfirmed : pipe_outcome::timeout_detached);
    }
  }
}

std::optional<time_point> pipeline_core::next_timer() const {
  if (broken_) return std::nullopt;
  time_point next = cancel_running_ ? cancel_deadline_ : time_point::max();
  // Asked after every batch of work: skip the scan (every request in the
  // queues, up to the depth) when no request ever had a deadline.
  if (any_deadline_) {
    for (const auto& e : waiting_)
      if (!e.core_owned) next = std::min(next, e.req.deadline);
    for (const auto* q : {&batch_, &written_})
      for (const auto& e : *q)
        if (!e.detached && !e.core_owned) next = std::min(next, e.req.deadline);
  }
  if (p_.stall_timeout.count() > 0 && copy_id_ == 0 && written() > 0)
    next = std::min(next, last_progress_ + p_.stall_timeout);
  if (next == time_point::max()) return std::nullopt;
  return next;
}

// ---- cancellation ---------------------------------------------------------------

pipeline_core::entry* pipeline_core::find_written(pipe_id id) {
  for (auto& e : batch_)
    if (e.id == id) return &e;
  for (auto& e : written_)
    if (e.id == id) return &e;
  return nullptr;
}

bool pipeline_core::try_start_cancel(time_point now, entry& e) {
  // The signal hits whatever the backend is executing when it arrives: only
  // safe if nothing but the target can be executing, i.e. it is the only
  // request written (writes_held() keeps it so until the signal has landed).
  if (!e.req.on_lease || e.cancel_sent || writes_held() || written() != 1 || written_.empty() ||
      &written_.front() != &e)
    return false;
  emit_cancel(now, e);
  return true;
}

void pipeline_core::emit_cancel(time_point now, entry& e) {
  e.cancel_sent = true;
  cancel_running_ = true;
  cancel_target_ = e.id;
  cancel_deadline_ = now + p_.cancel_bound;
  if (cancel_deadline_ < e.req.deadline) {
    e.req.deadline = cancel_deadline_;
    any_deadline_ = true;
  }
  pipe_action a{pipe_action::kind::start_cancel};
  a.id = e.id;
  actions_.push_back(std::move(a));
}

bool pipeline_core::drop_unsent(pipe_id id) {
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if (it->id != id) continue;
    release_unit(*it);
    complete(*it, pipe_outcome::cancelled_unsent);
    waiting_.erase(it);
    return true;
  }
  return false;
}

void pipeline_core::cancel(time_point now, pipe_id id, bool after_write) {
  if (broken_) return;
  // Not written: no side effect, any cancellation type removes it.
  if (drop_unsent(id)) return;
  entry* e = find_written(id);
  if (!e || e->detached || !after_write) return;
  if (try_start_cancel(now, *e)) return;  // completes when the server answers
  // Shared connection, or other queries written that a signal could hit:
  // answer now; the server's answer is matched and discarded when it arrives.
  complete(*e, pipe_outcome::cancelled_detached);
}

void pipeline_core::stream_abandoned(time_point now, pipe_id id) {
  if (broken_) return;
  if (drop_unsent(id)) return;
  entry* e = find_written(id);
  if (!e) return;
  e->abandoned = true;
  // Stop the server producing rows nobody will read, when the signal cannot
  // hit another query; otherwise the rest is discarded as it arrives.
  try_start_cancel(now, *e);
}

void pipeline_core::on_cancel_returned() {
  cancel_running_ = false;
  cancel_deadline_ = time_point::max();
}

void pipeline_core::on_cancel_failed(pipe_id id) {
  cancel_running_ = false;
  cancel_deadline_ = time_point::max();
  if (cancel_target_ == id) cancel_target_ = 0;
  if (entry* e = find_written(id)) {
    e->cancel_sent = false;
    if (!e->abandoned) complete(*e, pipe_outcome::cancelled_detached);
  }
}

}  // namespace pgpipe::detail

namespace pgpipe::detail {

// ---- COPY -------------------------------------------------------------------------

bool pipeline_core::copy_blocks_queue() {
  if (copy_id_ != 0) return true;
  entry& w = waiting_.front();
  if (!w.req.copy) return false;
  // libpq 15 runs a COPY only outside pipeline mode, which it leaves only
  // with nothing in flight: everything written before the COPY is read first
  // (a coalesced batch's finished requests included: their Sync is still due).
  if (written() != 0) return true;
  entry e = std::move(w);
  waiting_.pop_front();
  e.in_execute = true;
  copy_id_ = e.id;
  pipe_action a{pipe_action::kind::start_copy};
  a.id = e.id;
  actions_.push_back(std::move(a));
  written_.push_back(std::move(e));
  return true;
}

void pipeline_core::on_copy_end(time_point now, bool failed) {
  if (broken_ || copy_id_ == 0 || written_.empty() || written_.front().id != copy_id_) return;
  entry e = std::move(written_.front());
  written_.pop_front();
  copy_id_ = 0;
  last_progress_ = now;
  if (e.id == cancel_target_) cancel_target_ = 0;  // the backend is past it
  release_unit(e);
  if (failed) {
    complete(e, e.cancel_sent ? pipe_outcome::cancelled_by_server : pipe_outcome::sql_error);
  } else {
    complete(e, pipe_outcome::ok);
  }
}

bool pipeline_core::copy_stop(time_point now, pipe_id id) {
  if (broken_) return false;
  if (drop_unsent(id)) return true;
  if (id != copy_id_ || written_.empty() || written_.front().id != id) return false;
  entry& e = written_.front();
  e.abandoned = true;
  // The COPY runs alone on an exclusive connection: the signal can hit
  // nothing else, and writes stay held until on_copy_end.
  if (e.req.on_lease && !e.cancel_sent && !cancel_running_) emit_cancel(now, e);
  return false;
}

}  // namespace pgpipe::detail
