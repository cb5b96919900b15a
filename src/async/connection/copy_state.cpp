// copy_state: a COPY on a lease, carried out with libpq (contract in
// <pgpipe/async_copy.hpp>, the shape in copy_state.hpp).
//
// Every decision is copy_core's (async/sansio/copy_core.hpp): this file only
// talks to libpq. pipeline_core holds a COPY until every query before it on
// the lease was answered, then says start_solo and sends nothing else until
// on_solo_end. The shell leaves pipeline mode and hands the wire over; here
// the COPY is sent, copy_core's actions are carried out with libpq's
// nonblocking COPY calls and libpq's answers reported back, and the wire is
// given back once copy_core says the COPY is over on it (wire_done).
//
// The PQflush rule: while libpq's buffer waits for the socket, input is
// still consumed, so a server that talks back never deadlocks us.
#include "async/connection/copy_state.hpp"

#include "async/connection/pipelined_connection.hpp"
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
// complete_* action that answers it later. Either way the COPY then carries
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

solo_host& copy_state::host() const { return *conn; }

bool copy_state::runs(const query_request& request) const noexcept {
  auto r = req.lock();
  return r.get() == &request;
}

// ---- the COPY on the wire -------------------------------------------------------

void copy_state::start(solo_host& host, query_request& request) {
  core.on_started();
  if (!PQsendQueryParams(host.solo_conn(), request.spec.sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0)) {
    host.solo_core().on_broken("sending COPY failed: " + host.solo_pq_error());
    return;
  }
  flush(host);
  host.solo_watch_read();
}

void copy_state::flush(solo_host& host) {
  if (!host.solo_ready() || !host.solo_holds_wire(*this)) return;
  const int r = PQflush(host.solo_conn());
  core.on_flush(r < 0 ? copy_flushed::failed : r == 1 ? copy_flushed::pending : copy_flushed::done);
  apply(host);
}

void copy_state::pump(solo_host& host) {
  while (host.solo_holds_wire(*this) && host.solo_ready() && !host.solo_core().is_broken()) {
    PGconn* pg = host.solo_conn();
    switch (core.next_read()) {
      case copy_read::nothing:
        apply(host);  // a pause hands the buffered rows to the reader
        return;
      case copy_read::data: {
        int n = 0;
        do {  // one row per call: the tight loop of a large copy_out
          char* buf = nullptr;
          n = PQgetCopyData(pg, &buf, 1);
          if (n <= 0) break;
          core.on_data(std::string_view(buf, static_cast<std::size_t>(n)));
          PQfreemem(buf);
        } while (core.next_read() == copy_read::data);
        if (n > 0) {  // paused: the reader is behind
          apply(host);
          return;
        }
        if (n == 0) {  // nothing more until the socket is readable
          core.on_data_wait();
          apply(host);
          return;
        }
        if (n == -1) {
          core.on_data_end();
          apply(host);
          continue;
        }
        core.on_data_failed();
        apply(host);
        return;
      }
      case copy_read::result: {
        if (PQisBusy(pg)) return;
        PGresult* raw = PQgetResult(pg);
        if (!raw) {
          core.on_results_done();
          apply(host);
          return;
        }
        std::unique_ptr<PGresult, pgresult_deleter> res(raw);
        const copy_verdict v = core.on_result(classify(raw));
        std::string why;
        if (v.ends_session) why = "server ended the session: " + diagnostics_of(raw).to_string();
        if (auto r = req.lock()) {
          if (v.keep == copy_keep::as_error) r->err = std::move(res);
          if (v.keep == copy_keep::as_ok) r->ok = std::move(res);
        }
        if (v.ends_session) {
          host.solo_core().on_session_ended(why);
          host.solo_apply();
          return;
        }
        apply(host);
        continue;
      }
    }
  }
}

void copy_state::outcome(solo_host& host, std::error_code ec, result r) {
  core.on_outcome(ec, std::move(r), host.solo_ready());
  rows.store(core.rows(), std::memory_order_release);
  apply(host);
}

// ---- copy_core's actions ----------------------------------------------------------

