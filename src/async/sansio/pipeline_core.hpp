// pipeline_core: the sans-IO request pipeline of one async connection.
//
// It owns the FIFO (waiting -> written -> done), Sync accounting (one Sync
// per request, so an error aborts only its own segment), the depth limit,
// the prepared-statement cache, each request's stage (Parse, then Execute),
// the cancel hold-back rule, the statement-cache repair after migrations and
// the shared-path transaction safety net. It never touches libpq, a socket,
// a thread or a clock: the shell (pipelined_connection) feeds it what libpq
// said and the current time, then carries out the queued actions in order.
// Not thread-safe: called on the connection's executor only.
//
// Contract (each point has a test in tests/unit/async/sansio/pipeline_core_*_test.cpp):
//  - Every submitted request gets exactly one `complete` action, unless the
//    core was destroyed first. After `complete`, a request still written has
//    its remaining results reported as `discard` (detached).
//  - Results are matched in order: on_result/on_command_end/on_sync always
//    concern head(), the oldest written request.
//  - At most `depth` requests are written and not yet synced.
//  - Writes follow submission order: the next request written is always the
//    oldest one submitted that is still to be written, including requests
//    written before and queued again (skipped in a batch, or re-run for a
//    statement repair), however many Syncs gave them back.
//  - Nothing is sent after the connection broke (on_broken, a session-fatal
//    error, COPY, a stall, an unanswered cancel): written requests complete
//    with connection_lost ("may have executed"), waiting ones with not_sent.
//  - Cancel hold-back: a PQcancel hits whatever the backend runs when it
//    lands, so it is started only for a lease request whose Sync segment is
//    both the oldest and the newest written: segments ahead of it are waited
//    for (writes held; the signal goes at their last Sync), a segment behind
//    it means no cancel (the request is detached). Within its segment the
//    signal may hit another request (BEGIN, a chain's statement): that aborts
//    the segment, the target included; a target that was skipped so
//    completes cancelled_by_server. Nothing is sent from the cancel's
//    request until both the PQcancel call has returned (on_cancel_returned)
//    and the target's Sync was read.
//  - Statement cache: a SQL text seen before runs as a named statement; the
//    first use carries its Parse in the same Sync segment. At most
//    `max_prepared` names exist; the least recently used idle one is evicted
//    and deallocated (an internal `deallocate` request). A Parse that failed
//    leaves no statement; an Execute that failed leaves it (still cached).
//  - Migration repair: a named statement failing with 26000, or with 0A000
//    "cached plan must not change result type" (`plan_changed`), raised before
//    anything executed: the statement is dropped (deallocated if it still
//    exists), and the request is sent again, with a fresh Parse unless
//    another re-run prepared the statement first; it may be stale again (a
//    migration of several statements), and is repaired again, at most
//    statement_cache::max_repairs times in all (the policy both drivers
//    follow: core/statements/statement_cache.hpp). Shared requests always
//    qualify; a lease request only when the server is idle (no transaction, which the
//    error would have aborted) and nothing was written behind it (it keeps
//    its order). A request that is not re-run reports the error, and its
//    statement is dropped all the same: the next use prepares it afresh.
//  - The core's own requests (DEALLOCATE, Close) made for a lease request
//    are the lease's: they may run inside its transaction, and the safety
//    net below does not apply to them.
//  - Pooler detection: a named statement whose Parse this connection has just
//    sent fails with 42P05 (the fresh name already exists) or 26000 (it is
//    gone at once), first use or re-run: only a server session that changes
//    under the connection explains it (a transaction pooler). The request
//    completes with `pooler_suspected` (never re-run) and the connection
//    sends only unnamed statements from then on.
//  - Safety net: if the server reports a transaction open (in transaction or
//    failed) at the Sync of a request not on a lease, that request completes
//    with `transaction_left_open` and the connection is closed (the server
//    rolls the transaction back when the session ends); requests behind it
//    fail as after a break.
//  - Sync coalescing (opt-in, `sync_batch` > 1): consecutive requests that may
//    coalesce (below) are written in one batch closed by a single Sync, at most
//    `sync_batch` of them and never past the depth limit. A batch never waits
//    to fill: each write_pass closes its last batch. The batch is one implicit
//    transaction: an error in one request makes the server skip (abort) the
//    requests behind it in the batch; those never ran and are written again
//    (ahead of newer work, in submission order), while every request that ran
//    completes with its own result or its own error and is never written
//    again. Outcomes are decided at the batch's Sync. A request coalesces
//    only where a rollback of the batch cannot undo anything a caller was
//    told succeeded: a shared read (marked `read_only`) on a read-only
//    session whose statement cannot turn its batch read-write or act at
//    commit (`session_read_only`, `may_share_sync`: facts the shell reports,
//    see sync_coalescing.hpp).
//  - Chains (lease only): a request marked `chained` is written without a
//    Sync when the next waiting request is written in the same pass, so a
//    transaction (BEGIN, its statements, COMMIT) travels as one segment
//    with one Sync, and the server skips whatever follows an error up to
//    it. A chain is never left open: nothing waiting, or the depth limit
//    reached, and its request gets the Sync. Outcomes are decided at the
//    Sync, as for a coalesced batch; but a skipped request completes as
//    `skipped` and is never written again (it belonged to a transaction the
//    error aborted). Requests inside a chain carry their Parse (a skipped
//    Parse makes no statement and is forgotten; another request on the
//    lease written before that Sync was read and naming it fails with
//    26000, as any statement of an aborted transaction would). A request
//    written without its Sync takes the deadline of the request written
//    next (it cannot be answered before that one: BEGIN's deadline is its
//    first statement's).
//  - Units (lease only): a request marked `opens_unit` (a transaction
//    helper's BEGIN) opens a unit; requests marked `in_unit` (the rest of
//    that transaction's work) run only inside it. Until the opener's Sync is
//    read, an `in_unit` request is written only into the opener's own Sync
//    segment (a chain: the server skips it if the opener fails); one that
//    would start a new segment waits. Once the opener failed (any answer but
//    success, so nothing is open on the server), every `in_unit` request
//    still to be written completes `unit_failed` unwritten: nothing of the
//    work runs outside its transaction, whatever split the chain (the depth
//    limit, a work that writes a statement later). A unit lasts until the
//    next opener. A chain's segment is never split by the statement cache:
//    a request that would evict a statement mid-segment goes unnamed (the
//    DEALLOCATE's own Sync would end the segment).
//  - Written chains past their deadline (lease only): a written request
//    marked `cancel_at_deadline` (async_transaction_batch's BEGIN,
//    statements and COMMIT) is not answered by its deadline: the server
//    decides what stayed, so the core asks it. At the deadline a cancel goes
//    to the request of its Sync segment that the server runs (the hold-back
//    rule above applies: none when a segment is written behind it), and
//    every request of the segment waits for the server's answer within
//    `cancel_bound` more. The answer decides: a request stopped with 57014
//    completes `timed_out_on_server`, the rest of its segment `skipped`,
//    the ones that ran `ok`; a segment that ended before the signal landed
//    completes as answered. No answer within the bound: the connection is
//    closed and the written requests complete `connection_lost` (the only
//    case where the caller cannot know what stayed). Waiting requests past
//    their deadline complete `timeout_unsent` as usual.
//  - Solo requests (lease only): a request marked `solo` holds the wire
//    alone, outside pipeline mode: a COPY (libpq 15 allows none in pipeline
//    mode) or a script (async_lease::async_execute_script: several
//    statements in one simple query, which libpq sends only outside
//    pipeline mode); the core cannot tell them apart, and need not. It waits
//    at the head of the waiting queue until nothing is written (the pipeline
//    is idle), then `start_solo` hands the connection to the shell, which
//    leaves pipeline mode, runs it and reports on_solo_end. Until then
//    nothing else is written (requests submitted meanwhile wait behind it),
//    the stall timeout does not apply (the caller paces a COPY), and a break
//    completes it with connection_lost like any written request. A deadline
//    or a stop completes it early (detached); the shell then ends it on the
//    wire and still reports on_solo_end.
#pragma once

