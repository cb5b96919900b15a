// blocking_pool::exec, exec_watch and commit_work: the pieces of
// blocking_pool::exec and ::transaction (include/pgpipe/blocking_pool.hpp)
// that are not templates. exec_watch reports each exec() to the pool's
// query_metrics: the query_duration histogram and the query_observer hooks.
#include "blocking/api/exec_watch.hpp"

#include <pgpipe/blocking_pool.hpp>
#include <pgpipe/blocking_read_router.hpp>

#include "blocking/connection/lease_access.hpp"
#include "blocking/pool/blocking_pool_impl.hpp"
#include "core/sql/commit_check.hpp"

#include <libpq-fe.h>
#include <pqxx/except>

namespace pgpipe {

namespace detail {

void commit_work(pqxx::work& tx, const blocking_lease& lease) {
  PGconn* pg = lease_access::raw(lease);
  if (pg != nullptr && PQtransactionStatus(pg) == PQTRANS_INERROR) {
    // libpqxx 7 keeps the work open after a failed statement, and the
    // server answers its COMMIT with a rollback that libpqxx reports as
    // success: catch the swallowed error before committing.
    tx.abort();
  } else {
    try {
      tx.commit();
      return;
    } catch (const pqxx::usage_error&) {
      // libpqxx 6.4 aborted the work after the failed statement. Only when no
      // transaction is open on the server any more is this the swallowed
      // error; any other misuse keeps libpqxx's own error.
      const auto status = pg != nullptr ? PQtransactionStatus(pg) : PQTRANS_UNKNOWN;
      if (status != PQTRANS_IDLE && status != PQTRANS_INERROR) throw;
    }
  }
  throw error(make_sqlstate("25P02"), rolled_back_commit_diagnostics());
}

exec_watch::exec_watch(blocking_pool_impl& pool, std::string_view sql) noexcept
    : pool_(pool), sql_(sql), submitted_(pool_clock::now()) {}

blocking_lease exec_watch::acquire() {
  blocking_lease lease;
  try {
    lease = pool_.acquire(pool_.params.acquire_timeout, &waited_);
  } catch (...) {
    fail(nullptr);
  }
  if (query_observer* obs = pool_.metrics.observer()) {
    const observed_start s = observe_start(*obs, observed(false), lease.slot_,
                                           lease.conn_->backend_pid(), pool_clock::now());
    started_ = s.at;
    slot_ = s.slot;
    backend_pid_ = s.backend_pid;
    user_ = s.user;
    observed_start_ = true;
  }
  return lease;
}

result exec_watch::done(result r) noexcept {
  const PGresult* res = r.native_handle();
  std::uint64_t rows = 0;
  if (res != nullptr && PQresultStatus(res) == PGRES_TUPLES_OK) {
    rows = static_cast<std::uint64_t>(PQntuples(res));
  } else if (res != nullptr) {
    rows = r.affected_rows();
  }
  end({}, {}, rows);
  return r;
}

void exec_watch::fail(blocking_lease* lease) {
  // With a lease, the lease counted the statement (blocking_lease::exec_encoded);
  // without one it never reached a connection, and is counted here.
  unstarted_ = lease == nullptr;
  try {
    rethrow_translated(lease);
  } catch (const error& e) {
    end(e.code(), e.diag().sqlstate, 0);
    throw;
  } catch (...) {
    diagnostics d;
    end(translate_exception(std::current_exception(), &d), d.sqlstate, 0);
    throw;
  }
}

observed_query exec_watch::observed(bool rerun) const noexcept {
  const routed_blocking_read* routed = routed_blocking_read::current();
  if (routed == nullptr) return {sql_, false, submitted_, waited_};
  return {sql_, false, submitted_, waited_, routed->called(), routed->attempt(), rerun};
}

void exec_watch::end(const std::error_code& ec, std::string_view sqlstate, std::uint64_t rows) noexcept {
  const auto now = pool_clock::now();
  // A failed attempt that a read router runs again is not the caller's
  // query: not timed (the re-run is, from the caller's call).
  routed_blocking_read* routed = routed_blocking_read::current();
  const bool rerun = ec && routed != nullptr && routed->reruns(ec);
  if (!rerun) {
    pool_.metrics.record_query(now - (routed != nullptr ? routed->called() : submitted_));
    if (unstarted_) pool_.metrics.count_unstarted_failure(ec);
  }
  query_observer* obs = pool_.metrics.observer();
  if (!obs) return;
  const observed_start s{slot_, backend_pid_, started_, user_};
  observe_end(*obs, observed(rerun), observed_start_ ? &s : nullptr, ec, sqlstate, rows, now);
}

}  // namespace detail

result blocking_pool::exec_encoded(std::string_view sql, detail::encoded_params params, bool binary_results) {
  detail::exec_watch watch(*impl_, sql);
  if (params.ec) {
    // Refused before a connection is borrowed: nothing was sent.
    try {
      throw error(params.ec, std::move(params.error_message));
    } catch (...) {
      watch.fail(nullptr);
    }
  }
  blocking_lease lease = watch.acquire();
  try {
    return watch.done(lease.exec_encoded(sql, std::move(params), binary_results));
  } catch (...) {
    watch.fail(&lease);
  }
}

}  // namespace pgpipe