void copy_state::apply(solo_host& host) {
  // An action may answer libpq or complete the COPY's request, whose
  // actions are carried out in a nested call: that one takes its own buffer
  // (the spare is moved out), and the buffers' capacity is reused.
  std::vector<copy_action> actions = std::move(actions_spare_);
  for (core.take_actions(actions); !actions.empty(); core.take_actions(actions))
    for (auto& a : actions) carry_out(host, a);
  actions_spare_ = std::move(actions);
  if (host.solo_ready() && host.solo_holds_wire(*this)) {
    const bool pending = core.flush_pending();
    host.solo_flush_pending(pending);
    if (pending) {  // wait for the socket, consuming input meanwhile
      host.solo_watch_write();
      host.solo_watch_read();
    }
  }
}

void copy_state::carry_out(solo_host& host, copy_action& a) {
  using kind = copy_action::kind;
  // The wire is this COPY's only while it runs on a live connection.
  const bool wire = host.solo_ready() && host.solo_holds_wire(*this);
  switch (a.what) {
    case kind::put_data:
      if (!wire) return;
      // copy_core hands libpq at most copy_piece_max bytes at a time, which
      // fits its int; anything larger would be cut, so it is refused.
      if (a.data.size() > copy_piece_max) {
        host.solo_break("internal error: a COPY piece larger than libpq takes");
        return;
      }
      core.on_put_data(
          put_answer(PQputCopyData(host.solo_conn(), a.data.data(), static_cast<int>(a.data.size()))));
      apply(host);
      return;
    case kind::put_end:
      if (!wire) return;
      core.on_put_end(put_answer(PQputCopyEnd(host.solo_conn(), a.text.empty() ? nullptr : a.text.c_str())));
      apply(host);
      return;
    case kind::flush:
      if (wire) flush(host);
      return;
    case kind::read:
      if (!wire) return;
      pump(host);
      if (host.solo_ready() && !(host.solo_holds_wire(*this) && core.paused())) host.solo_watch_read();
      return;
    case kind::stop_request: {
      auto r = req.lock();
      if (r && r->id != 0) {  // otherwise still on its way: it starts stopped
        host.solo_core().solo_stop(pool_clock::now(), r->id);
        host.solo_apply();
      }
      return;
    }
    case kind::break_connection:
      host.solo_break(a.libpq_detail ? a.text + ": " + host.solo_pq_error() : a.text);
      return;
    case kind::wire_done:
      if (host.solo_leave()) host.solo_end(a.failed);  // completes the COPY (unless it was answered early)
      return;
    case kind::complete_write:
      finish_with(write_waiter, host.solo_executor(), a.ec, std::monostate{});
      return;
    case kind::complete_finish:
      finish_with(finish_waiter, host.solo_executor(), a.ec, std::move(a.res));
      return;
    case kind::complete_abort:
      finish_with(abort_waiter, host.solo_executor(), a.ec, std::monostate{});
      return;
    case kind::complete_next:
      finish_with(next_waiter, host.solo_executor(), a.ec, std::move(a.text));
      return;
  }
}

// ---- the caller's operations ------------------------------------------------------

void copy_state::write(std::string data, std::unique_ptr<completion<std::monostate>> done) {
  auto& h = host();
  auto reply = core.write(std::move(data));
  answer_or_keep(h.solo_executor(), reply.answered, reply.ec, std::monostate{}, std::move(done), write_waiter);
  apply(h);
}

void copy_state::finish(std::unique_ptr<completion<result>> done) {
  auto& h = host();
  auto reply = core.finish();
  answer_or_keep(h.solo_executor(), reply.answered, reply.ec, std::move(reply.res), std::move(done), finish_waiter);
  apply(h);
}

void copy_state::abort(std::string reason, std::unique_ptr<completion<std::monostate>> done) {
  auto& h = host();
  auto reply = core.abort(std::move(reason));
  answer_or_keep(h.solo_executor(), reply.answered, reply.ec, std::monostate{}, std::move(done), abort_waiter);
  apply(h);
}

void copy_state::next(std::unique_ptr<completion<std::string>> done) {
  auto& h = host();
  auto reply = core.next();
  answer_or_keep(h.solo_executor(), reply.answered, reply.ec, std::move(reply.data), std::move(done), next_waiter);
  apply(h);  // a paused copy_out reads again
}

void copy_state::cancel() {
  core.cancel();
  apply(host());
}

}  // namespace pgpipe::detail
