// script_operation: a lease's script, outside pipeline mode (script_operation.hpp).
#include "async/connection/script_operation.hpp"

#include "async/connection/request.hpp"
#include "async/sansio/pipeline_core.hpp"
#include "pq/libpq_failure.hpp"

#include <utility>

namespace pgpipe::detail {

namespace {

// Given to the server as the reason a script's COPY FROM STDIN failed.
constexpr const char* copy_in_refused =
    "async_execute_script does not feed COPY ... FROM STDIN: use async_lease::copy_in";

}  // namespace

void script_operation::start(solo_host& host, query_request& req) {
  PGconn* pg = host.solo_conn();
  in_copy_out_ = false;
  rolling_back_ = false;
  results_.emplace(PQtransactionStatus(pg) == PQTRANS_IDLE);
  if (!PQsendQuery(pg, req.spec.sql.c_str())) {
    host.solo_core().on_broken("sending a script failed: " + host.solo_pq_error());
    return;
  }
  flush(host);
  host.solo_watch_read();
}

void script_operation::flush(solo_host& host) {
  if (!host.solo_ready() || !host.solo_holds_wire(*this)) return;
  const int r = PQflush(host.solo_conn());
  if (r < 0) {
    host.solo_break("flush failed: " + host.solo_pq_error());
    return;
  }
  host.solo_flush_pending(r == 1);
  if (r == 1) host.solo_watch_write();
}

void script_operation::pump(solo_host& host) {
  while (host.solo_holds_wire(*this) && host.solo_ready() && !host.solo_core().is_broken()) {
    PGconn* pg = host.solo_conn();
    if (in_copy_out_) {
      char* buf = nullptr;
      int n = 0;
      while ((n = PQgetCopyData(pg, &buf, 1)) > 0) PQfreemem(buf);
      if (n == 0) return;  // more rows when the socket is readable
      if (n == -2) {
        host.solo_break("reading a script's COPY TO STDOUT failed: " + host.solo_pq_error());
        return;
      }
      in_copy_out_ = false;  // -1: its end; its result follows
    }
    if (PQisBusy(pg)) return;
    script_results::pgresult_ptr res(PQgetResult(pg));
    if (!res) {
      if (!rolling_back_ && results_->needs_rollback(PQtransactionStatus(pg))) {
        rolling_back_ = true;
        if (!PQsendQuery(pg, "rollback")) {
          host.solo_break("rolling back a failed script's transaction failed: " + host.solo_pq_error());
          return;
        }
        flush(host);
        continue;
      }
      done(host);
      return;
    }
    if (rolling_back_) {
      if (PQresultStatus(res.get()) != PGRES_COMMAND_OK) {
        host.solo_break("rolling back a failed script's transaction failed: " +
                        diagnostics_of(res.get()).to_string());
        return;
      }
      continue;
    }
    if (is_session_fatal(res.get())) {
      host.solo_core().on_session_ended("server ended the session: " + diagnostics_of(res.get()).to_string());
      host.solo_apply();
      return;
    }
    switch (results_->take(std::move(res))) {
      case script_results::step::next:
        break;
      case script_results::step::end_copy_in:
        // 0 (nonblocking, no room to queue it) would leave the COPY
        // waiting for an end that never comes: treated as a failure too.
        if (PQputCopyEnd(pg, copy_in_refused) != 1) {
          host.solo_break("ending a script's COPY FROM STDIN failed: " + host.solo_pq_error());
          return;
        }
        flush(host);
        break;
      case script_results::step::drain_copy_out:
        in_copy_out_ = true;
        break;
      case script_results::step::give_up:
        host.solo_break("a script started COPY BOTH (replication), which the async driver does not speak");
        return;
    }
  }
}

void script_operation::done(solo_host& host) {
  if (!host.solo_leave()) return;
  // The request's outcome is read from ok/err (request_outcome.cpp).
  const bool failed = results_->failed();
  req_->err = results_->take_first_error();
  if (!failed) req_->ok = results_->take_last();
  results_.reset();
  host.solo_end(failed);  // completes the script (unless it was answered early)
}

}  // namespace pgpipe::detail
