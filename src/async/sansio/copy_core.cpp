// copy_core (contract in copy_core.hpp).
//
// Why it decides what it does:
//  - libpq 15 refuses COPY in pipeline mode and leaves pipeline mode only
//    with nothing in flight, so a COPY runs alone between the shell's
//    start_solo and wire_done; the server speaks to copy_in only after
//    CopyDone/CopyFail, so there is nothing to read in in_data.
//  - A chunk goes to libpq only once the previous one is on the socket, and
//    write completes only then: a fast producer that awaits each write never
//    makes the client hold more than one chunk.
//  - An abort's purpose (nothing stays) is met by any end of the COPY, so an
//    abort succeeds unless the connection was lost (then the caller must
//    know that the lease is broken).
//  - A COPY that is answered early (a deadline) must not keep running on the
//    server: it is ended on the wire, and read to its end so that the lease
//    serves its next query.
//  - A statement of the other direction, or no COPY at all, is refused by
//    ending it at once: copy_in must not feed a COPY TO, copy_out must not
//    leave a COPY FROM waiting for data that never comes.
#include "async/sansio/copy_core.hpp"

#include "pq/copy_pieces.hpp"

#include <pgpipe/error.hpp>

#include <utility>

namespace pgpipe::detail {

namespace {

result client_message(std::string message) {
  diagnostics d;
  d.client_message = std::move(message);
  return result(std::move(d));
}

bool is_lost(const std::error_code& ec) {
  return ec == errc::connection_lost || ec == errc::not_sent || ec == errc::closed;
}

std::error_code lost_or_none(std::error_code ec) { return is_lost(ec) ? ec : std::error_code{}; }

}  // namespace

// ---- the caller -------------------------------------------------------------------

copy_reply copy_core::answer(std::error_code ec) {
  copy_reply r;
  r.answered = true;
  r.ec = ec;
  return r;
}

copy_reply copy_core::write(std::string data) {
  if (caller_ended_) return answer(make_error_code(errc::invalid_argument));
  if (decided_ || end_requested_) return answer(ec_ ? ec_ : make_error_code(errc::closed));
  if (write_waiting_ || finish_waiting_ || abort_waiting_) return answer(make_error_code(errc::invalid_argument));
  pending_ = std::move(data);
  has_pending_ = true;
  write_waiting_ = true;
  if (on_wire()) feed();  // otherwise fed once the server opens the COPY
  return {};
}

copy_reply copy_core::finish() {
  if (decided_) {
    copy_reply r = answer(ec_);
    r.res = std::move(res_);
    if (ec_ && r.res.diag().client_message.empty() && r.res.diag().message.empty())
      r.res = client_message("the COPY ended: " + ec_.message());
    res_ = client_message("the COPY's result was already delivered");
    return r;
  }
  if (end_requested_ || write_waiting_) {
    copy_reply r = answer(make_error_code(errc::invalid_argument));
    r.res = client_message("async_finish while another COPY operation is pending");
    return r;
  }
  finish_waiting_ = true;
  end_requested_ = true;
  caller_ended_ = true;
  if (on_wire()) feed();
  return {};
}

copy_reply copy_core::abort(std::string reason) {
  if (decided_) return answer(lost_or_none(ec_));
  // Already ending: a destructor's abort after async_finish changes nothing.
  if (abort_waiting_ || finish_waiting_) return answer(make_error_code(errc::invalid_argument));
  abort_waiting_ = true;
  caller_ended_ = true;
  stopped_ = true;
  stopped_by_client_ = true;
  end_requested_ = true;
  end_reason_ = reason.empty() ? std::string("aborted by the client") : std::move(reason);
  if (has_pending_) {
    drop_pending();
    if (write_waiting_) {
      write_waiting_ = false;
      push(copy_action::kind::complete_write, make_error_code(errc::cancelled));
    }
  }
  if (phase_ == copy_phase::queued) {
    // Not started: removed from the queue, nothing is sent.
    push(copy_action::kind::stop_request);
    return {};
  }
  if (on_wire()) feed();
  return {};
}

copy_reply copy_core::next() {
  if (next_waiting_) return answer(make_error_code(errc::invalid_argument));
  if (cancelled_) return answer(make_error_code(errc::cancelled));
  copy_reply r;
  if (!buffer_.empty()) {
    r = answer({});
    r.data.swap(buffer_);
  } else if (decided_) {
    const bool report = ec_ && !std::exchange(error_delivered_, true);
    return answer(report ? ec_ : std::error_code{});
  } else {
    next_waiting_ = true;
  }
  if (paused_ && on_wire()) {  // the reader caught up: read the socket again
    paused_ = false;
    push(copy_action::kind::read);
  }
  return r;
}

void copy_core::cancel() {
  const bool running = !stopped_ && !decided_;
  cancelled_ = true;
  stopped_ = true;
  if (running) stopped_by_client_ = true;
  if (!running) {
    buffer_ = std::string();
    return;
  }
  if (next_waiting_) {
    next_waiting_ = false;
    push(copy_action::kind::complete_next, make_error_code(errc::cancelled));
  }
  stop_on_wire("the COPY was cancelled");
}

// ---- the wire ---------------------------------------------------------------------

void copy_core::on_started() {
  phase_ = copy_phase::starting;
  paused_ = false;
}

copy_read copy_core::next_read() {
  switch (phase_) {
    case copy_phase::queued:
    case copy_phase::in_data:  // copy_in: the server speaks only after CopyDone/CopyFail
    case copy_phase::over:
      return copy_read::nothing;
    case copy_phase::out_data:
      if (!stopped_ && buffer_.size() >= copy_chunk_bytes) {
        paused_ = true;  // the reader is behind: the socket waits
        deliver();
        return copy_read::nothing;
      }
      return copy_read::data;
    case copy_phase::starting:
    case copy_phase::ending:
      return copy_read::result;
  }
  return copy_read::nothing;
}

void copy_core::on_data(std::string_view bytes) {
  if (!stopped_ && !wrong_direction_) buffer_.append(bytes);
}

void copy_core::on_data_wait() { deliver(); }

void copy_core::on_data_end() {
  phase_ = copy_phase::ending;  // the verdict follows
  deliver();
}

void copy_core::on_data_failed() { push_break("reading COPY data failed", true); }

copy_verdict copy_core::on_result(copy_result r) {
  copy_verdict v;
  switch (r) {
    case copy_result::copy_in:
      if (phase_ == copy_phase::starting && !out_) {
        phase_ = copy_phase::in_data;
        feed();  // a chunk (or the end) may be waiting already
        return v;
      }
      // The other direction: end it at once, nothing is copied.
      wrong_direction_ = wrong_direction_ || out_;
      phase_ = copy_phase::ending;
      push_put_end("copy_out needs COPY ... TO STDOUT", true);
      return v;
    case copy_result::copy_out:
      // copy_in given a COPY TO: its rows are read and dropped.
      if (!out_) wrong_direction_ = true;
      phase_ = copy_phase::out_data;
      return v;
    case copy_result::copy_both:
      push_break("COPY BOTH (replication) is not supported", false);
      return v;
    case copy_result::error:
    case copy_result::session_fatal:
      if (!kept_error_) v.keep = copy_keep::as_error;
      kept_error_ = true;
      if (r == copy_result::session_fatal) {
        v.ends_session = true;
      } else {
        phase_ = copy_phase::ending;
      }
      return v;
    case copy_result::other:
      // COMMAND_OK "COPY n" ends a COPY; anything else in its place means
      // the statement was not a COPY of this direction.
      if (phase_ == copy_phase::starting) wrong_direction_ = true;
      if (!kept_ok_) v.keep = copy_keep::as_ok;
      kept_ok_ = true;
      phase_ = copy_phase::ending;
      return v;
  }
  return v;
}

void copy_core::on_results_done() {
  phase_ = copy_phase::over;
  paused_ = false;
  flush_pending_ = false;
  copy_action a(copy_action::kind::wire_done);
  a.failed = kept_error_ || wrong_direction_;
  push(std::move(a));
}

void copy_core::on_put_data(copy_put r) {
  switch (r) {
    case copy_put::failed:
      push_break("sending COPY data failed", true);
      return;
    case copy_put::full:  // libpq's buffer is full: wait until the socket takes it
      flush_pending_ = true;
      return;
    case copy_put::sent:
      pending_sent_ += piece_in_flight_;
      // The client holds no copy once libpq has the last piece.
      if (pending_sent_ >= pending_.size()) drop_pending();
      push(copy_action::kind::flush);
      return;
  }
}

void copy_core::on_put_end(copy_put r) {
  const bool wrong = std::exchange(end_wrong_direction_, false);
  if (r == copy_put::failed) {
    push_break("ending COPY failed", true);
    return;
  }
  if (wrong) {
    // Ending a wrong-direction COPY: the results that follow say it is over.
    end_sent_ = true;
    push(copy_action::kind::flush);
    return;
  }
  if (r == copy_put::full) {
    flush_pending_ = true;
    return;
  }
  end_sent_ = true;
  phase_ = copy_phase::ending;
  flush_after_end_ = true;
  push(copy_action::kind::flush);
}

void copy_core::on_flush(copy_flushed r) {
  const bool after_end = std::exchange(flush_after_end_, false);
  if (r == copy_flushed::failed) {
    push_break("flush failed during COPY", true);
    return;
  }
  flush_pending_ = r == copy_flushed::pending;
  if (after_end) {
    push(copy_action::kind::read);  // the verdict follows the end
    return;
  }
  if (!flush_pending_) feed();
}

// ---- the outcome ------------------------------------------------------------------

void copy_core::on_outcome(std::error_code ec, result r, bool connection_ready) {
  if (decided_) return;
  decided_ = true;
  if (wrong_direction_ && !is_lost(ec)) {
    ec = make_error_code(errc::invalid_argument);
    r = client_message(out_ ? "copy_out needs COPY ... TO STDOUT; nothing was copied"
                            : "copy_in needs COPY ... FROM STDIN; nothing was copied");
  }
  if (!ec) rows_ = r.affected_rows();
  ec_ = ec;
  // Answered before the COPY ended on the wire (a timeout): end it there too.
  if (ec && connection_ready && on_wire()) stop_on_wire("COPY ended: " + ec.message());
  if (!out_) {
    drop_pending();
    if (write_waiting_) {
      write_waiting_ = false;
      push(copy_action::kind::complete_write, ec ? ec : make_error_code(errc::closed));
    }
    if (abort_waiting_) {
      abort_waiting_ = false;
      push(copy_action::kind::complete_abort, lost_or_none(ec));
    }
    if (finish_waiting_) {
      finish_waiting_ = false;
      copy_action a(copy_action::kind::complete_finish);
      a.ec = ec;
      a.res = std::move(r);
      push(std::move(a));
    } else {
      res_ = std::move(r);  // for a later finish()
    }
    return;
  }
  if (cancelled_) return;  // cancel() answered the reader already
  if (next_waiting_ && !buffer_.empty()) {  // the rows first; the end on the next call
    deliver();
    return;
  }
  if (next_waiting_) {
    next_waiting_ = false;
    error_delivered_ = static_cast<bool>(ec);
    push(copy_action::kind::complete_next, ec);
  }
}

void copy_core::take_actions(std::vector<copy_action>& out) {
  out.clear();
  out.swap(actions_);
}

// ---- helpers ----------------------------------------------------------------------

void copy_core::push_break(std::string reason, bool libpq_detail) {
  copy_action a(copy_action::kind::break_connection);
  a.text = std::move(reason);
  a.libpq_detail = libpq_detail;
  push(std::move(a));
}

void copy_core::push_put_end(std::string text, bool wrong_direction) {
  end_wrong_direction_ = wrong_direction;
  copy_action a(copy_action::kind::put_end);
  a.text = std::move(text);
  push(std::move(a));
}

void copy_core::feed() {
  if (phase_ != copy_phase::in_data || flush_pending_) return;
  if (has_pending_) {
    // One piece at a time (pq/copy_pieces.hpp: libpq's int), the next once
    // this one is on the socket, as for whole chunks.
    const copy_piece piece = copy_piece_at(pending_.size(), pending_sent_);
    copy_action a(copy_action::kind::put_data);
    a.data = std::string_view(pending_).substr(piece.offset, static_cast<std::size_t>(piece.length));
    piece_in_flight_ = static_cast<std::size_t>(piece.length);
    push(std::move(a));
    return;
  }
  // The chunk is on the socket: the producer may send the next one.
  if (write_waiting_) {
    write_waiting_ = false;
    push(copy_action::kind::complete_write);
  }
  if (end_requested_ && !end_sent_) push_put_end(end_reason_, false);
}

void copy_core::deliver() {
  if (!next_waiting_ || buffer_.empty()) return;
  next_waiting_ = false;
  copy_action a(copy_action::kind::complete_next);
  a.text.swap(buffer_);
  push(std::move(a));
}

void copy_core::stop_on_wire(const std::string& reason) {
  stopped_ = true;
  if (!out_) {
    // CopyFail ends it (even where finish asked for CopyDone, when that is
    // not sent yet: the caller is told the COPY failed, so nothing may stay);
    // a chunk not handed over yet is dropped.
    drop_pending();
    end_requested_ = true;
    if (end_reason_.empty()) end_reason_ = reason;
    if (on_wire()) feed();
    return;
  }
  buffer_ = std::string();
  push(copy_action::kind::stop_request);
  if (paused_ && on_wire()) {
    paused_ = false;
    push(copy_action::kind::read);
  }
}

}  // namespace pgpipe::detail
