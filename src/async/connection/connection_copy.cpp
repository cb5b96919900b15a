// pipelined_connection: COPY on a lease (contract in <pgpipe/async_copy.hpp>).
//
// Every decision is copy_core's (async/sansio/copy_core.hpp): this file only
// talks to libpq and the socket. pipeline_core holds a COPY until every query
// before it on the lease was answered, then says start_solo and sends nothing
// else until on_solo_end. Here the connection leaves pipeline mode, sends the
// COPY (extended protocol: one statement, never a string of several), carries
// out copy_core's actions with libpq's nonblocking COPY calls, reports
// libpq's answers back, and enters pipeline mode again once copy_core says
// the COPY is over on the wire (wire_done).
//
// The PQflush rule: while libpq's buffer waits for the socket, input is
// still consumed, so a server that talks back never deadlocks us.
#include "async/connection/pipelined_connection.hpp"

#include "async/connection/copy_state.hpp"
#include "pq/copy_pieces.hpp"
#include "pq/libpq_failure.hpp"

#include <string_view>
#include <utility>
#include <vector>

namespace pgpipe::detail {

namespace {

template <class T>
void finish_with(std::unique_ptr<completion<T>>& w, const boost::asio::any_io_executor& ex, std::error_code ec,
                 T value) {
  if (!w) return;
  auto done = std::move(w);
  done->complete(ex, false, ec, std::move(value));
}

// A caller's operation: answered at once, or its handler kept for the
// complete_* action that answers it later. Either way the shell then carries
// out what the operation queued (a refusal queues nothing).
template <class T>
void answer_or_keep(const boost::asio::any_io_executor& ex, bool answered, std::error_code ec, T value,
                    std::unique_ptr<completion<T>> done, std::unique_ptr<completion<T>>& waiter) {
  if (answered) {
    done->complete(ex, false, ec, std::move(value));
    return;
  }
  waiter = std::move(done);
}

copy_put put_answer(int r) { return r < 0 ? copy_put::failed : r == 0 ? copy_put::full : copy_put::sent; }

copy_result classify(PGresult* raw) {
  switch (PQresultStatus(raw)) {
    case PGRES_COPY_IN:
      return copy_result::copy_in;
    case PGRES_COPY_OUT:
      return copy_result::copy_out;
    case PGRES_COPY_BOTH:
      return copy_result::copy_both;
    case PGRES_FATAL_ERROR:
    case PGRES_BAD_RESPONSE:
    case PGRES_NONFATAL_ERROR:
      return is_session_fatal(raw) ? copy_result::session_fatal : copy_result::error;
    default:
      return copy_result::other;
  }
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
  st->core.on_started();
  if (!PQsendQueryParams(pg_, req->spec.sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0)) {
    core_.on_broken("sending COPY failed: " + pq_error());
    return;
  }
  copy_flush();
  arm_read();
}

void pipelined_connection::copy_flush() {
  if (st_ != state::ready || !copy_) return;
  auto st = copy_;
  const int r = PQflush(pg_);
  st->core.on_flush(r < 0 ? copy_flushed::failed : r == 1 ? copy_flushed::pending : copy_flushed::done);
  copy_apply(*st);
}

void pipelined_connection::copy_pump() {
  while (copy_ && st_ == state::ready && !core_.is_broken()) {
    auto st = copy_;
    auto& cc = st->core;
    switch (cc.next_read()) {
      case copy_read::nothing:
        copy_apply(*st);  // a pause hands the buffered rows to the reader
        return;
      case copy_read::data: {
        int n = 0;
        do {  // one row per call: the tight loop of a large copy_out
          char* buf = nullptr;
          n = PQgetCopyData(pg_, &buf, 1);
          if (n <= 0) break;
          cc.on_data(std::string_view(buf, static_cast<std::size_t>(n)));
          PQfreemem(buf);
        } while (cc.next_read() == copy_read::data);
        if (n > 0) {  // paused: the reader is behind
          copy_apply(*st);
          return;
        }
        if (n == 0) {  // nothing more until the socket is readable
          cc.on_data_wait();
          copy_apply(*st);
          return;
        }
        if (n == -1) {
          cc.on_data_end();
          copy_apply(*st);
          continue;
        }
        cc.on_data_failed();
        copy_apply(*st);
        return;
      }
      case copy_read::result: {
        if (PQisBusy(pg_)) return;
        PGresult* raw = PQgetResult(pg_);
        if (!raw) {
          cc.on_results_done();
          copy_apply(*st);
          return;
        }
        std::unique_ptr<PGresult, pgresult_deleter> res(raw);
        const copy_verdict v = cc.on_result(classify(raw));
        std::string why;
        if (v.ends_session) why = "server ended the session: " + diagnostics_of(raw).to_string();
        if (auto req = st->req.lock()) {
          if (v.keep == copy_keep::as_error) req->err = std::move(res);
          if (v.keep == copy_keep::as_ok) req->ok = std::move(res);
        }
        if (v.ends_session) {
          core_.on_session_ended(why);
          apply();
          return;
        }
        copy_apply(*st);
        continue;
      }
    }
  }
}

void pipelined_connection::copy_done_on_wire(bool failed) {
  auto st = std::exchange(copy_, nullptr);
  flush_pending_ = false;
  if (PQenterPipelineMode(pg_) != 1) {
    core_.on_broken("cannot enter pipeline mode after COPY: " + pq_error());
    apply();
    return;
  }
  core_.on_solo_end(pool_clock::now(), failed);
  apply();  // completes the COPY (unless it was answered early) and writes what waited behind it
  if (st_ == state::ready) arm_read();
}

void pipelined_connection::copy_outcome(copy_state& st, std::error_code ec, result r) {
  st.core.on_outcome(ec, std::move(r), st_ == state::ready);
  st.rows.store(st.core.rows(), std::memory_order_release);
  copy_apply(st);
}

// ---- copy_core's actions ----------------------------------------------------------

void pipelined_connection::copy_apply(copy_state& st) {
  // An action may answer libpq or complete the COPY's request, whose
  // actions are carried out in a nested call: that one takes its own buffer
  // (the spare is moved out), and the buffers' capacity is reused.
  std::vector<copy_action> actions = std::move(copy_actions_spare_);
  for (st.core.take_actions(actions); !actions.empty(); st.core.take_actions(actions))
    for (auto& a : actions) copy_carry_out(st, a);
  copy_actions_spare_ = std::move(actions);
  if (st_ == state::ready && copy_.get() == &st) {
    flush_pending_ = st.core.flush_pending();
    if (flush_pending_) {  // wait for the socket, consuming input meanwhile
      arm_write();
      arm_read();
    }
  }
}

void pipelined_connection::copy_carry_out(copy_state& st, copy_action& a) {
  using kind = copy_action::kind;
  // The wire is this COPY's only while it runs on a live connection.
  const bool wire = st_ == state::ready && copy_.get() == &st;
  switch (a.what) {
    case kind::put_data:
      if (!wire) return;
      // copy_core hands libpq at most copy_piece_max bytes at a time, which
      // fits its int; anything larger would be cut, so it is refused.
      if (a.data.size() > copy_piece_max) {
        break_connection("internal error: a COPY piece larger than libpq takes");
        return;
      }
      st.core.on_put_data(put_answer(PQputCopyData(pg_, a.data.data(), static_cast<int>(a.data.size()))));
      copy_apply(st);
      return;
    case kind::put_end:
      if (!wire) return;
      st.core.on_put_end(put_answer(PQputCopyEnd(pg_, a.text.empty() ? nullptr : a.text.c_str())));
      copy_apply(st);
      return;
    case kind::flush:
      if (wire) copy_flush();
      return;
    case kind::read:
      if (!wire) return;
      copy_pump();
      if (st_ == state::ready && !(copy_ && copy_->core.paused())) arm_read();
      return;
    case kind::stop_request: {
      auto req = st.req.lock();
      if (req && req->id != 0) {  // otherwise still on its way: it starts stopped
        core_.solo_stop(pool_clock::now(), req->id);
        apply();
      }
      return;
    }
    case kind::break_connection:
      break_connection(a.libpq_detail ? a.text + ": " + pq_error() : a.text);
      return;
    case kind::wire_done:
      copy_done_on_wire(a.failed);
      return;
    case kind::complete_write:
      finish_with(st.write_waiter, ex_, a.ec, std::monostate{});
      return;
    case kind::complete_finish:
      finish_with(st.finish_waiter, ex_, a.ec, std::move(a.res));
      return;
    case kind::complete_abort:
      finish_with(st.abort_waiter, ex_, a.ec, std::monostate{});
      return;
    case kind::complete_next:
      finish_with(st.next_waiter, ex_, a.ec, std::move(a.text));
      return;
  }
}

// ---- the caller's operations ------------------------------------------------------

void pipelined_connection::copy_write(const std::shared_ptr<copy_state>& st, std::string data,
                                      std::unique_ptr<completion<std::monostate>> done) {
  auto reply = st->core.write(std::move(data));
  answer_or_keep(ex_, reply.answered, reply.ec, std::monostate{}, std::move(done), st->write_waiter);
  copy_apply(*st);
}

void pipelined_connection::copy_finish(const std::shared_ptr<copy_state>& st,
                                       std::unique_ptr<completion<result>> done) {
  auto reply = st->core.finish();
  answer_or_keep(ex_, reply.answered, reply.ec, std::move(reply.res), std::move(done), st->finish_waiter);
  copy_apply(*st);
}

void pipelined_connection::copy_abort(const std::shared_ptr<copy_state>& st, std::string reason,
                                      std::unique_ptr<completion<std::monostate>> done) {
  auto reply = st->core.abort(std::move(reason));
  answer_or_keep(ex_, reply.answered, reply.ec, std::monostate{}, std::move(done), st->abort_waiter);
  copy_apply(*st);
}

void pipelined_connection::copy_next(const std::shared_ptr<copy_state>& st,
                                     std::unique_ptr<completion<std::string>> done) {
  auto reply = st->core.next();
  answer_or_keep(ex_, reply.answered, reply.ec, std::move(reply.data), std::move(done), st->next_waiter);
  copy_apply(*st);  // a paused copy_out reads again
}

void pipelined_connection::copy_cancel(const std::shared_ptr<copy_state>& st) {
  st->core.cancel();
  copy_apply(*st);
}

}  // namespace pgpipe::detail
