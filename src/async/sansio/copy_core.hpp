// copy_core: the sans-IO state machine of one COPY on a lease (async_copy_in,
// async_copy_out; contract for users in <pgpipe/async_copy.hpp>).
//
// It owns the COPY's phase, what the caller asked for (a chunk to send,
// finish, abort, the next chunk, cancel), the chunk not yet handed to libpq,
// the copy_out buffer and the outcome, and it makes every decision: which
// libpq call comes next, what each of libpq's answers means, what each caller
// operation gets, and what an outcome (the server's verdict, a deadline, a
// stop, a break) does to a COPY still on the wire. It never touches libpq, a
// socket, a thread or a clock: the shell (copy_state, the COPY's solo
// operation on its connection) reports events, carries out the queued actions in
// order and answers the libpq calls they ask for. Not thread-safe: called on
// the connection's executor only.
//
// pipeline_core decides *when* the COPY runs (it holds it until the pipeline
// is idle, then says start_solo) and completes its request: with the verdict
// at on_solo_end, early on a deadline or a stop (the request is then
// detached), or with connection_lost on a break. The shell hands that
// completion to on_outcome.
//
// Phases: queued (behind the lease's earlier queries) -> starting (statement
// sent) -> in_data (COPY FROM STDIN open) or out_data (COPY TO STDOUT open)
// -> ending (CopyDone/CopyFail sent, or the server's data over: reading the
// verdict) -> over (the last result was read; back in pipeline mode). The
// outcome is known (decided()) independently of the phase: a deadline
// decides a COPY that is still in_data, a stop may decide one still queued.
//
// Contract (each point has a test in tests/unit/async/sansio/copy_core_test.cpp):
//  - Caller operations (write, finish, abort, next) return a copy_reply:
//    either answered at once (refused, or the outcome is already known) or
//    accepted, in which case the shell keeps the operation's handler and
//    exactly one complete_* action answers it later. At most one operation of
//    each kind is pending; write, finish and abort exclude each other as the
//    public header says (errc::invalid_argument otherwise). Once decided,
//    every operation is answered at once: write with the COPY's error (or
//    errc::closed), finish with the same outcome again (its result once, then
//    a note that it was delivered), abort with success unless the connection
//    was lost, next with the error once and then the end (a reader waiting
//    when the outcome is an error gets it then), or errc::cancelled after
//    cancel().
//  - Wire actions (put_data, put_end, flush) are queued only while the COPY
//    is on the wire, and each is the last action of its batch: the shell
//    carries it out and answers at once (on_put_data, on_put_end, on_flush),
//    which may queue the next step. The shell may also flush on its own
//    (socket writable, the pipeline's flush) and report it with on_flush.
//  - Backpressure: a chunk goes to libpq only when libpq's buffer has gone to
//    the socket (flush done), and write completes only once its chunk has
//    gone to the socket too: the client holds one chunk whatever the
//    producer's speed. flush_pending() says the shell must wait for the
//    socket to be writable (while still reading, the PQflush rule).
//  - The end: finish asks for CopyDone, abort and a stop for CopyFail with a
//    reason; it is sent once, after the chunk in hand is out (an abort drops
//    that chunk: its write completes with errc::cancelled).
//  - Reading: before each read the shell asks next_read(). copy_out holds at
//    most about copy_chunk_bytes: past that, next_read() pauses (paused(),
//    the shell stops reading the socket) until next() resumes it with a
//    `read` action. Data of a stopped or wrong-direction COPY is dropped.
//  - Results (on_result): the server opening the COPY of the handle's
//    direction starts the data phase; the other direction, or no COPY at
//    all, is a wrong-direction COPY: ended at once (copy_in's data is
//    refused with CopyFail; copy_out's rows are read and dropped) and its
//    outcome is errc::invalid_argument, nothing copied (unless the
//    connection was lost). The first error result and the first command
//    result are kept for the request (copy_keep); a session-fatal error
//    ends the session (ends_session). COPY BOTH breaks the connection.
//  - When the results are over (on_results_done) the shell goes back to
//    pipeline mode and reports pipeline_core::on_solo_end with wire_done's
//    `failed` (an error was kept, or the direction was wrong).
//  - The outcome is final and delivered once (on_outcome): a COPY that is
//    still on the wire when it is decided with an error is ended there too
//    (CopyFail for copy_in, a stop_request for copy_out, whose pipeline_core
//    sends a PQcancel); the shell still reads it to its end (wire_done).
//  - A stop (abort, cancel, a destroyed handle, which aborts copy_in and
//    cancels copy_out) of a COPY still queued asks pipeline_core to remove it
//    (stop_request): nothing is sent.
//  - Sizes: a chunk's size is a std::size_t from write() on; put_data hands
//    it to libpq in pieces of at most copy_piece_max bytes (pq/copy_pieces.hpp:
//    PQputCopyData takes an int, the server a CopyData under 1 GiB), each
//    once the one before is on the socket; the write completes after the last.
#pragma once

