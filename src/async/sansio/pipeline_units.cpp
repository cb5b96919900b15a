// pipeline_core: units, a transaction helper's BEGIN and the work that must
// run inside it (contract in pipeline_core.hpp, "Units").
//
// Policy reasons:
//  - BEGIN can fail with an SQL error (a transaction pooler's 42P05,
//    SERIALIZABLE on a hot standby, BEGIN inside an aborted transaction).
//    Every statement of the work written in a later segment would then run
//    outside any transaction and commit on its own. The work's statements
//    behind BEGIN's segment wait for BEGIN's answer, and are never written
//    once it failed.
//  - The wait costs a round trip only for a statement that was not written
//    with BEGIN and comes before BEGIN's answer (the helpers write BEGIN with
//    the work's first statement).
//  - The opener's answer is what the server said (its `heard`), whether or
//    not its caller was answered earlier (a deadline): a detached BEGIN that
//    succeeded opened the transaction all the same.
#include "async/sansio/pipeline_core.hpp"

namespace pgpipe::detail {

bool pipeline_core::unit_blocks_queue() {
  while (!waiting_.empty() && waiting_.front().req.in_unit && waiting_.front().req.on_lease) {
    entry& f = waiting_.front();
    if (unit_ == unit_state::failed) {
      release_unit(f);
      complete(f, pipe_outcome::unit_failed);
      waiting_.pop_front();
      continue;
    }
    // Pending: only into the opener's segment, still open in this pass.
    const bool joins_open_segment = !written_.empty() && !written_.back().batch_last;
    return unit_ == unit_state::pending && !joins_open_segment;
  }
  return false;
}

void pipeline_core::settle_unit(pipe_id id, answer heard) {
  if (id != unit_opener_ || unit_ != unit_state::pending) return;
  unit_ = heard == answer::ok ? unit_state::open : unit_state::failed;
}

}  // namespace pgpipe::detail
