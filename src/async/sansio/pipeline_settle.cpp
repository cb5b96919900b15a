// pipeline_core: what a Sync means for the requests it closes (contract in
// pipeline_core.hpp). A Sync closes one segment: the head alone, or a
// coalesced batch whose other requests wait in batch_. One rule decides
// every request of it, whichever kind of segment it closed.
//
// Policy reasons:
//  - Outcomes wait for the segment's Sync (like capacity), so a break
//    mid-batch reports every request of it as lost, never half of the batch
//    as answered.
//  - A request the server skipped never ran: it is written again ahead of
//    newer work, so its caller sees no difference except time; one that ran
//    (result or error) is never written again. Progress is certain: a
//    re-sent request is older than anything behind it, so only its own error
//    can stop it once it leads a batch.
//  - A request re-run for a statement repair goes back ahead of newer work
//    too: it was first among the waiting when it was written, and gets a
//    fresh Parse.
//  - The safety net looks at the server's transaction status after the
//    Sync: requests of other callers are pipelined behind a shared request,
//    and would run inside a transaction it left open.
#include "async/sansio/pipeline_core.hpp"

#include <new>

#include <algorithm>
#include <utility>

namespace pgpipe::detail {

void pipeline_core::on_sync(time_point now, tx_state tx) {
  if (written_.empty() || broken_) return;
  last_progress_ = now;
  settle(tx);
  if (broken_) return;
  written_.pop_front();  // the head: settled, or moved to waiting_ to run again
  batch_.clear();
  prime_single_row();
  fire_pending_cancel(now);
  trim_if_drained();
}

void pipeline_core::trim_if_drained() noexcept {
  // A deque's map grows with its peak and never shrinks (a million queued
  // requests leave megabytes of it): swapped for fresh deques, but only
  // after a burst, so that a steady stream costs nothing here.
  constexpr std::size_t burst = 4096;
  if (peak_waiting_ < burst || !waiting_.empty() || !written_.empty() || !batch_.empty()) return;
  try {
    waiting_.release_map();
    written_.release_map();
    batch_.release_map();
  } catch (const std::bad_alloc&) {
    return;  // only memory kept longer; the queues are unchanged
  }
  peak_waiting_ = 0;
}

void pipeline_core::settle(tx_state tx) {
  // The segment in wire order: its batch's finished requests, then the head
  // (whose command carried the Sync). Decided in place, so that a request
  // with a Sync of its own costs no move.
  entry& head = written_.front();
  auto each = [&](auto&& f) {
    for (auto& e : batch_) f(e);
    f(head);
  };
  each([&](entry& e) {
    finish_statement(e);
    target_over(e.id);
  });
  if ((tx == tx_state::in_transaction || tx == tx_state::failed) && !head.req.on_lease) {
    // Safety net. Coalesced requests are reads that cannot open a block; if
    // one did anyway, nobody knows which: the last one is blamed, the others
    // may have executed inside it.
    each([&](entry& e) {
      release_unit(e);
      complete(e, &e == &head ? pipe_outcome::transaction_left_open : pipe_outcome::connection_lost);
    });
    break_all("a request on the shared path left a transaction open; the connection was retired", std::nullopt);
    return;
  }
  // A lease's requests keep their order, and a transaction the error aborted
  // stays aborted: a lease request is re-run only alone and outside one.
  const bool lease_may_retry = tx == tx_state::idle && written_.size() == 1;
  each([&](entry& e) {
    const pipe_id id = e.id;
    const answer heard = e.heard;
    if (!settle_one(e, lease_may_retry)) settle_unit(id, heard);
  });
}

bool pipeline_core::settle_one(entry& e, bool lease_may_retry) {
  switch (e.heard) {
    case answer::ok:
      release_unit(e);
      complete(e, pipe_outcome::ok);
      return false;
    case answer::none:
      release_unit(e);
      complete(e, pipe_outcome::no_result);  // a Sync without any result: protocol error
      return false;
    case answer::skipped:
      if (e.to == recipient::detached) {
        release_unit(e);  // its caller was answered (cancel, timeout): nothing to run
      } else if (e.req.on_lease) {
        // Only a chain puts lease requests in one segment: its transaction
        // is aborted, and running the rest alone would commit half of it.
        // A cancelled one did not run: its cancel landed ahead of it.
        release_unit(e);
        complete(e, e.cancel_sent && !e.past_deadline ? pipe_outcome::cancelled_by_server : pipe_outcome::skipped);
      } else {
        requeue(e);
        return true;
      }
      return false;
    case answer::error:
    case answer::parse_error:
    case answer::stale_statement:
      break;
  }
  switch (judge_statement(e, lease_may_retry)) {
    case statement_verdict::pooler_suspected:  // a re-run would meet the same: names are off from here on
      release_unit(e);
      complete(e, pipe_outcome::pooler_suspected);
      return false;
    case statement_verdict::rerun:
      ++e.repairs;
      requeue(e);
      return true;
    case statement_verdict::stale_error:
    case statement_verdict::error:
      break;
  }
  release_unit(e);
  if (e.sqlstate == "57014" && e.past_deadline) {
    complete(e, pipe_outcome::timed_out_on_server);
  } else {
    complete(e, e.cancel_sent && e.sqlstate == "57014" ? pipe_outcome::cancelled_by_server : pipe_outcome::sql_error);
  }
  return false;
}

void pipeline_core::requeue(entry& e) {
  // waiting_ holds requests in submission order, and a request queued again
  // takes its place in it: ahead of newer work, and behind the requests
  // submitted before it that are queued again too, whichever Sync (this one
  // or one read earlier, before any write pass) gave them back. Capacity
  // stays held.
  e.at = stage::waiting;
  auto at = std::upper_bound(waiting_.begin(), waiting_.end(), e.seq,
                             [](std::uint64_t seq, const entry& w) { return seq < w.seq; });
  waiting_.insert(at, std::move(e));
}

}  // namespace pgpipe::detail
