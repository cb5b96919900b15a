// pipelined_connection: socket watching, the PQflush rule and reading
// PGresults into pipeline_core inputs (contract in pipelined_connection.hpp).
#include "async/connection/pipelined_connection.hpp"

#include "async/connection/copy_state.hpp"
#include "async/connection/libpq_socket.hpp"
#include "async/connection/script_operation.hpp"
#include "async/connection/stream_chunks.hpp"
#include "async/connection/tcp_cork.hpp"
#include "pq/libpq_failure.hpp"

#include <string_view>

namespace pgpipe::detail {

namespace asio = boost::asio;

void pipelined_connection::reassign_socket() {
  // libpq may have closed the previous socket and opened another (possibly
  // with the same number): always drop the old registration, never close it.
  if (sd_) {
    release_descriptor(*sd_);
    sd_.reset();
  }
  ++sd_gen_;
  read_armed_ = write_armed_ = false;
  sd_ = watch_libpq_socket(ex_, pg_);
  // Only where libpq flushes at every Sync (14–16) and the socket is TCP.
  corkable_ = sd_ && !cfg_->send_pipeline_sync && corkable_socket(sd_->native_handle());
}

void pipelined_connection::flush() {
  if (st_ != state::ready) return;
  if (solo_) {
    auto op = solo_;  // alive while it may give the wire back
    op->flush(*this);
    return;
  }
  const int r = PQflush(pg_);
  if (r < 0) {
    core_.on_broken("flush failed: " + pq_error());
    apply();
    return;
  }
  flush_pending_ = r == 1;
  if (flush_pending_) arm_write();
  // While sending, libpq may have read input into its buffer: results can be
  // ready without the socket becoming readable again.
  if (core_.written() > 0) drain_results();
}

void pipelined_connection::arm_read() {
  if (read_armed_ || paused_ || !sd_ || st_ != state::ready) return;
  read_armed_ = true;
  sd_->async_wait(asio::posix::stream_descriptor::wait_read,
                  [self = shared_from_this(), gen = sd_gen_](const boost::system::error_code& ec) {
                    if (gen != self->sd_gen_) return;
                    self->read_armed_ = false;
                    if (ec || self->st_ != state::ready) return;
                    self->on_readable();
                  });
}

void pipelined_connection::arm_write() {
  if (write_armed_ || !sd_ || st_ != state::ready) return;
  write_armed_ = true;
  sd_->async_wait(asio::posix::stream_descriptor::wait_write,
                  [self = shared_from_this(), gen = sd_gen_](const boost::system::error_code& ec) {
                    if (gen != self->sd_gen_) return;
                    self->write_armed_ = false;
                    if (ec || self->st_ != state::ready) return;
                    if (self->flush_pending_) self->flush();
                  });
}

void pipelined_connection::on_readable() {
  if (paused_) return;  // resume_if_paused() re-arms
  if (!PQconsumeInput(pg_)) {
    break_connection(pq_error());
    return;
  }
  core_.on_input(pool_clock::now());
  // A solo operation reads its own messages.
  if (solo_) {
    auto op = solo_;  // alive while it may give the wire back
    op->pump(*this);
  } else {
    drain_results();
  }
  if (st_ != state::ready) return;
  if (PQstatus(pg_) == CONNECTION_BAD) {
    break_connection(pq_error());
    return;
  }
  if (flush_pending_) flush();  // the solo operation's own flush, or the pipeline's once it is over
  if (st_ != state::ready) return;
  // A copy_out whose reader is behind leaves the socket unread until it asks.
  if (!(solo_ && solo_->reads_paused())) arm_read();
}

void pipelined_connection::drain_results() {
  const bool outer = !batching_;
  batching_ = true;
  drain_results_batch();
  // Streams get every row read in this batch as one chunk (bounded).
  auto streams = std::move(streams_to_deliver_);
  streams_to_deliver_.clear();
  for (auto& st : streams) {
    st->deliver_queued = false;
    stream_deliver(*st);
  }
  if (outer) {
    batching_ = false;
    apply();
  }
}

tx_state pipelined_connection::transaction_state(const query_request* head) const {
  switch (PQtransactionStatus(pg_)) {
    case PQTRANS_IDLE:
      return tx_state::idle;
    case PQTRANS_INTRANS:
      return tx_state::in_transaction;
    case PQTRANS_INERROR:
      return tx_state::failed;
    case PQTRANS_ACTIVE: {
      // libpq reports the status only while nothing else is in flight. With
      // neighbours pipelined behind, the command tag is the evidence left.
      if (!head || !head->ok) return tx_state::unknown;
      std::string_view tag = PQcmdStatus(head->ok.get());
      if (tag == "BEGIN" || tag == "START TRANSACTION") return tx_state::in_transaction;
      return tx_state::active;
    }
    default:
      return tx_state::unknown;
  }
}

void pipelined_connection::drain_results_batch() {
  // One clock read for every Sync of the batch: the core's progress clock
  // and cancel bound need no finer grain than one read of the socket.
  const auto now = pool_clock::now();
  bool last_null = false;
  // The head changes once per Sync, results arrive several per request:
  // look the request up only when the head changes.
  pipe_id req_id = 0;
  std::shared_ptr<query_request> req;
  while (st_ == state::ready && !core_.is_broken() && !solo_) {
    auto head_id = core_.head();
    if (!head_id) break;
    if (*head_id != req_id) {
      req_id = *head_id;
      req = lookup(req_id);
    }
    if (const auto* sp = req ? req->stream_of() : nullptr) {
      if (stream_should_pause(**sp)) {
        paused_ = true;
        break;
      }
    }
    if (PQisBusy(pg_)) break;
    PGresult* raw = PQgetResult(pg_);
    if (!raw) {
      // NULL ends one command's results (the Parse's, the Execute's). Two in
      // a row means libpq has nothing more for now.
      if (last_null) break;
      last_null = true;
      core_.on_command_end();
      apply();
      continue;
    }
    last_null = false;
    std::unique_ptr<PGresult, pgresult_deleter> res(raw);
    switch (PQresultStatus(raw)) {
      case PGRES_PIPELINE_SYNC:
        core_.on_sync(now, transaction_state(req.get()));
        apply();
        break;
      case PGRES_FATAL_ERROR:
      case PGRES_BAD_RESPONSE:
      case PGRES_NONFATAL_ERROR: {
        if (is_session_fatal(raw)) {
          // The server is ending the session (terminated backend, shutdown):
          // everything in flight may have executed.
          std::string why = "server ended the session: " + diagnostics_of(raw).to_string();
          if (req && !req->err) req->err = std::move(res);
          core_.on_session_ended(why);
          apply();
          return;
        }
        const char* state = PQresultErrorField(raw, PG_DIAG_SQLSTATE);
        std::string_view sqlstate = state ? state : "";
        const char* primary = PQresultErrorField(raw, PG_DIAG_MESSAGE_PRIMARY);
        const bool retryable = is_stale_statement(sqlstate, primary ? primary : "");
        if (core_.on_result(pipe_result::error, sqlstate, retryable) == pipe_keep::as_error && req)
          req->err = std::move(res);
        break;
      }
      case PGRES_PIPELINE_ABORTED:
        (void)core_.on_result(pipe_result::aborted);  // a command skipped after this request's own error
        break;
      case PGRES_COPY_IN:
      case PGRES_COPY_OUT:
      case PGRES_COPY_BOTH:
        core_.on_broken("COPY is not supported on a pipelined connection");
        apply();
        return;
      default: {  // TUPLES_OK, COMMAND_OK, EMPTY_QUERY, SINGLE_TUPLE
        const bool rows = PQntuples(raw) > 0;
        switch (core_.on_result(rows ? pipe_result::rows : pipe_result::command_ok)) {
          case pipe_keep::as_ok:
            if (req) req->ok = std::move(res);
            break;
          case pipe_keep::stream_row:
            if (const auto* sp = req ? req->stream_of() : nullptr) stream_row(*sp, res.release());
            break;
          default:
            break;
        }
        break;
      }
    }
  }
}

// ---- the solo slot ------------------------------------------------------------

void pipelined_connection::start_solo(pipe_id id) {
  auto req = lookup(id);
  std::shared_ptr<solo_operation> op;
  if (req) {
    if (auto* copy = std::get_if<copy_sink>(&req->sink)) {
      op = copy->copy;
    } else if (std::holds_alternative<script_sink>(req->sink)) {
      op = std::make_shared<script_operation>(req);
    }
  }
  if (!op) {
    core_.on_broken("internal error: a solo request started without its operation");
    return;
  }
  // Only reached with nothing written and every result read: libpq agrees
  // to leave pipeline mode unless something is still unread, which would be
  // a desynchronised FIFO.
  if (PQexitPipelineMode(pg_) != 1) {
    core_.on_broken(std::string("cannot leave pipeline mode for ") + op->what() + ": " + pq_error());
    return;
  }
  solo_ = op;
  op->start(*this, *req);
}

bool pipelined_connection::solo_leave() {
  auto op = std::exchange(solo_, nullptr);
  flush_pending_ = false;
  if (PQenterPipelineMode(pg_) != 1) {
    core_.on_broken(std::string("cannot enter pipeline mode after ") + op->what() + ": " + pq_error());
    apply();
    return false;
  }
  return true;
}

void pipelined_connection::solo_end(bool failed) {
  core_.on_solo_end(pool_clock::now(), failed);
  apply();  // completes the request (unless it was answered early) and writes what waited behind it
  if (st_ == state::ready) arm_read();
}

}  // namespace pgpipe::detail
