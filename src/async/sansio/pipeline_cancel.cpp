// pipeline_core: cancellation, and the hold-back that keeps a PQcancel from
// hitting another query (contract in pipeline_core.hpp).
//
// Policy reasons:
//  - A PQcancel hits whatever the backend executes when the signal lands.
//    Within the target's own Sync segment that is harmless: an error in any
//    request of it aborts the segment, the target included, which is what the
//    caller asked for (BEGIN written with the first statement of a
//    transaction, a chain's statements). The server sends a segment's
//    results only at its Sync, so the client cannot tell which of them runs.
//  - Segments written ahead of the target are waited for: the signal goes
//    once their Syncs were read (writes held meanwhile), else it could stop
//    an earlier statement of the lease and let the target run.
//  - A segment written behind the target is the danger the driver cannot
//    wait out: the signal may land once the target is over. Then no cancel is
//    sent: the request is answered at once (detached), and the server's
//    answer is matched and discarded when it arrives. The same anywhere a
//    cancel may not be sent (a shared connection).
//  - Nothing is written from the cancel's request until the call has
//    returned and the target's Sync was read (writes_held()).
//  - A written chain past its deadline (cancel_at_deadline) is cancelled
//    rather than detached: detached, its COMMIT would commit while its
//    caller was told it timed out, and a ROLLBACK sent after it would only
//    queue behind it. Cancelled, the server says what stayed. The wait for
//    that answer reuses cancel_bound, the time the connection already allows
//    a cancel: a server that answers nothing within it is not trusted with
//    the next request either.
#include "async/sansio/pipeline_core.hpp"

#include <algorithm>
#include <iterator>
#include <string>

namespace pgpipe::detail {

pipeline_core::entry* pipeline_core::find_written(pipe_id id) {
  for (auto& e : batch_)
    if (e.id == id) return &e;
  for (auto& e : written_)
    if (e.id == id) return &e;
  return nullptr;
}

bool pipeline_core::last_segment_is(const entry& e) const {
  // e's segment ends at the first request from e on that carries a Sync.
  auto it = written_.begin();
  while (it != written_.end() && &*it != &e) ++it;
  if (it == written_.end()) return false;
  while (!it->batch_last && std::next(it) != written_.end()) ++it;
  return std::next(it) == written_.end();
}

pipeline_core::entry* pipeline_core::in_first_segment(pipe_id id) {
  // batch_ holds finished requests of the oldest segment only.
  for (auto& e : written_) {
    if (e.id == id) return &e;
    if (e.batch_last) return nullptr;  // a Sync ahead of it: an older segment
  }
  return nullptr;
}

bool pipeline_core::try_start_cancel(time_point now, entry& e) {
  // e.at: its Execute is still to run or running (a request whose commands
  // are over waits in batch_ for its segment's Sync: nothing to stop).
  if (!e.req.on_lease || e.cancel_sent || writes_held() || e.at == stage::ended || !last_segment_is(e))
    return false;
  bound_by_cancel(e, now + p_.cancel_bound);
  emit_cancel(now, e);
  return true;
}

pipeline_core::entry* pipeline_core::running_in_segment(const entry& e) {
  // batch_ holds finished requests of the oldest segment: its running one,
  // if any, is in written_ ahead of that segment's Sync.
  bool found = std::any_of(batch_.begin(), batch_.end(), [&](const entry& b) { return &b == &e; });
  entry* running = nullptr;
  for (auto& w : written_) {
    if (running == nullptr && w.at != stage::ended) running = &w;
    if (&w == &e) found = true;
    if (!w.batch_last) continue;
    if (found) return running;
    running = nullptr;  // a Sync: the next segment starts
  }
  return nullptr;
}

bool pipeline_core::outlive_deadline(time_point now, written_queue& q, entry& e) {
  if (e.past_deadline) {
    break_all("the server answered nothing within " + std::to_string(p_.cancel_bound.count()) +
                  " ms of the cancel sent at a written transaction's deadline (it may have committed)",
              std::nullopt);
    return false;
  }
  e.past_deadline = true;
  q.set_deadline(e, now + p_.cancel_bound);
  if (entry* running = running_in_segment(e)) try_start_cancel(now, *running);
  return true;
}

void pipeline_core::emit_cancel(time_point now, entry& e) {
  e.cancel_sent = true;
  cancel_target_ = e.id;
  cancel_fired_ = false;
  fire_pending_cancel(now);
}

void pipeline_core::target_over(pipe_id id) {
  if (id != cancel_target_) return;
  cancel_target_ = 0;  // the backend is past it
  cancel_fired_ = false;
}

void pipeline_core::bound_by_cancel(entry& e, time_point t) {
  if (t < e.req.deadline) {
    written_.set_deadline(e, t);
    any_deadline_ = true;
  }
}

void pipeline_core::fire_pending_cancel(time_point now) {
  // Pending: asked for (cancel_target_), not started, and the target's
  // segment is now the oldest written: every Sync ahead of it was read.
  if (cancel_target_ == 0 || cancel_running_ || cancel_fired_) return;
  entry* t = in_first_segment(cancel_target_);
  if (t == nullptr) return;
  entry& e = *t;
  cancel_fired_ = true;
  cancel_running_ = true;
  cancel_deadline_ = now + p_.cancel_bound;
  bound_by_cancel(e, cancel_deadline_);
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
  if (!e || !e->awaited() || !after_write) return;
  if (try_start_cancel(now, *e)) return;  // completes when the server answers
  // Shared connection, or other queries written that a signal could hit.
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

void pipeline_core::on_cancel_failed_once_started(pipe_id id) {
  // cancel_target_ stays: nothing is written until the target's Sync, which
  // tells that the backend is past it and a late signal can hit nothing.
  on_cancel_returned();
  if (entry* e = find_written(id); e != nullptr && !e->abandoned && e->awaited())
    complete(*e, pipe_outcome::cancelled_detached);
}

void pipeline_core::on_cancel_failed(pipe_id id) {
  cancel_running_ = false;
  cancel_deadline_ = time_point::max();
  target_over(id);
  if (entry* e = find_written(id)) {
    e->cancel_sent = false;
    if (!e->abandoned) complete(*e, pipe_outcome::cancelled_detached);
  }
}

}  // namespace pgpipe::detail
