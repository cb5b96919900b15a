// pipeline_core: cancellation, and the hold-back that keeps a PQcancel from
// hitting another query (contract in pipeline_core.hpp).
//
// Policy reasons:
//  - A PQcancel hits whatever the backend executes when the signal lands, so
//    it is started only for a lease request that is the only one written,
//    and nothing is written from then until the call has returned and the
//    target's Sync was read (writes_held()).
//  - Anywhere else a written request is answered at once (detached): the
//    server's answer is matched and discarded when it arrives.
#include "async/sansio/pipeline_core.hpp"

namespace pgpipe::detail {

pipeline_core::entry* pipeline_core::find_written(pipe_id id) {
  for (auto& e : batch_)
    if (e.id == id) return &e;
  for (auto& e : written_)
    if (e.id == id) return &e;
  return nullptr;
}

bool pipeline_core::try_start_cancel(time_point now, entry& e) {
  // Only safe if nothing but the target can be executing, i.e. it is the
  // only request written (writes_held() keeps it so until the signal has landed).
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
  if (cancel_target_ == id) cancel_target_ = 0;
  if (entry* e = find_written(id)) {
    e->cancel_sent = false;
    if (!e->abandoned) complete(*e, pipe_outcome::cancelled_detached);
  }
}

}  // namespace pgpipe::detail