#include "async/sansio/block_cache.hpp"
#include "async/sansio/pipeline_actions.hpp"
#include "async/sansio/request_queue.hpp"
#include "core/pool/pool_core.hpp"
#include "core/statements/statement_cache.hpp"

#include <cstdint>
#include <memory>
#include <memory_resource>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pgpipe::detail {

struct pipeline_params {
  std::size_t depth = 128;  ///< requests written and not synced, at most
  bool prepared_statements = true;
  std::size_t max_prepared = 1000;
  std::chrono::milliseconds stall_timeout{0};  ///< 0: none
  std::chrono::milliseconds cancel_bound{1000};  ///< PQcancel must return within this
  /// Requests that may coalesce sharing one Sync, at most (1: one Sync each).
  std::size_t sync_batch = 1;
  /// The shell can send a protocol-level Close of a prepared statement
  /// (libpq 17's PQsendClosePrepared): statements are dropped with
  /// close_statement instead of an SQL DEALLOCATE.
  bool close_prepared = false;
  /// Where the request queues' memory comes from (tests count it there).
  std::pmr::memory_resource* memory = std::pmr::new_delete_resource();
};

/// A request's identity in the statement cache: the SQL text (+ parameter
/// types, when typed: see statement_key). The shell lends the text it already holds, with a
/// reference that keeps its owner alive as long as the core's entry: a
/// request its caller cancelled is dropped by the shell but may stay written
/// here until its Sync, and its key is needed then (finish_statement). That
/// costs one reference count per query instead of a copy of the text.
/// Assigning a std::string makes an owning key (internal statements, tests).
/// The key hashes its text once, when made: the statement cache looks it up
/// several times per query (hashed()).
class sql_key {
 public:
  sql_key() = default;
  sql_key(std::string text) { *this = std::move(text); }  // NOLINT: implicit, like a string
  sql_key(const char* text) : sql_key(std::string(text)) {}  // NOLINT
  /// Borrows `text` (and `type_bytes`, the parameter types of a statement
  /// prepared typed), which `owner` keeps alive (and unchanged).
  sql_key(std::string_view text, std::shared_ptr<const void> owner, std::string_view type_bytes = {})
      : text_(text, type_bytes), owner_(std::move(owner)) {}
  sql_key& operator=(std::string text) {
    auto owned = std::make_shared<const std::string>(std::move(text));
    text_ = statement_key(*owned);
    owner_ = std::move(owned);
    return *this;
  }
  /// The SQL text (without the types).
  std::string_view view() const noexcept { return text_.text; }
  operator std::string_view() const noexcept { return text_.text; }  // NOLINT
  /// The text with its hash, for statement_cache lookups.
  const statement_key& hashed() const noexcept { return text_; }

