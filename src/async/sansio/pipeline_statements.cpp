// pipeline_core: the prepared-statement cache's use, the repair of stale
// statements and pooler detection (contract in pipeline_core.hpp).
//
// Policy reasons:
//  - Streams stay unnamed: single-row mode must be set when the Execute
//    becomes current, which a preceding Parse would complicate.
//  - A statement is dropped with a protocol-level Close where libpq has one
//    (17's PQsendClosePrepared: poolers that track protocol-level statements
//    follow it, and refuse SQL DEALLOCATE), else with a DEALLOCATE sent as an
//    ordinary unnamed statement. Either has its own Sync and runs after every
//    request written before it, so a statement in flight is never dropped
//    under it. Neither result reaches a caller: a Close of a name the server
//    does not have succeeds, a DEALLOCATE of it fails with 26000, both fine.
//  - A failed Parse leaves no statement; a failed Execute leaves it in place.
//  - Pooler detection: this connection sends each name's Parse once, under a
//    name never used before on it. 42P05 then means another client made that
//    name on the same server session, 26000 that the Parse ran on another
//    one: only a transaction pooler explains either, and a re-run would meet
//    the same.
#include "async/sansio/pipeline_core.hpp"

#include "pq/libpq_failure.hpp"

#include <utility>

namespace pgpipe::detail {

void pipeline_core::name_statement(entry& e) {
  if (!p_.prepared_statements || pooler_seen_ || e.req.internal || e.req.stream || p_.max_prepared == 0) return;
  if (const std::string* n = cache_.find(e.req.sql.hashed())) {
    e.name = *n;
  } else {
    if (!cache_.has_room()) {
      // Room for the DEALLOCATE too, or this one simply goes unnamed. Not
      // inside an open chain either: the DEALLOCATE's Sync would split it.
      const bool mid_segment = !written_.empty() && !written_.back().batch_last;
      if (written() + 2 <= p_.depth && !mid_segment) {
        if (auto old = cache_.evict()) {
          entry d;
          d.id = next_internal_--;
          d.seq = e.seq;  // written just ahead of e
          d.to = recipient::core;
          d.req.on_lease = e.req.on_lease;  // inside e's lease (and its transaction)
          drop_statement(d, *old);
          send(d);
          ++syncs_sent_;  // it closes an open batch, if any (batch_last)
          written_.push_back(std::move(d));
        }
      }
    }
    if (cache_.has_room()) {
      e.name = cache_.add(e.req.sql.hashed());
      e.carried_parse = true;
      e.at = stage::parse;  // the Parse's results come first
    }
  }
  if (!e.name.empty()) cache_.use(e.req.sql.hashed(), e.name, +1);
}

void pipeline_core::drop_statement(entry& d, const std::string& name) const {
  d.req.internal = true;
  d.closes_statement = p_.close_prepared;
  d.req.sql = p_.close_prepared ? name : "deallocate " + name;
}

bool pipeline_core::needs_parse(const entry& e) const {
  return p_.prepared_statements && !pooler_seen_ && p_.max_prepared > 0 && !cache_.contains(e.req.sql.hashed());
}

void pipeline_core::finish_statement(entry& e) {
  if (e.name.empty()) return;
  cache_.use(e.req.sql.hashed(), e.name, -1);
  // A Parse that failed, or that the server skipped, made no statement.
  if (e.heard == answer::parse_error || (e.carried_parse && e.heard == answer::skipped))
    cache_.forget(e.req.sql.hashed(), e.name);
}

bool pipeline_core::pooler_symptom(const entry& e) {
  return is_error(e.heard) && e.carried_parse && is_pooler_symptom(e.sqlstate);
}

bool pipeline_core::repair_statement(entry& e, bool lease_may_retry) {
  if (e.heard != answer::stale_statement) return false;
  // The statement is stale for every later use as well: it is dropped
  // whether or not this request runs again, so that the next use prepares
  // it afresh (a lease's transaction meets the error once, not every time).
  drop_stale_statement(e);
  if (e.repairs >= max_statement_repairs || !e.awaited()) return false;
  if (e.req.on_lease && !lease_may_retry) return false;
  ++e.repairs;
  return true;
}

void pipeline_core::drop_stale_statement(const entry& e) {
  // The server refused the stale statement before executing anything; 26000
  // says it is gone already, anything else that it still exists.
  const bool exists = e.sqlstate != "26000";
  if (!cache_.forget(e.req.sql.hashed(), e.name) || !exists) return;
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
  drop_statement(d, e.name);
  waiting_.push_back(std::move(d));
}

}  // namespace pgpipe::detail
