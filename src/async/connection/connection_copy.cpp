// pipelined_connection: COPY on a lease (contract in <pgpipe/async_copy.hpp>).
//
// libpq 15 refuses COPY in pipeline mode, and leaves pipeline mode only with
// nothing in flight. pipeline_core therefore holds a COPY until every query
// before it on the lease was answered, then says start_copy and sends nothing
// else until on_copy_end. Here the connection leaves pipeline mode, sends the
// COPY (extended protocol: one statement, never a string of several), moves
// the data in libpq's nonblocking mode and enters pipeline mode again once
// PQgetResult has returned NULL.
//
// Backpressure: a chunk is handed to libpq only when its output buffer has
// gone to the socket (PQflush returned 0), and the caller's async_write
// completes only then, so the client holds one chunk whatever the producer's
// speed. copy_out stops reading the socket while a chunk of copy_chunk_bytes
// waits for its reader. While waiting to write, input is still consumed (the
// PQflush rule), so a server that talks back never deadlocks us.
#include "async/connection/pipelined_connection.hpp"

#include "async/connection/copy_state.hpp"
#include "pq/libpq_failure.hpp"

#include <utility>

namespace pgpipe::detail {

namespace {

template <class T>
void finish_with(std::unique_ptr<completion<T>>& w, const boost::asio::any_io_executor& ex, std::error_code ec,
                 T value) {
  if (!w) return;
  auto done = std::move(w);
  done->complete(ex, false, ec, std::move(value));
}

std::error_code lost_or_none(std::error_code ec) {
  // An abort's purpose (nothing stays) is met by any end of the COPY; only a
  // lost connection is worth telling the caller, whose lease is then broken.
  if (ec == errc::connection_lost || ec == errc::not_sent || ec == errc::closed) return ec;
  return {};
}

}  // namespace

// ---- the COPY on the wire -------------------------------------------------------

void pipelined_connection::copy_start(pipe_id id) {
  auto req = lookup(id);
  auto* sink = req ? std::get_if<copy_sink>(&req->sink) : nullptr;
  if (!sink) {
    core_.on_broken("internal error: a COPY started without its request");
    return;
  }
  // Only reached with nothing written, every result read: libpq agrees to
  // leave pipeline mode unless something is still unread, which would be a
  // desynchronised FIFO.
  if (PQexitPipelineMode(pg_) != 1) {
    core_.on_broken("cannot leave pipeline mode for COPY: " + pq_error());
    return;
  }
  auto st = sink->copy;
  copy_ = st;
  copy_paused_ = false;
  st->ph = copy_state::phase::starting;
  if (!PQsendQueryParams(pg_, req->spec.sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0)) {
    core_.on_broken("sending COPY failed: " + pq_error());
    return;
  }
  copy_flush();
  arm_read();
}

void pipelined_connection::copy_flush() {
  if (st_ != state::ready || !copy_) return;
  const int r = PQflush(pg_);
  if (r < 0) {
    break_connection("flush failed during COPY: " + pq_error());
    return;
  }
  flush_pending_ = r == 1;
  if (flush_pending_) {
    arm_write();
    arm_read();  // consume input while waiting
    return;
  }
  copy_feed();
}

void pipelined_connection::copy_feed() {
  if (st_ != state::ready || !copy_ || copy_->ph != copy_state::phase::in_data || flush_pending_) return;
  auto st = copy_;
  if (st->has_pending) {
    const int r = PQputCopyData(pg_, st->pending.data(), static_cast<int>(st->pending.size()));
    if (r < 0) {
      break_connection("sending COPY data failed: " + pq_error());
      return;
    }
    if (r == 0) {  // libpq's buffer is full: wait until the socket takes it
      flush_pending_ = true;
      arm_write();
      arm_read();
      return;
    }
    st->has_pending = false;
    st->pending = std::string();  // the client holds no copy once libpq has it
    const int f = PQflush(pg_);
    if (f < 0) {
      break_connection("flush failed during COPY: " + pq_error());
      return;
    }
    if (f == 1) {
      flush_pending_ = true;
      arm_write();
      arm_read();
      return;
    }
  }
  // The chunk is on the socket: the producer may send the next one.
  finish_with(st->write_waiter, ex_, {}, std::monostate{});
  if (st_ != state::ready || copy_ != st) return;
  if (st->end_requested && !st->end_sent && !st->has_pending) {
    const char* why = st->abort_reason.empty() ? nullptr : st->abort_reason.c_str();
    const int r = PQputCopyEnd(pg_, why);
    if (r < 0) {
      break_connection("ending COPY failed: " + pq_error());
      return;
    }
    if (r == 0) {
      flush_pending_ = true;
      arm_write();
      return;
    }
    st->end_sent = true;
    st->ph = copy_state::phase::ending;
    const int f = PQflush(pg_);
    if (f < 0) {
      break_connection("flush failed during COPY: " + pq_error());
      return;
    }
    flush_pending_ = f == 1;
    if (flush_pending_) arm_write();
    arm_read();
    copy_pump();
  }
}

void pipelined_connection::copy_pump() {
  while (copy_ && st_ == state::ready && !core_.is_broken()) {
    auto st = copy_;
    auto req = st->req.lock();
    switch (st->ph) {
      case copy_state::phase::queued:
      case copy_state::phase::in_data:
      case copy_state::phase::over:
        return;  // copy_in: the server speaks only after CopyDone/CopyFail
      case copy_state::phase::out_data: {
        for (;;) {
          if (!st->stopped && st->buffer.size() >= copy_chunk_bytes) {
            copy_paused_ = true;  // the reader is behind: the socket waits
            copy_deliver();
            return;
          }
          char* buf = nullptr;
          const int n = PQgetCopyData(pg_, &buf, 1);
          if (n > 0) {
            if (!st->stopped && !st->wrong_direction) st->buffer.append(buf, static_cast<std::size_t>(n));
            PQfreemem(buf);
            continue;
          }
          if (n == 0) {  // nothing more until the socket is readable
            copy_deliver();
            return;
          }
          if (n == -1) break;  // the data is over: the verdict follows
          break_connection("reading COPY data failed: " + pq_error());
          return;
        }
        st->ph = copy_state::phase::ending;
        copy_deliver();
        continue;
      }
      case copy_state::phase::starting:
      case copy_state::phase::ending: {
        if (PQisBusy(pg_)) return;
        PGresult* raw = PQgetResult(pg_);
        if (!raw) {
          copy_done_on_wire();
          return;
        }
        std::unique_ptr<PGresult, pgresult_deleter> res(raw);
        switch (PQresultStatus(raw)) {
          case PGRES_COPY_IN:
            if (st->ph == copy_state::phase::starting && !st->out) {
              st->ph = copy_state::phase::in_data;
              copy_feed();  // a chunk (or the end) may be waiting already
              if (copy_ == st && st->ph == copy_state::phase::in_data) return;
              continue;
            }
            // The other direction: end it at once, nothing is copied.
            st->wrong_direction = st->wrong_direction || st->out;
            st->ph = copy_state::phase::ending;
            if (PQputCopyEnd(pg_, "copy_out needs COPY ... TO STDOUT") < 0) {
              break_connection("ending COPY failed: " + pq_error());
              return;
            }
            st->end_sent = true;
            copy_flush();
            continue;
          case PGRES_COPY_OUT:
            // copy_in given a COPY TO: its rows are read and dropped.
            if (!st->out) st->wrong_direction = true;
            st->ph = copy_state::phase::out_data;
            continue;
          case PGRES_COPY_BOTH:
            break_connection("COPY BOTH (replication) is not supported");
            return;
          case PGRES_FATAL_ERROR:
          case PGRES_BAD_RESPONSE:
          case PGRES_NONFATAL_ERROR:
            if (is_session_fatal(raw)) {
              std::string why = "server ended the session: " + diagnostics_of(raw).to_string();
              if (req && !req->err) req->err = std::move(res);
              core_.on_session_ended(why);
              apply();
              return;
            }
            if (req && !req->err) req->err = std::move(res);
            st->ph = copy_state::phase::ending;
            continue;
          default:
            // COMMAND_OK "COPY n" ends a COPY; anything else in its place
            // means the statement was not a COPY of this direction.
            if (st->ph == copy_state::phase::starting) st->wrong_direction = true;
            if (req && !req->ok) req->ok = std::move(res);
            st->ph = copy_state::phase::ending;
            continue;
        }
      }
    }
  }
}

void pipelined_connection::copy_done_on_wire() {
  auto st = std::exchange(copy_, nullptr);
  copy_paused_ = false;
  flush_pending_ = false;
  if (PQenterPipelineMode(pg_) != 1) {
    core_.on_broken("cannot enter pipeline mode after COPY: " + pq_error());
    apply();
    return;
  }
  auto req = st->req.lock();
  const bool failed = (req && req->err) || st->wrong_direction;
  core_.on_copy_end(pool_clock::now(), failed);
  apply();  // completes the COPY (unless it was answered early) and writes what waited behind it
  if (st_ == state::ready) arm_read();
}

void pipelined_connection::copy_deliver() {
  if (!copy_) return;
  auto& st = *copy_;
  if (!st.next_waiter || st.buffer.empty()) return;
  std::string chunk;
  chunk.swap(st.buffer);
  finish_with(st.next_waiter, ex_, {}, std::move(chunk));
}

void pipelined_connection::copy_stop_on_wire(copy_state& st, const std::string& reason) {
  st.stopped = true;
  if (!st.out) {
    // CopyFail ends it; a chunk not handed over yet is dropped.
    st.has_pending = false;
    st.pending = std::string();
    if (!st.end_requested) {
      st.end_requested = true;
      st.abort_reason = reason;
    }
    copy_feed();
    return;
  }
  st.buffer = std::string();
  auto req = st.req.lock();
  if (req && req->id != 0) {
    core_.copy_stop(pool_clock::now(), req->id);
    apply();
  }
  if (copy_paused_ && copy_.get() == &st) {
    copy_paused_ = false;
    copy_pump();
    if (st_ == state::ready) arm_read();
  }
}

void pipelined_connection::copy_outcome(copy_state& st, std::error_code ec, result r) {
  if (st.decided) return;
  st.decided = true;
  if (st.wrong_direction && ec != errc::connection_lost && ec != errc::not_sent && ec != errc::closed) {
    ec = make_error_code(errc::invalid_argument);
    r = client_error_result(st.out ? "copy_out needs COPY ... TO STDOUT; nothing was copied"
                                   : "copy_in needs COPY ... FROM STDIN; nothing was copied");
  }
  if (!ec) st.rows.store(r.affected_rows(), std::memory_order_release);
  st.ec = ec;
  // Answered before the COPY ended on the wire (a timeout): end it there too.
  if (copy_.get() == &st && st_ == state::ready && ec) copy_stop_on_wire(st, "COPY ended: " + ec.message());
  if (!st.out) {
    st.has_pending = false;
    finish_with(st.write_waiter, ex_, ec ? ec : make_error_code(errc::closed), std::monostate{});
    finish_with(st.abort_waiter, ex_, lost_or_none(ec), std::monostate{});
    if (st.finish_waiter) {
      finish_with(st.finish_waiter, ex_, ec, std::move(r));
    } else {
      st.res = std::move(r);  // for a later async_finish
    }
    return;
  }
  if (st.stopped) return;  // cancel() answered the reader already
  if (st.next_waiter && !st.buffer.empty()) {  // the rows first; the end on the next call
    std::string chunk;
    chunk.swap(st.buffer);
    finish_with(st.next_waiter, ex_, {}, std::move(chunk));
    return;
  }
  if (st.next_waiter) {
    st.error_delivered = static_cast<bool>(ec);
    finish_with(st.next_waiter, ex_, ec, std::string());
  }
}

// ---- the caller's operations ------------------------------------------------------

void pipelined_connection::copy_write(const std::shared_ptr<copy_state>& st, std::string data,
                                      std::unique_ptr<completion<std::monostate>> done) {
  if (st->caller_ended) {
    done->complete(ex_, false, make_error_code(errc::invalid_argument), {});
    return;
  }
  if (st->decided || st->end_requested) {
    done->complete(ex_, false, st->ec ? st->ec : make_error_code(errc::closed), {});
    return;
  }
  if (st->write_waiter || st->finish_waiter || st->abort_waiter) {
    done->complete(ex_, false, make_error_code(errc::invalid_argument), {});
    return;
  }
  st->pending = std::move(data);
  st->has_pending = true;
  st->write_waiter = std::move(done);
  if (copy_ == st) copy_feed();  // otherwise fed once the server opens the COPY
}

void pipelined_connection::copy_finish(const std::shared_ptr<copy_state>& st,
                                       std::unique_ptr<completion<result>> done) {
  if (st->decided) {
    result r = std::move(st->res);
    if (st->ec && r.diag().client_message.empty() && r.diag().message.empty())
      r = client_error_result("the COPY ended: " + st->ec.message());
    st->res = client_error_result("the COPY's result was already delivered");
    done->complete(ex_, false, st->ec, std::move(r));
    return;
  }
  if (st->end_requested || st->write_waiter) {
    done->complete(ex_, false, make_error_code(errc::invalid_argument),
                   client_error_result("async_finish while another COPY operation is pending"));
    return;
  }
  st->finish_waiter = std::move(done);
  st->end_requested = true;
  st->caller_ended = true;
  if (copy_ == st) copy_feed();
}

void pipelined_connection::copy_abort(const std::shared_ptr<copy_state>& st, std::string reason,
                                      std::unique_ptr<completion<std::monostate>> done) {
  if (st->decided) {
    done->complete(ex_, false, lost_or_none(st->ec), {});
    return;
  }
  if (st->abort_waiter || st->finish_waiter) {
    // Already ending: a destructor's abort after async_finish changes nothing.
    done->complete(ex_, false, make_error_code(errc::invalid_argument), {});
    return;
  }
  st->abort_waiter = std::move(done);
  st->caller_ended = true;
  st->stopped = true;
  st->end_requested = true;
  st->abort_reason = reason.empty() ? std::string("aborted by the client") : std::move(reason);
  if (st->has_pending) {
    st->has_pending = false;
    st->pending = std::string();
    finish_with(st->write_waiter, ex_, make_error_code(errc::cancelled), std::monostate{});
  }
  auto req = st->req.lock();
  if (st->ph == copy_state::phase::queued && req && req->id != 0) {
    // Not started: removed from the queue, nothing was sent.
    core_.copy_stop(pool_clock::now(), req->id);
    apply();
    return;
  }
  if (copy_ == st) copy_feed();
}

void pipelined_connection::copy_next(const std::shared_ptr<copy_state>& st,
                                     std::unique_ptr<completion<std::string>> done) {
  if (st->next_waiter) {
    done->complete(ex_, false, make_error_code(errc::invalid_argument), {});
    return;
  }
  if (st->stopped) {
    done->complete(ex_, false, make_error_code(errc::cancelled), {});
    return;
  }
  if (!st->buffer.empty()) {
    std::string chunk;
    chunk.swap(st->buffer);
    done->complete(ex_, false, {}, std::move(chunk));
  } else if (st->decided) {
    const bool report = st->ec && !std::exchange(st->error_delivered, true);
    done->complete(ex_, false, report ? st->ec : std::error_code{}, {});
    return;
  } else {
    st->next_waiter = std::move(done);
  }
  if (copy_ == st && copy_paused_) {
    copy_paused_ = false;
    copy_pump();
    if (st_ == state::ready && !(copy_ && copy_paused_)) arm_read();
  }
}

void pipelined_connection::copy_cancel(const std::shared_ptr<copy_state>& st) {
  if (st->stopped || st->decided) {
    st->stopped = true;
    st->buffer = std::string();
    return;
  }
  st->stopped = true;
  finish_with(st->next_waiter, ex_, make_error_code(errc::cancelled), std::string());
  copy_stop_on_wire(*st, "the COPY was cancelled");
}

}  // namespace pgpipe::detail