 private:
  statement_key text_;
  std::shared_ptr<const void> owner_;
};

/// What the core needs to know about a request.
struct pipe_request {
  sql_key sql;  ///< identity in the statement cache (see sql_key)
  std::size_t param_count = 0;
  bool stream = false;    ///< rows go to an async_row_stream (never named: single-row mode)
  bool internal = false;  ///< health check, rollback: never named
  bool on_lease = false;  ///< exclusive connection: PQcancel may be used
  bool pooled = false;    ///< holds a unit of pool capacity until synced
  /// Facts for Sync coalescing, which the core decides (see "Sync
  /// coalescing"): the caller's read-only marker; the server says the
  /// session's new transactions are read-only; the statement passes
  /// sync_coalescing.hpp's may_share_sync. The shell may leave the last two
  /// false where the core would not coalesce anyway (coalesces()).
  bool read_only = false;
  bool session_read_only = false;
  bool may_share_sync = false;
  bool solo = false;      ///< a COPY or a script: holds the wire alone, outside pipeline mode (lease only)
  /// Lease only: the next request shares this one's Sync (see "Chains").
  bool chained = false;
  /// Lease only: opens a unit (a transaction helper's BEGIN; see "Units").
  bool opens_unit = false;
  /// Lease only: runs only inside the unit opened last (see "Units").
  bool in_unit = false;
  /// Lease only: once written, its deadline does not answer it; the server's
  /// answer to a cancel does (see "Written chains past their deadline").
  bool cancel_at_deadline = false;
  time_point deadline = time_point::max();
};

class pipeline_core {
 public:
  explicit pipeline_core(pipeline_params p);

