// pipeline_core: solo requests, which hold the wire alone outside pipeline
// mode: a COPY (libpq 15 runs none in pipeline mode) or a script (contract
// in pipeline_core.hpp).
//
// Policy reasons:
//  - libpq leaves pipeline mode only with nothing in flight: a solo request waits at
//    the head of the waiting queue until everything written before it was
//    read (a coalesced batch's finished requests included: their Sync is
//    still due), and nothing is written behind it until it ends.
//  - It runs alone on an exclusive connection: a PQcancel for it can
//    hit nothing else.
#include "async/sansio/pipeline_core.hpp"

#include <utility>

namespace pgpipe::detail {

bool pipeline_core::solo_blocks_queue() {
  if (solo_id_ != 0) return true;
  entry& w = waiting_.front();
  if (!w.req.solo) return false;
  if (written() != 0) return true;
  entry e = std::move(w);
  waiting_.pop_front();
  e.at = stage::execute;
  solo_id_ = e.id;
  pipe_action a{pipe_action::kind::start_solo};
  a.id = e.id;
  actions_.push_back(std::move(a));
  written_.push_back(std::move(e));
  return true;
}

void pipeline_core::on_solo_end(time_point now, bool failed) {
  if (broken_ || solo_id_ == 0 || written_.empty() || written_.front().id != solo_id_) return;
  entry e = std::move(written_.front());
  written_.pop_front();
  solo_id_ = 0;
  last_progress_ = now;
  target_over(e.id);
  release_unit(e);
  if (failed) {
    complete(e, e.cancel_sent ? pipe_outcome::cancelled_by_server : pipe_outcome::sql_error);
  } else {
    complete(e, pipe_outcome::ok);
  }
}

bool pipeline_core::solo_stop(time_point now, pipe_id id) {
  if (broken_) return false;
  if (drop_unsent(id)) return true;
  if (id != solo_id_ || written_.empty() || written_.front().id != id) return false;
  entry& e = written_.front();
  e.abandoned = true;
  // Writes stay held until on_solo_end.
  if (e.req.on_lease && !e.cancel_sent && !cancel_running_) emit_cancel(now, e);
  return false;
}

}  // namespace pgpipe::detail