#include <pgpipe/result.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace pgpipe::detail {

/// A copy_out chunk is handed over once it holds this many bytes; reading
/// the socket stops until the reader takes it (the bound on client memory).
inline constexpr std::size_t copy_chunk_bytes = 64 * 1024;

enum class copy_phase : unsigned char { queued, starting, in_data, out_data, ending, over };

/// libpq's answer to PQputCopyData / PQputCopyEnd (1, 0, -1).
enum class copy_put : unsigned char { sent, full, failed };
/// libpq's answer to PQflush (0, 1, -1).
enum class copy_flushed : unsigned char { done, pending, failed };
/// A PGresult read during the COPY, as the shell classifies it.
enum class copy_result : unsigned char {
  copy_in,        ///< PGRES_COPY_IN
  copy_out,       ///< PGRES_COPY_OUT
  copy_both,      ///< PGRES_COPY_BOTH
  error,          ///< an error result
  session_fatal,  ///< an error that ends the session (pq/libpq_failure.hpp)
  other,          ///< anything else (COMMAND_OK "COPY n", TUPLES_OK...)
};
/// What next_read() lets the shell read now.
enum class copy_read : unsigned char {
  nothing,  ///< stop reading (the actions may hand a chunk over)
  data,     ///< PQgetCopyData
  result,   ///< PQgetResult (unless PQisBusy)
};
/// Which result the shell keeps for the COPY's request (for pipeline_core's verdict).
enum class copy_keep : unsigned char { drop, as_ok, as_error };

struct copy_action {
  enum class kind : unsigned char {
    // The wire: only while the COPY is on it; answered at once.
    put_data,          ///< PQputCopyData(data); answer on_put_data
    put_end,           ///< PQputCopyEnd(text, or none when text is empty); answer on_put_end
    flush,             ///< PQflush; answer on_flush
    read,              ///< read what next_read() allows, then watch the socket unless paused()
    // The connection.
    stop_request,      ///< pipeline_core::solo_stop for the COPY's request (if it reached the core)
    break_connection,  ///< the connection is unusable: text is the reason
    wire_done,         ///< back to pipeline mode, then pipeline_core::on_solo_end(failed)
    // The caller's pending operations.
    complete_write,    ///< ec
    complete_finish,   ///< ec, res
    complete_abort,    ///< ec
    complete_next,     ///< ec, text (a chunk; empty: the end)
  };
  explicit copy_action(kind k) noexcept : what(k) {}
  kind what;
  std::error_code ec;
  std::string text;
  std::string_view data;      ///< put_data: the chunk, held by the core until on_put_data
  bool libpq_detail = false;  ///< break_connection: append libpq's own message
  bool failed = false;        ///< wire_done
  result res;                 ///< complete_finish
};

/// A caller operation's answer when it is given at once.
struct copy_reply {
  bool answered = false;  ///< false: accepted; a complete_* action answers it later
  std::error_code ec;
  result res;        ///< finish
  std::string data;  ///< next: a chunk (empty: the end)
};

/// on_result's verdict on one result.
struct copy_verdict {
  copy_keep keep = copy_keep::drop;
  /// The server ends the session: the shell tells pipeline_core
  /// (on_session_ended) and stops reading.
  bool ends_session = false;
};

class copy_core {
 public:
  /// `out`: COPY TO STDOUT (async_copy_out); otherwise COPY FROM STDIN.
  explicit copy_core(bool out) noexcept : out_(out) {}

  // ---- the caller (async_copy_in / async_copy_out) ----
  copy_reply write(std::string data);
  copy_reply finish();
  /// An empty reason becomes "aborted by the client".
  copy_reply abort(std::string reason);
  copy_reply next();
  /// copy_out's cancel() (and its destructor): idempotent, answers at once.
  void cancel();