  // ---- inputs ----
  /// A request for the FIFO; written on the next write_pass().
  void submit(pipe_id id, pipe_request r);
  /// The shell's write turn (the connection is ready): sends waiting requests
  /// up to the depth limit unless held back, then one flush.
  void write_pass(time_point now);
  /// One PGresult of head(). `sqlstate`/`retryable` only for errors;
  /// retryable: is_stale_statement() of the error (core/statements: one stale test).
  pipe_keep on_result(pipe_result r, std::string_view sqlstate = {}, bool retryable = false);
  /// PQgetResult returned NULL: one command (Parse, Execute) of head() ended.
  void on_command_end();
  /// PGRES_PIPELINE_SYNC: head()'s segment is over; `tx` is the server's
  /// transaction status after it.
  void on_sync(time_point now, tx_state tx);
  /// Input arrived (resets the stall clock).
  void on_input(time_point now);
  /// The head's stored error is FATAL for the session (terminated backend).
  void on_session_ended(const std::string& reason);
  /// The connection is unusable (I/O error, COPY, libpq refused a send).
  void on_broken(const std::string& reason);
  /// Deadlines, stall timeout, unanswered cancel.
  void on_tick(time_point now);
  /// Asio cancellation of `id`. `after_write`: terminal or partial (a
  /// written request may have side effects; total alone leaves it running).
  /// Call only after reading what input is already there (the result may have
  /// arrived, and then there is nothing to cancel).
  void cancel(time_point now, pipe_id id, bool after_write);
  /// A stream's reader stopped it: rows are discarded; a waiting stream is
  /// removed, a written one cancelled on the server when the hold-back rule allows.
  void stream_abandoned(time_point now, pipe_id id);
  void on_cancel_returned();
  /// start_cancel could not be carried out (nothing reached the server):
  /// the request is detached instead.
  void on_cancel_failed(pipe_id id);
  /// The cancel call failed after it started (libpq 17's PQcancelPoll): its
  /// CancelRequest may have reached the postmaster, so the signal may still
  /// land. The request is detached, and writes stay held until its Sync, as
  /// after on_cancel_returned.
  void on_cancel_failed_once_started(pipe_id id);
  /// Client teardown: everything completes with `closed`; nothing more is sent.
  void abort();
  /// The solo request started by `start_solo` is over and the connection is
  /// back in pipeline mode: it completes (ok, or sql_error when `failed`)
  /// unless it was completed early, and writing resumes.
  void on_solo_end(time_point now, bool failed);
  /// The solo request `id` is not wanted any more: removed if not started; if
  /// running, a PQcancel is started (start_cancel) unless one already was.
  /// True when it was removed unstarted.
  bool solo_stop(time_point now, pipe_id id);

  // ---- outputs and state ----
  std::vector<pipe_action> take_actions();
  /// Same, into `out` (cleared first): swapping buffers keeps both vectors'
  /// capacity, so the shell allocates nothing per batch.
  void take_actions(std::vector<pipe_action>& out);
  std::optional<time_point> next_timer() const;
  /// The oldest written request (internal ones included: ids of the core's own
  /// requests are never submitted ids).
  std::optional<pipe_id> head() const;
  bool head_is_internal() const;
  bool is_broken() const noexcept { return broken_; }
  /// Sync coalescing is on (sync_batch > 1): the shell gathers a read's
  /// coalescing facts only then.
  bool coalesces() const noexcept { return p_.sync_batch > 1; }
  bool writes_held() const noexcept { return cancel_running_ || cancel_target_ != 0 || solo_id_ != 0; }
  /// The solo request that holds the wire (start_solo given, on_solo_end not yet), or 0.
  pipe_id solo_running() const noexcept { return solo_id_; }
  /// Written and not yet synced (a coalesced batch's finished requests included).
  std::size_t written() const noexcept { return written_.size() + batch_.size(); }
  std::size_t waiting() const noexcept { return waiting_.size(); }
  /// Nothing waiting and every written request detached: a graceful close may proceed.
  bool can_close() const;
  bool has_written_or_waiting() const noexcept { return written() > 0 || !waiting_.empty(); }
  /// Syncs written, and requests written (re-sends included): their ratio is
  /// the coalescing achieved.
  std::uint64_t syncs_sent() const noexcept { return syncs_sent_; }
  std::uint64_t requests_sent() const noexcept { return requests_sent_; }
  const statement_cache& statements() const noexcept { return cache_; }
  /// Pooler detection tripped: named statements are off on this connection.
  bool pooler_detected() const noexcept { return !cache_.naming(); }
  /// True exactly once, after pooler detection tripped: the shell logs it then.
  bool take_pooler_warning() noexcept { return !cache_.naming() && !std::exchange(pooler_warned_, true); }

 private:
  /// Where a request stands on its way through the connection (one at a time).
  enum class stage : unsigned char {
    waiting,  ///< in waiting_: not written, or queued again
    parse,    ///< written with its Parse, whose results come first
    execute,  ///< its Execute's (or its solo request's) results are current
    ended,    ///< its commands are over; its batch's Sync decides (in batch_)
  };
  /// What the server said about the request's current send. The first error
  /// wins; any result beats a skip.
  enum class answer : unsigned char {
    none,             ///< nothing yet (at its Sync: a protocol error)
    skipped,          ///< only PIPELINE_ABORTED: an earlier request of its batch failed
    ok,
    error,            ///< its Execute failed
    parse_error,      ///< its Parse failed: no statement was made
    stale_statement,  ///< its cached statement was refused before executing (26000, plan changed)
  };
  /// Who is told the outcome.
  enum class recipient : unsigned char {
    caller,    ///< a caller waits for its complete action
    detached,  ///< the caller was answered early; its results are discarded
    core,      ///< the core's own request (a DEALLOCATE): no complete action
  };
  static bool is_error(answer a) noexcept { return a >= answer::error; }
  /// The wire format's Bind carries at most 65535 parameters.
  static constexpr std::size_t max_params = 65535;

