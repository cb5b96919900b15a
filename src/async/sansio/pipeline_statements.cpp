// pipeline_core: its use of the prepared-statement policy
// (core/statements/statement_cache.hpp, contract in pipeline_core.hpp).
//
// Policy reasons (the async side; the policy's own are in statement_cache.cpp):
//  - Streams stay unnamed: single-row mode must be set when the Execute
//    becomes current, which a preceding Parse would complicate.
//  - A statement is dropped with a protocol-level Close where libpq has one
//    (17's PQsendClosePrepared: poolers that track protocol-level statements
//    follow it, and refuse SQL DEALLOCATE), else with a DEALLOCATE sent as an
//    ordinary unnamed statement. Either has its own Sync and runs after every
//    request written before it, so a statement in flight is never dropped
//    under it. Neither result reaches a caller: a Close of a name the server
//    does not have succeeds, a DEALLOCATE of it fails with 26000, both fine.
//  - An eviction's drop is written just ahead of the request that needs the
//    room; it may drop only with room for both in the pipeline, and never
//    inside an open chain (its Sync would split the chain).
#include "async/sansio/pipeline_core.hpp"

#include <utility>

namespace pgpipe::detail {

void pipeline_core::name_statement(entry& e) {
  if (!p_.prepared_statements || e.req.internal || e.req.stream) return;
  const statement_key& key = e.req.sql.hashed();
  if (const std::string* n = cache_.get(key)) {
    e.name = *n;
  } else {
    const bool mid_segment = !written_.empty() && !written_.back().batch_last;
    if (const std::string* fresh = cache_.put(key, written() + 2 <= p_.depth && !mid_segment)) {
      e.name = *fresh;
      e.carried_parse = true;
      e.at = stage::parse;  // the Parse's results come first
      for (const std::string& old : cache_.invalidated()) {
        entry d;
        d.id = next_internal_--;
        d.seq = e.seq;  // written just ahead of e
        d.to = recipient::core;
        d.req.on_lease = e.req.on_lease;  // inside e's lease (and its transaction)
        drop_statement(d, old);
        send(d);
        ++syncs_sent_;  // it closes an open batch, if any (batch_last)
        written_.push_back(std::move(d));
      }
      cache_.remove_invalidated();
    }
  }
  if (!e.name.empty()) cache_.use(key, e.name, +1);
}

void pipeline_core::drop_statement(entry& d, const std::string& name) const {
  d.req.internal = true;
  d.closes_statement = p_.close_prepared;
  d.req.sql = p_.close_prepared ? name : "deallocate " + name;
}

bool pipeline_core::needs_parse(const entry& e) const {
  return p_.prepared_statements && cache_.naming() && cache_.capacity() > 0 && !cache_.contains(e.req.sql.hashed());
}

void pipeline_core::finish_statement(entry& e) {
  if (e.name.empty()) return;
  cache_.use(e.req.sql.hashed(), e.name, -1);
  // A Parse that failed, or that the server skipped, made no statement.
  if (e.heard == answer::parse_error || (e.carried_parse && e.heard == answer::skipped))
    cache_.invalidate(e.req.sql.hashed(), e.name, false);
}

statement_verdict pipeline_core::judge_statement(entry& e, bool lease_may_retry) {
  statement_failure f;
  f.sqlstate = e.sqlstate;
  f.stale = e.heard == answer::stale_statement;
  f.at_parse = e.heard == answer::parse_error;
  f.carried_parse = e.carried_parse;
  // A lease's requests keep their order, and a transaction the error aborted
  // stays aborted: a lease request is re-run only alone and outside one.
  f.in_transaction = e.req.on_lease && !lease_may_retry;
  f.caller_waits = e.awaited();
  f.repairs = e.repairs;
  const statement_verdict v = cache_.judge(e.req.sql.hashed(), e.name, f);
  queue_invalidated(e);
  return v;
}

void pipeline_core::queue_invalidated(const entry& e) {
  for (const std::string& name : cache_.invalidated()) {
    entry d;
    d.id = next_internal_--;
    d.seq = next_seq_++;
    d.to = recipient::core;
    // A lease's internal request belongs to the lease: it may run inside the
    // lease's transaction (queued behind its BEGIN), which is no shared
    // request leaving one open. Inside an aborted transaction the DEALLOCATE
    // fails (25P02) and the server keeps the old statement until the session
    // ends; nothing names it again.
    d.req.on_lease = e.req.on_lease;
    drop_statement(d, name);
    waiting_.push_back(std::move(d));
  }
  cache_.remove_invalidated();
}

}  // namespace pgpipe::detail
