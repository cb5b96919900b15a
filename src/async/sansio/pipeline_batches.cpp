// pipeline_core: which requests share a Sync (contract in pipeline_core.hpp;
// the statement's part of the rule is sync_coalescing.hpp's, reported by the shell).
// What a batch's Sync means for its requests is settled with every other
// Sync, in pipeline_settle.cpp.
//
// Policy reasons:
//  - A batch never waits to fill: it stays open only if the next request
//    joins it in the same write pass, so low load keeps one round trip per
//    request.
//  - A request carrying a Parse always leads its batch: nothing before it in
//    the segment can fail and skip the Parse, so a statement named by requests
//    already written in later batches is never missing for a neighbour's sake
//    (which would cost them their one statement repair).
#include "async/sansio/pipeline_core.hpp"

namespace pgpipe::detail {

bool pipeline_core::may_coalesce(const entry& e) const {
  // The one place coalescing is decided (contract in pipeline_core.hpp):
  // from the shell's facts about the request, its session and its statement.
  return p_.sync_batch > 1 && e.req.read_only && e.req.session_read_only && e.req.may_share_sync &&
         !e.req.on_lease && !e.req.stream && !e.req.internal && e.to != recipient::core &&
         e.req.param_count <= max_params;
}

bool pipeline_core::batch_stays_open(const entry& e, std::size_t batch_run) const {
  // A chain asks for no sync_batch and no Parse-leads rule: its requests are
  // one transaction, whose error aborts all of them anyway.
  if (e.req.chained && e.req.on_lease && e.to != recipient::core) {
    return written() + 1 < p_.depth && !waiting_.empty() && waiting_.front().req.on_lease &&
           !waiting_.front().req.solo && !waiting_.front().req.stream;
  }
  return may_coalesce(e) && batch_run + 1 < p_.sync_batch && written() + 1 < p_.depth && !waiting_.empty() &&
         may_coalesce(waiting_.front()) && !needs_parse(waiting_.front());
}

}  // namespace pgpipe::detail
