// One query as a connection carries it: its FIFO entry (waiting -> written
// -> done) and the sink its outcome goes to: a caller's handler, a row
// stream or a COPY's handle. Whoever builds it fills it, then hands it to
// the connection; whatever the layers above keep about a query before that
// (where it waits, how to withdraw it) they keep apart.
#pragma once

#include "core/metrics/query_metrics.hpp"
#include "core/pool/pool_types.hpp"

#include <pgpipe/detail/async_glue.hpp>
#include <pgpipe/result.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace pgpipe::detail {

class pipelined_connection;
struct query_request;
struct copy_state;

/// A lease's async_row_stream: chunks of a single-row-mode result on their way to
/// the caller. Everything but `conn` is touched only on conn's executor.
struct stream_state {
  std::shared_ptr<pipelined_connection> conn;
  std::weak_ptr<query_request> req;
  /// Each chunk holds every row received since the previous one, up to a
  /// bound (rows and bytes); the last item is the end marker or the error.
  std::deque<std::pair<std::error_code, result>> chunks;
  std::deque<std::size_t> chunk_bytes;  ///< field bytes per chunk, in step with chunks
  bool tail_open = false;         ///< the last chunk takes more rows
  std::size_t tail_bytes = 0;     ///< field bytes in the last chunk
  std::size_t buffered_rows = 0;  ///< rows in chunks, all together
  std::size_t buffered_bytes = 0;
  bool deliver_queued = false;    ///< listed for delivery at the end of the batch
  bool ended = false;      ///< the final item (end marker or error) was produced
  bool abandoned = false;  ///< cancel(): drop everything from now on
  std::unique_ptr<completion<result>> waiter;
};

/// A plain query: the caller's handler gets the result.
struct result_sink {
  std::unique_ptr<completion<result>> done;
};
/// lease::stream(): rows go to the stream's reader, then its end or error.
struct stream_sink {
  std::shared_ptr<stream_state> stream;
};
/// lease::copy_in()/copy_out(): the outcome goes to the COPY's handle
/// (async/connection/copy_state.hpp).
struct copy_sink {
  std::shared_ptr<copy_state> copy;
};
/// async_lease::async_execute_script(): the text runs alone outside pipeline
/// mode (simple protocol, several statements); the caller's handler gets the
/// last statement's result or the first error (script_operation.hpp).
struct script_sink {
  std::unique_ptr<completion<result>> done;
};
/// Where a request's outcome goes. Fixed before the request is shared; the
/// connection picks each path (what it tells pipeline_core, how it reads the
/// results, how it completes) by the sink's type.
using request_sink = std::variant<result_sink, stream_sink, copy_sink, script_sink>;

/// Each field has one owner at a time. The builder (a caller's path, or the
/// connection for its own statements) fills the first group and hands
/// the request to the connection's executor; from then on that group is
/// read-only and the connection alone touches the second. `completed` is the
/// one field threads race for (a result, a cancel, a timeout): its winner
/// takes the sink's handler.
struct query_request {
  /// Set by whoever completes the request first (result, error, cancel,
  /// timeout); the loser of a race does nothing. This is what makes every
  /// request complete exactly once.
  std::atomic<bool> completed{false};

  // Fixed by the builder before the request is handed to a connection.
  query_spec spec;
  request_sink sink;
  time_point deadline = time_point::max();
  time_point submitted{};  ///< the caller's call (stats histograms, the observer)
  /// Spent waiting for pool capacity (set at grant; stats, the observer).
  std::chrono::nanoseconds waited{0};
  /// Holds one shared unit of capacity on the connection it is handed to,
  /// given back (connection_owner::conn_release) when the connection is done
  /// with it, even if the caller was answered earlier.
  bool pooled = false;
  /// Runs on an exclusive lease: PQcancel may be used to cancel it.
  bool on_lease = false;
  /// Internal (health check, rollback): never prepared, not counted in stats.
  bool internal = false;
  /// Where a caller's request is counted when it ends (stats(), the query
  /// observer: async/connection/query_meter.hpp), wired in when it is built;
  /// null for internal requests. Whoever completes the request counts it
  /// through this, never through the pool. Outlives every request a
  /// connection holds: connection_config::metrics keeps it.
  query_metrics* metrics = nullptr;
  /// Lease: the next request shares this one's Sync (pipeline_core "Chains").
  bool chained = false;
  /// Lease: a transaction helper's BEGIN, and the work that runs only
  /// inside it (pipeline_core "Units").
  bool opens_unit = false;
  bool in_unit = false;
  /// Lease: once written, a cancel at the deadline, whose answer decides the
  /// outcome (pipeline_core "Written chains past their deadline").
  bool cancel_at_deadline = false;

  // Touched only on the connection's executor.
  /// pipeline_core's id once enqueued (0: still on its way to the connection).
  std::uint64_t id = 0;
  // The core borrows spec.sql and spec.params.types as the request's
  // statement-cache key (sql_key) and keeps this request alive while it
  // does: neither may change once enqueued.
  /// The results pipeline_core told the connection to keep.
  std::unique_ptr<PGresult, pgresult_deleter> ok;
  std::unique_ptr<PGresult, pgresult_deleter> err;

  /// What query_observer::on_start was told and returned (the connection's
  /// slot and backend, when, its user pointer); empty when it was not called
  /// (no observer installed, or the request never reached a connection).
  std::optional<observed_start> start_seen;

  /// A plain query answering `done`.
  void set_handler(std::unique_ptr<completion<result>> done) { sink.emplace<result_sink>(result_sink{std::move(done)}); }
  /// The row stream this request feeds, or null when it feeds none.
  const std::shared_ptr<stream_state>* stream_of() const noexcept {
    const auto* s = std::get_if<stream_sink>(&sink);
    return s != nullptr ? &s->stream : nullptr;
  }

  /// Whether the completion runs the query again after this failed attempt
  /// (completion::reruns). Asked once per request, before its end is
  /// recorded: a read router decides where the re-run goes there.
  bool reruns(const std::error_code& ec) const {
    const auto* s = std::get_if<result_sink>(&sink);
    return ec && s != nullptr && s->done && s->done->reruns(ec);
  }
  /// The caller's call: a re-run's first attempt's, else this request's.
  time_point called() const noexcept { return spec.called == time_point{} ? submitted : spec.called; }

  /// Marks the request completed unless someone already did, and delivers
  /// (ec, r) to a plain query's or a script's handler; a stream or COPY has had its
  /// outcome handed to its handle by the connection. must_post: never run
  /// the handler inline (we may be inside the initiating function).
  /// `r` by rvalue reference: moved once, into the completion (see
  /// pipelined_connection::complete).
  bool try_complete(const boost::asio::any_io_executor& fallback, bool must_post, std::error_code ec, result&& r) {
    if (completed.exchange(true, std::memory_order_acq_rel)) return false;
    if (auto* s = std::get_if<result_sink>(&sink)) {
      auto d = std::move(s->done);
      d->complete(fallback, must_post, ec, std::move(r));
    } else if (auto* sc = std::get_if<script_sink>(&sink)) {
      auto d = std::move(sc->done);
      d->complete(fallback, must_post, ec, std::move(r));
    }
    return true;
  }
};

/// A result carrying only pgpipe's own message (no server fields).
inline result client_error_result(std::string message) {
  diagnostics d;
  d.client_message = std::move(message);
  return result(std::move(d));
}

}  // namespace pgpipe::detail