  /// A request in the core. Its state is three values (stage, answer,
  /// recipient: each one of several exclusive cases) and the flags below,
  /// which combine freely with them and with each other.
  struct entry {
    pipe_id id = 0;
    std::uint64_t seq = 0;  ///< submission order: waiting_ is kept sorted by it
    stage at = stage::waiting;
    answer heard = answer::none;
    recipient to = recipient::caller;
    bool carried_parse = false;   ///< its current send carried a Parse (the statement's first use)
    std::uint8_t repairs = 0;     ///< re-runs for a stale statement so far (statement_cache::max_repairs)
    bool cancel_sent = false;     ///< a PQcancel was started for it
    bool single_row_set = false;  ///< single-row mode was set for its Execute
    bool abandoned = false;       ///< stream stopped by its reader
    bool batch_last = true;       ///< its send carried the Sync (false: mid-batch)
    bool closes_statement = false;  ///< the core's Close of statement `req.sql` (close_prepared)
    bool past_deadline = false;   ///< cancel_at_deadline: its deadline passed; it waits for the server's answer
    pipe_request req;
    std::string name;             ///< statement it executed ("" = unnamed)
    std::string sqlstate;         ///< of its first error
    bool awaited() const noexcept { return to == recipient::caller; }
  };
  /// The deadlines next_timer() counts (request_queue.hpp): a waiting
  /// caller's request, a written one whose caller still waits.
  struct counts_unless_core {
    bool operator()(const entry& e) const noexcept { return e.to != recipient::core; }
  };
  struct counts_awaited {
    bool operator()(const entry& e) const noexcept { return e.awaited(); }
  };
  using waiting_queue = request_queue<entry, counts_unless_core>;
  using written_queue = request_queue<entry, counts_awaited>;

