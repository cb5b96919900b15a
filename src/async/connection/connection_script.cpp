// pipelined_connection: a script on a lease (async_lease::async_execute_script):
// several statements sent as one simple query.
//
// Why outside pipeline mode: libpq sends no simple query in pipeline mode
// (PQsendQuery is extended protocol there, one statement per call). So a
// script takes the path of a COPY: pipeline_core holds it until everything
// before it on the lease was answered, says start_solo, and writes nothing
// behind it until on_solo_end. Here the connection leaves pipeline mode,
// sends the text with PQsendQuery, reads every result, and enters pipeline
// mode again once libpq has no more. What is kept of each result, what a
// COPY in the script gets, and when the script's own transaction is rolled
// back are pq/script_results' rules, shared with the blocking driver. A
// script answered early (its deadline, the caller's cancellation) is
// cancelled on the server (core_.solo_stop), and its results are still read
// to the end before anything else is written.
#include "async/connection/pipelined_connection.hpp"

#include "pq/libpq_failure.hpp"
#include "pq/script_results.hpp"

#include <utility>

namespace pgpipe::detail {

namespace {

// Given to the server as the reason a script's COPY FROM STDIN failed.
constexpr const char* copy_in_refused =
    "async_execute_script does not feed COPY ... FROM STDIN: use async_lease::copy_in";

}  // namespace

void pipelined_connection::script_start(pipe_id id) {
  auto req = lookup(id);
  if (!req) {
    core_.on_broken("internal error: a script started without its request");
    return;
  }
  // Reached with nothing written and every result read, as for a COPY.
  if (PQexitPipelineMode(pg_) != 1) {
    core_.on_broken("cannot leave pipeline mode for a script: " + pq_error());
    return;
  }
  script_ = req;
  script_in_copy_out_ = false;
  script_rolling_back_ = false;
  script_results_.emplace(PQtransactionStatus(pg_) == PQTRANS_IDLE);
  if (!PQsendQuery(pg_, req->spec.sql.c_str())) {
    core_.on_broken("sending a script failed: " + pq_error());
    return;
  }
  script_flush();
  arm_read();
}

void pipelined_connection::script_flush() {
  if (st_ != state::ready || !script_) return;
  const int r = PQflush(pg_);
  if (r < 0) {
    break_connection("flush failed: " + pq_error());
    return;
  }
  flush_pending_ = r == 1;
  if (flush_pending_) arm_write();
}

void pipelined_connection::script_pump() {
  while (script_ && st_ == state::ready && !core_.is_broken()) {
    if (script_in_copy_out_) {
      char* buf = nullptr;
      int n = 0;
      while ((n = PQgetCopyData(pg_, &buf, 1)) > 0) PQfreemem(buf);
      if (n == 0) return;  // more rows when the socket is readable
      if (n == -2) {
        break_connection("reading a script's COPY TO STDOUT failed: " + pq_error());
        return;
      }
      script_in_copy_out_ = false;  // -1: its end; its result follows
    }
    if (PQisBusy(pg_)) return;
    script_results::pgresult_ptr res(PQgetResult(pg_));
    if (!res) {
      if (!script_rolling_back_ && script_results_->needs_rollback(PQtransactionStatus(pg_))) {
        script_rolling_back_ = true;
        if (!PQsendQuery(pg_, "rollback")) {
          break_connection("rolling back a failed script's transaction failed: " + pq_error());
          return;
        }
        script_flush();
        continue;
      }
      script_done();
      return;
    }
    if (script_rolling_back_) {
      if (PQresultStatus(res.get()) != PGRES_COMMAND_OK) {
        break_connection("rolling back a failed script's transaction failed: " + diagnostics_of(res.get()).to_string());
        return;
      }
      continue;
    }
    if (is_session_fatal(res.get())) {
      core_.on_session_ended("server ended the session: " + diagnostics_of(res.get()).to_string());
      apply();
      return;
    }
    switch (script_results_->take(std::move(res))) {
      case script_results::step::next:
        break;
      case script_results::step::end_copy_in:
        // 0 (nonblocking, no room to queue it) would leave the COPY
        // waiting for an end that never comes: treated as a failure too.
        if (PQputCopyEnd(pg_, copy_in_refused) != 1) {
          break_connection("ending a script's COPY FROM STDIN failed: " + pq_error());
          return;
        }
        script_flush();
        break;
      case script_results::step::drain_copy_out:
        script_in_copy_out_ = true;
        break;
      case script_results::step::give_up:
        break_connection("a script started COPY BOTH (replication), which the async driver does not speak");
        return;
    }
  }
}

void pipelined_connection::script_done() {
  auto req = std::exchange(script_, nullptr);
  flush_pending_ = false;
  if (PQenterPipelineMode(pg_) != 1) {
    core_.on_broken("cannot enter pipeline mode after a script: " + pq_error());
    apply();
    return;
  }
  // The request's outcome is read from ok/err (request_outcome.cpp).
  const bool failed = script_results_->failed();
  req->err = script_results_->take_first_error();
  if (!failed) req->ok = script_results_->take_last();
  script_results_.reset();
  core_.on_solo_end(pool_clock::now(), failed);
  apply();  // completes the script (unless it was answered early) and writes what waited behind it
  if (st_ == state::ready) arm_read();
}

}  // namespace pgpipe::detail