  // ---- the wire (the shell) ----
  /// pipeline_core said start_solo and the shell sent the statement.
  void on_started();
  /// Asked before each read; see copy_read.
  copy_read next_read();
  /// PQgetCopyData's answers: a row (n > 0), nothing until readable (0), the
  /// data is over (-1), a failure (-2).
  void on_data(std::string_view bytes);
  void on_data_wait();
  void on_data_end();
  void on_data_failed();
  copy_verdict on_result(copy_result r);
  /// PQgetResult returned NULL: the COPY is over on the wire.
  void on_results_done();
  void on_put_data(copy_put r);
  void on_put_end(copy_put r);
  void on_flush(copy_flushed r);

  // ---- the outcome ----
  /// pipeline_core completed the COPY's request with (ec, r). `connection_ready`:
  /// the connection can still talk to the server (a COPY on the wire is ended there).
  void on_outcome(std::error_code ec, result r, bool connection_ready);

  // ---- outputs and state ----
  /// The actions queued since the last call, in order, into `out` (cleared first).
  void take_actions(std::vector<copy_action>& out);
  copy_phase phase() const noexcept { return phase_; }
  bool out() const noexcept { return out_; }
  /// Between on_started and on_results_done.
  bool on_wire() const noexcept {
    return phase_ != copy_phase::queued && phase_ != copy_phase::over;
  }
  /// copy_out's reader is behind: the shell does not read the socket.
  bool paused() const noexcept { return paused_; }
  /// libpq's output buffer is not on the socket yet: wait until writable.
  bool flush_pending() const noexcept { return flush_pending_; }
  bool decided() const noexcept { return decided_; }
  /// The caller ended the COPY before it was decided (abort, cancel, or a
  /// destroyed handle): stats() counts it as cancelled whatever the server
  /// answered, as the blocking driver does.
  bool stopped_by_client() const noexcept { return stopped_by_client_; }
  /// Rows the server reported (COPY n), once decided with success.
  std::uint64_t rows() const noexcept { return rows_; }

 private:
  copy_reply answer(std::error_code ec);
  void push(copy_action a) { actions_.push_back(std::move(a)); }
  void push(copy_action::kind k, std::error_code ec = {}) {
    copy_action a(k);
    a.ec = ec;
    push(std::move(a));
  }
  void push_break(std::string reason, bool libpq_detail);
  void push_put_end(std::string text, bool wrong_direction);
  /// Hands libpq the next thing copy_in has: the chunk in hand, else the end.
  void feed();
  /// copy_out: the buffered rows go to a waiting next().
  void deliver();
  /// The COPY is not wanted any more (abort, cancel, an error outcome): end it on the wire.
  void stop_on_wire(const std::string& reason);
  void drop_pending() {
    has_pending_ = false;
    pending_ = std::string();  // the client holds no copy once it is not needed
    pending_sent_ = 0;
    piece_in_flight_ = 0;
  }

  const bool out_;
  copy_phase phase_ = copy_phase::queued;
  bool wrong_direction_ = false;  ///< the server opened the other direction (or none)
  bool stopped_ = false;          ///< abort, cancel, an error outcome: data is discarded
  bool cancelled_ = false;        ///< copy_out's cancel(): the reader gets errc::cancelled
  bool stopped_by_client_ = false;
  bool paused_ = false;
  bool flush_pending_ = false;
  bool kept_ok_ = false;
  bool kept_error_ = false;

  // Which answer the wire action in flight gets, when it matters.
  bool end_wrong_direction_ = false;  ///< the put_end in flight ends a wrong-direction COPY
  bool flush_after_end_ = false;      ///< the flush in flight follows the end: read the verdict next

  // copy_in
  std::string pending_;  ///< a chunk not yet handed to libpq whole
  bool has_pending_ = false;
  std::size_t pending_sent_ = 0;     ///< bytes of pending_ libpq has taken
  std::size_t piece_in_flight_ = 0;  ///< the length of the put_data in flight
  bool end_requested_ = false;  ///< finish, abort or a stop asked; the end goes once the chunk is out
  bool end_sent_ = false;
  bool caller_ended_ = false;   ///< finish or abort was called
  std::string end_reason_;      ///< non-empty: CopyFail with it
  bool write_waiting_ = false;
  bool finish_waiting_ = false;
  bool abort_waiting_ = false;

  // copy_out
  std::string buffer_;  ///< rows read, not yet taken by next()
  bool next_waiting_ = false;
  bool error_delivered_ = false;

  // the outcome
  bool decided_ = false;
  std::error_code ec_;
  result res_;  ///< for a later finish()
  std::uint64_t rows_ = 0;

  std::vector<copy_action> actions_;
};

}  // namespace pgpipe::detail