  // pipeline_core.cpp: the FIFO, writes, results, breaks, time.
  void complete(entry& e, pipe_outcome o);
  void release_unit(const entry& e);
  void flush_release();
  bool send(entry& e);
  void prime_single_row();
  void break_all(const std::string& reason, std::optional<pipe_outcome> head_outcome);
  /// Makes `d` the core's request that drops statement `name`: a Close
  /// where the shell has one (close_prepared), else an SQL DEALLOCATE.
  void drop_statement(entry& d, const std::string& name) const;
  // pipeline_settle.cpp: what a Sync means for the requests it closes.
  /// Decides every request of the segment a Sync closed: the head, and the
  /// requests of its coalesced batch in batch_.
  void settle(tx_state tx);
  /// Once the queues are empty after a burst, gives the deques' block maps
  /// (which never shrink) back; block_cache already gave the blocks back.
  void trim_if_drained() noexcept;
  /// One request of the settled segment; true when it was queued to be
  /// written again (moved out of `e`).
  bool settle_one(entry& e, bool lease_may_retry);
  /// Back into waiting_ to be written again, at its place in submission order.
  void requeue(entry& e);
  // pipeline_statements.cpp: the statement policy's use (core/statements).
  /// Names `e`'s statement for its send (evicting, and writing the
  /// DEALLOCATE, when the cache is full); unnamed if it cannot be cached.
  void name_statement(entry& e);
  /// send() would carry a Parse for it (its statement is not cached yet).
  bool needs_parse(const entry& e) const;
  void finish_statement(entry& e);
  /// The statement policy's verdict on failed request `e` (its drops queued).
  statement_verdict judge_statement(entry& e, bool lease_may_retry);
  /// Queues a DEALLOCATE (or Close) for each name the cache invalidated,
  /// as `e`'s (on its lease, if any).
  void queue_invalidated(const entry& e);
  // pipeline_batches.cpp: Sync coalescing.
  bool may_coalesce(const entry& e) const;
  /// `e` (just sent, `batch_run` requests before it in its batch) leaves its
  /// batch open for the next waiting request.
  bool batch_stays_open(const entry& e, std::size_t batch_run) const;
  // pipeline_cancel.cpp: cancellation and its hold-back.
  entry* find_written(pipe_id id);
  /// Nothing is written behind `e` but the rest of its own Sync segment.
  bool last_segment_is(const entry& e) const;
  bool try_start_cancel(time_point now, entry& e);
  /// A cancel for `e`: start_cancel once its segment is the oldest written (at once if it is),
  /// holding writes from now until the call returned and `e` is over.
  void emit_cancel(time_point now, entry& e);
  /// The written request `id` if its Sync segment is the oldest written, else null.
  entry* in_first_segment(pipe_id id);
  /// start_cancel for the pending cancel's target, once its segment is the oldest.
  void fire_pending_cancel(time_point now);
  /// A cancel's target has the server's answer: lifts that part of the hold-back.
  void target_over(pipe_id id);
  /// `e` (cancel_at_deadline, written: in `q`) reached its deadline: the first time,
  /// a cancel for its segment and a bound on the wait for the server; the
  /// second, the server said nothing within it: the connection is closed.
  /// False when the connection was closed (the queues are cleared).
  bool outlive_deadline(time_point now, written_queue& q, entry& e);
  /// The request of `e`'s Sync segment whose commands the server runs now
  /// (the first whose results are not over), or null.
  entry* running_in_segment(const entry& e);
  /// `e`'s deadline is at most `t`; `e` is in written_ (a cancel's target
  /// has its Execute still to run: never one of batch_).
  void bound_by_cancel(entry& e, time_point t);
  /// Removes a request not yet written (completed cancelled_unsent); false if it was not waiting.
  bool drop_unsent(pipe_id id);
  // pipeline_units.cpp: units (a transaction helper's BEGIN and its work).
  /// write_pass's turn for an `in_unit` request at the head of the waiting
  /// queue: completes it (and those behind it) when its unit failed; true
  /// when the queue must wait for the opener's Sync.
  bool unit_blocks_queue();
  /// Request `id`, settled with `heard` and not to be written again: if it
  /// is the unit's opener, the unit is open or failed.
  void settle_unit(pipe_id id, answer heard);
  // pipeline_solo.cpp
  /// write_pass's turn for a solo request at the head of the waiting queue:
  /// true when the queue must not move (it waits for the pipeline to drain, or started).
  bool solo_blocks_queue();

  pipeline_params p_;
  statement_cache cache_;
  // Every request passes through waiting_ and written_ (a FIFO each): the
  // cache keeps a few freed blocks for the next ones (block_cache.hpp).
  // Declared before the queues, which give their blocks back to it when they go.
  block_cache blocks_;
  waiting_queue waiting_{&blocks_};
  written_queue written_{&blocks_};
  /// Requests of the open coalesced batch whose results are over (they left
  /// written_ at their last command); decided at the batch's Sync.
  written_queue batch_{&blocks_};
  std::uint64_t syncs_sent_ = 0;
  std::uint64_t requests_sent_ = 0;
  std::vector<pipe_action> actions_;
  std::size_t release_units_ = 0;
  bool broken_ = false;
  bool cancel_running_ = false;  ///< PQcancel started, not returned
  pipe_id cancel_target_ = 0;    ///< its Sync not read yet
  bool cancel_fired_ = false;    ///< start_cancel given for cancel_target_ (else pending: an older segment is on the wire)
  time_point cancel_deadline_ = time_point::max();
  time_point last_progress_{};
  pipe_id next_internal_ = 0;  ///< counts down from the top of the id space
  std::uint64_t next_seq_ = 0;  ///< the next entry's submission order
  bool pooler_warned_ = false;
  pipe_id solo_id_ = 0;  ///< the solo request holding the wire outside pipeline mode
  enum class unit_state : unsigned char { none, pending, open, failed };
  unit_state unit_ = unit_state::none;  ///< of the unit opened last
  pipe_id unit_opener_ = 0;
  /// Some request had a deadline (sticky): next_timer() must ask the queues.
  bool any_deadline_ = false;
  /// How much sooner than the one submitted before it a deadline may be and
  /// still be taken as that one (submit()).
  static constexpr std::chrono::milliseconds deadline_slack{5};
  /// The deadline of the last caller's request submitted: see submit().
  time_point last_submitted_deadline_ = time_point::min();
  /// The most requests waiting at once since the queues were last trimmed.
  std::size_t peak_waiting_ = 0;
};

}  // namespace pgpipe::detail
