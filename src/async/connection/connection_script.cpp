// pipelined_connection: a script on a lease (async_lease::async_execute_script):
// several statements sent as one simple query.
//
// Why outside pipeline mode: libpq sends no simple query in pipeline mode
// (PQsendQuery is extended protocol there, one statement per call). So a
// script takes the path of a COPY: pipeline_core holds it until everything
// before it on the lease was answered, says start_copy, and writes nothing
// behind it until on_copy_end. Here the connection leaves pipeline mode,
// sends the text with PQsendQuery, reads every result (the first error is
// what the caller gets, else the last statement's result), and enters
// pipeline mode again once libpq has no more.
//
// A COPY inside a script has no caller feeding or reading it: FROM STDIN is
// ended at once with an error (the server fails the statement with 57014 and
// skips the rest of the script's implicit transaction); TO STDOUT's rows are
// read and dropped. The server stops a simple query at its first error: a
// transaction the script began itself is then still open, aborted, and is
// rolled back here before pipeline mode resumes (one the caller began before
// the script stays theirs, aborted as after any failed query). A script answered early (its deadline, the caller's
// cancellation) is cancelled on the server (core_.copy_stop), and its
// results are still read to the end before anything else is written.
#include "async/connection/pipelined_connection.hpp"

#include "pq/libpq_failure.hpp"

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
  script_outside_tx_ = PQtransactionStatus(pg_) == PQTRANS_IDLE;
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
    std::unique_ptr<PGresult, pgresult_deleter> res(PQgetResult(pg_));
    if (!res) {
      if (!script_rolling_back_ && script_->err && script_outside_tx_ &&
          PQtransactionStatus(pg_) == PQTRANS_INERROR) {
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
    switch (PQresultStatus(res.get())) {
      case PGRES_COPY_IN:
        // 0 (nonblocking, no room to queue it) would leave the COPY
        // waiting for an end that never comes: treated as a failure too.
        if (PQputCopyEnd(pg_, copy_in_refused) != 1) {
          break_connection("ending a script's COPY FROM STDIN failed: " + pq_error());
          return;
        }
        script_flush();
        break;
      case PGRES_COPY_OUT:
        script_in_copy_out_ = true;
        break;
      case PGRES_COPY_BOTH:
        break_connection("a script started COPY BOTH (replication), which the async driver does not speak");
        return;
      case PGRES_FATAL_ERROR:
      case PGRES_BAD_RESPONSE:
      case PGRES_NONFATAL_ERROR:
        if (is_session_fatal(res.get())) {
          core_.on_session_ended("server ended the session: " + diagnostics_of(res.get()).to_string());
          apply();
          return;
        }
        // The server skips the rest of the implicit transaction; the
        // first error is the script's.
        if (!script_->err) script_->err = std::move(res);
        break;
      default:
        script_->ok = std::move(res);
        break;
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
  const bool failed = req->err != nullptr;
  if (failed) req->ok.reset();
  core_.on_copy_end(pool_clock::now(), failed);
  apply();  // completes the script (unless it was answered early) and writes what waited behind it
  if (st_ == state::ready) arm_read();
}

}  // namespace pgpipe::detail
