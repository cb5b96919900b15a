// pipelined_connection: async_row_stream delivery and backpressure (chunking
// rules in async/connection/stream_chunks.hpp).
#include "async/connection/pipelined_connection.hpp"

#include "async/connection/stream_chunks.hpp"

namespace pgpipe::detail {

void pipelined_connection::stream_row(const std::shared_ptr<stream_state>& sp, PGresult* row) {
  if (add_stream_row(*sp, row) && !sp->deliver_queued) {
    sp->deliver_queued = true;
    streams_to_deliver_.push_back(sp);
  }
}

void pipelined_connection::stream_push(stream_state& st, std::error_code ec, result r, bool final) {
  if (st.ended) return;
  if (final) st.ended = true;
  if (st.abandoned) return;
  if (st.waiter && st.chunks.empty()) {
    auto w = std::move(st.waiter);
    w->complete(ex_, false, ec, std::move(r));
    return;
  }
  st.chunks.emplace_back(ec, std::move(r));
  st.chunk_bytes.push_back(0);
  st.tail_open = false;
}

void pipelined_connection::stream_deliver(stream_state& st) {
  if (!st.waiter || st.chunks.empty() || st.abandoned) return;
  auto [ec, r] = pop_stream_chunk(st);
  auto w = std::move(st.waiter);
  w->complete(ex_, false, ec, std::move(r));
}

void pipelined_connection::resume_if_paused() {
  if (!paused_ || st_ != state::ready) return;
  if (auto h = core_.head()) {
    auto req = lookup(*h);
    if (const auto* sp = req ? req->stream_of() : nullptr) {
      if (!stream_may_resume(**sp)) return;
    }
  }
  paused_ = false;
  drain_results();
  if (st_ != state::ready || paused_) return;
  if (flush_pending_) flush();
  arm_read();
}

void pipelined_connection::stream_next(const std::shared_ptr<stream_state>& st,
                                       std::unique_ptr<completion<result>> done) {
  if (st->waiter) {
    done->complete(ex_, false, make_error_code(errc::invalid_argument),
                   client_error_result("async_row_stream::async_next is already pending"));
    return;
  }
  if (st->abandoned) {
    done->complete(ex_, false, make_error_code(errc::cancelled), client_error_result("the stream was cancelled"));
    return;
  }
  if (!st->chunks.empty()) {
    auto [ec, r] = pop_stream_chunk(*st);
    done->complete(ex_, false, ec, std::move(r));
    resume_if_paused();
    return;
  }
  if (st->ended) {
    done->complete(ex_, false, {}, result());  // past the end: the end again
    return;
  }
  st->waiter = std::move(done);
  resume_if_paused();
}

void pipelined_connection::stream_cancel(const std::shared_ptr<stream_state>& st) {
  if (st->abandoned) return;
  st->abandoned = true;
  clear_stream_chunks(*st);
  if (st->waiter) {
    auto w = std::move(st->waiter);
    w->complete(ex_, false, make_error_code(errc::cancelled), client_error_result("the stream was cancelled"));
  }
  auto req = st->req.lock();
  if (req && !req->completed.load(std::memory_order_acquire) && req->id != 0) {
    // Removed if not written; if written, the server is asked to stop (when
    // the signal cannot hit another query) and the rest is discarded.
    core_.stream_abandoned(pool_clock::now(), req->id);
    apply();
  }
  resume_if_paused();
}

}  // namespace pgpipe::detail
