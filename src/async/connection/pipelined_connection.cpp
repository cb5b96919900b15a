// pipelined_connection: construction, requests into pipeline_core, and the
// core's actions carried out with libpq (contract in pipelined_connection.hpp).
// The rest of the class lives in connection_{connect,io,cancel,streams,close}.cpp.
#include "async/connection/pipelined_connection.hpp"

#include "async/connection/copy_state.hpp"
#include "async/connection/query_meter.hpp"
#include "async/connection/request_outcome.hpp"
#include "async/connection/tcp_cork.hpp"
#include "async/sansio/sync_coalescing.hpp"
#include "core/sql/sql_text.hpp"
#include "pq/libpq_failure.hpp"

#include <pgpipe/detail/param_limits.hpp>

#include <boost/asio/post.hpp>

#include <algorithm>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace pgpipe::detail {

namespace asio = boost::asio;
using std::chrono::milliseconds;

namespace {

pipeline_params core_params(const connection_config& c) {
  pipeline_params p;
  p.depth = c.pipeline_depth;
  p.prepared_statements = c.prepared_statements;
  p.max_prepared = c.max_prepared;
  p.stall_timeout = c.stall_timeout;
  p.sync_batch = c.sync_batch;
  p.close_prepared = c.send_close_prepared != nullptr;
  // PQcancel returns once the postmaster signalled the backend: give it what
  // a connect may take.
  p.cancel_bound = std::max(c.connect_timeout, milliseconds(1000));
  return p;
}
}  // namespace

pipelined_connection::pipelined_connection(asio::any_io_executor ex, slot_id slot,
                                           std::shared_ptr<const connection_config> cfg,
                                           std::weak_ptr<connection_owner> owner)
    : ex_(std::move(ex)), slot_(slot), cfg_(std::move(cfg)), secrets_(cfg_->secrets), owner_(std::move(owner)),
      core_(core_params(*cfg_)),
      timer_(ex_) {}

pipelined_connection::~pipelined_connection() {
  // Normally torn down already; this covers an io_context destroyed with our
  // handlers still queued. Requests still here complete with errc::closed.
  reqs_.for_each([this](const std::shared_ptr<query_request>& r) {
    r->try_complete(ex_, true, make_error_code(errc::closed), client_error_result("client destroyed"));
  });
  end_cancel_calls();
  if (sd_) {
    release_descriptor(*sd_);
  }
  if (pg_) PQfinish(pg_);
}

std::string pipelined_connection::pq_error() const {
  return clean_message(pg_ ? PQerrorMessage(pg_) : "out of memory", secrets_);
}

// ---- requests ---------------------------------------------------------------

std::shared_ptr<query_request> pipelined_connection::lookup(pipe_id id) const {
  return reqs_.find_shared(id);
}

query_request* pipelined_connection::find_request(pipe_id id) const {
  return reqs_.find(id);
}

void pipelined_connection::enqueue(std::shared_ptr<query_request> req) {
  if (req->completed.load(std::memory_order_acquire)) {
    // Cancelled on its way here: give its capacity back.
    if (req->pooled) {
      if (auto owner = owner_.lock()) owner->conn_release(slot_, 1);
    }
    return;
  }
  if (std::string why = nul_byte_refusal(req->spec.sql); !why.empty()) {
    refuse(req, std::move(why));
    return;
  }
  if (st_ == state::dead) {
    // The connection died after the pool granted it; the pool already forgot
    // the grant, so nothing is released.
    complete(req, make_error_code(errc::not_sent), client_error_result("connection closed before the request was sent"));
    return;
  }
  req->id = reqs_.next_id();
  pipe_request r;
  // The cache key: the text, plus the parameter types when they are sent
  // typed (the same SQL with other types is another prepared statement), as
  // raw bytes. The core borrows both parts from the request, which its entry
  // keeps alive (sql_key): no copy of the text or the types per query.
  const auto& prm = req->spec.params;
  if (prm.typed()) {
    const std::string_view type_bytes(reinterpret_cast<const char*>(prm.types.data()), prm.types.size() * sizeof(Oid));
    r.sql = sql_key(req->spec.sql, req, type_bytes);
  } else {
    r.sql = sql_key(req->spec.sql, req);
  }
  r.param_count = req->spec.params.values.size();
  r.stream = std::holds_alternative<stream_sink>(req->sink);
  r.internal = req->internal;
  r.on_lease = req->on_lease;
  r.chained = req->chained && req->on_lease;
  r.opens_unit = req->opens_unit && req->on_lease;
  r.in_unit = req->in_unit && req->on_lease;
  r.cancel_at_deadline = req->cancel_at_deadline && req->on_lease;
  r.pooled = req->pooled;
  r.deadline = req->deadline;
  // Facts for Sync coalescing, which the core decides (may_coalesce). The
  // session's status and the statement's scan are gathered only for a read
  // the core could coalesce: the hot path of an unmarked query skips both.
  r.read_only = req->spec.read_only;
  if (r.read_only && core_.coalesces()) {
    r.session_read_only = session_read_only();
    r.may_share_sync = may_share_sync(req->spec.sql);
  }
  // A COPY and a script hold the wire alone, outside pipeline mode.
  r.solo = std::holds_alternative<copy_sink>(req->sink) || std::holds_alternative<script_sink>(req->sink);
  reqs_.insert(req);
  core_.submit(req->id, std::move(r));
  if (req->deadline < timer_at_) set_timer(req->deadline);
  apply();
  schedule_write();
}

void pipelined_connection::enqueue_chain(const std::vector<std::shared_ptr<query_request>>& reqs) {
  // All or nothing: a chain with a statement missing would be another
  // transaction (its BEGIN and COMMIT around the rest).
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    std::string why = nul_byte_refusal(reqs[i]->spec.sql);
    if (why.empty()) continue;
    for (std::size_t j = 0; j < reqs.size(); ++j) {
      refuse(reqs[j], j == i ? why
                             : "nothing of this chain was sent: its request " + std::to_string(i) +
                                   " was refused (" + why + ")");
    }
    return;
  }
  for (const auto& req : reqs) enqueue(req);
}

void pipelined_connection::refuse(const std::shared_ptr<query_request>& req, std::string why) {
  // Capacity the pool granted for it goes back first, so that a handler
  // looking at stats() sees it free.
  if (req->pooled && !req->completed.load(std::memory_order_acquire)) {
    if (auto owner = owner_.lock()) owner->conn_release(slot_, 1);
  }
  complete(req, make_error_code(errc::invalid_argument), client_error_result(std::move(why)));
}

void pipelined_connection::schedule_write() {
  if (write_scheduled_ || st_ != state::ready) return;
  write_scheduled_ = true;
  // Posted, not run now: requests enqueued during this loop turn join the
  // same write pass and the same flush.
  asio::post(ex_, [self = shared_from_this()] { self->write_pending(); });
}

void pipelined_connection::write_pending() {
  write_scheduled_ = false;
  if (st_ != state::ready) return;
  const auto now = pool_clock::now();
  // Two or more requests to write and a libpq that flushes at every Sync:
  // the kernel holds what each Sync's send() gives it until the pass ends,
  // then transmits it in full segments (tcp_cork.hpp). One request alone
  // would only pay the two extra system calls.
  int corked = -1;
  if (corkable_ && sd_ && core_.waiting() > 1 && set_tcp_cork(sd_->native_handle(), true)) corked = sd_->native_handle();
  core_.write_pass(now);
  apply();
  // Our own duplicate of the socket, still registered: never another's fd.
  if (corked >= 0 && sd_ && sd_->native_handle() == corked) set_tcp_cork(corked, false);
}

void pipelined_connection::apply() {
  const bool outer = !batching_;
  batching_ = true;
  bool flush_wanted = false;
  // Actions may produce more actions (a failed send breaks the connection):
  // take them until there are none.
  // Nested calls (a flush reading results) take their own buffer.
  std::vector<pipe_action> actions = std::move(action_buffer_);
  for (core_.take_actions(actions); !actions.empty(); core_.take_actions(actions))
    for (auto& a : actions) apply_one(a, flush_wanted);
  action_buffer_ = std::move(actions);
  if (flush_wanted && st_ == state::ready) flush();
  if (!outer) return;
  if (release_units_ > 0 && st_ != state::dead) {
    auto n = std::exchange(release_units_, 0);
    if (auto owner = owner_.lock()) owner->conn_release(slot_, n);
  }
  release_units_ = 0;
  deliver_deferred();
  if (st_ == state::ready) {
    if (core_.waiting() > 0 && !core_.writes_held()) schedule_write();
    if (auto next = core_.next_timer(); next && *next < timer_at_) set_timer(*next);
  }
  if (closing_) maybe_finish_close();
}

void pipelined_connection::apply_one(pipe_action& a, bool& flush_wanted) {
  using kind = pipe_action::kind;
  switch (a.what) {
    case kind::send:
    case kind::send_internal:
    case kind::close_statement:
      if (st_ != state::ready || core_.is_broken()) return;
      if (!send(a)) {
        // A half-written request would desynchronise the FIFO: the
        // connection is unusable.
        core_.on_broken("sending failed: " + pq_error());
      }
      return;
    case kind::flush:
      flush_wanted = true;
      return;
    case kind::single_row: {
      if (st_ != state::ready) return;
      // Several rows per result where the stream asked for them and libpq
      // 17+ has the call (lease_impl checked the count fits an int).
      const query_request* req = find_request(a.id);
      const std::size_t rows = req != nullptr ? req->spec.stream_chunk_rows : 1;
      if (rows > 1 && cfg_->set_chunked_rows_mode && cfg_->set_chunked_rows_mode(pg_, static_cast<int>(rows)) == 1)
        return;
      (void)PQsetSingleRowMode(pg_);  // if refused, the rows arrive as one chunk
      return;
    }
    case kind::complete: {
      auto req = reqs_.take(a.id);
      if (!req) return;
      complete_with(req, a.outcome);
      return;
    }
    case kind::release:
      release_units_ += a.units;
      return;
    case kind::start_cancel:
      if (!start_cancel_call(a.id)) core_.on_cancel_failed(a.id);
      return;
    case kind::close:
      retire(a.reason);
      return;
    case kind::start_solo:
      if (st_ != state::ready || core_.is_broken()) return;
      start_solo(a.id);
      return;
  }
}

bool pipelined_connection::sync() {
  if (cfg_->send_pipeline_sync) return cfg_->send_pipeline_sync(pg_) == 1;
  return PQpipelineSync(pg_) == 1;
}

bool pipelined_connection::send(const pipe_action& a) {
  if (a.what == pipe_action::kind::send_internal) {
    // The core's own statement (DEALLOCATE): no parameters, unnamed.
    if (!PQsendQueryParams(pg_, a.name.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0)) return false;
    return sync();
  }
  if (a.what == pipe_action::kind::close_statement) {
    // Only asked for when the shell said it has the call (core_params).
    if (!cfg_->send_close_prepared || !cfg_->send_close_prepared(pg_, a.name.c_str())) return false;
    return sync();
  }
  query_request* req = find_request(a.id);
  if (!req) return false;
  // A re-run (statement repair) starts from clean results.
  req->ok.reset();
  req->err.reset();
  // Parameters carry their type OIDs and formats (binary where it pays,
  // bytea always binary so any byte goes through). Internal requests may
  // leave types/formats empty: all text, types inferred.
  const auto& prm = req->spec.params;
  const auto& vals = prm.values;
  // pipeline_core writes no request with more than max_params (65535) values.
  const int n = static_cast<int>(vals.size());
  const bool typed = prm.typed();
  // Per-connection buffers: libpq copies the values into its output buffer
  // before returning, so they are free again after the send.
  send_values_.resize(vals.size());
  send_lengths_.resize(vals.size());
  for (std::size_t i = 0; i < vals.size(); ++i) {
    const std::size_t len = vals[i] ? vals[i]->size() : 0;
    // check_params refused a value over max_param_bytes before the request
    // was queued; a length past it here would be cut by the int.
    if (len > max_param_bytes) return false;
    send_values_[i] = vals[i] ? vals[i]->data() : nullptr;
    send_lengths_[i] = static_cast<int>(len);
  }
  static_assert(std::is_same_v<type_oid, Oid>, "parameter types are passed to libpq as they are");
  const char* const* p = send_values_.empty() ? nullptr : send_values_.data();
  const int* lens = typed ? send_lengths_.data() : nullptr;
  const int* fmts = typed ? prm.formats.data() : nullptr;
  const Oid* oids = typed ? prm.types.data() : nullptr;
  const std::string& sql = req->spec.sql;
  // Parse rides in the same Sync segment as the first Execute: no extra
  // round trip, and a failing Parse aborts only this request. The statement
  // is prepared with its parameter types (part of its cache key, see
  // submit()).
  if (a.parse && !PQsendPrepare(pg_, a.name.c_str(), sql.c_str(), typed ? n : 0, oids)) return false;
  const int values_format = req->spec.binary_results ? 1 : 0;
  int ok = !a.name.empty() ? PQsendQueryPrepared(pg_, a.name.c_str(), n, p, lens, fmts, values_format)
                           : PQsendQueryParams(pg_, sql.c_str(), n, oids, p, lens, fmts, values_format);
  if (!ok) return false;
  // One Sync per request (an error aborts this request's segment only),
  // unless the core coalesces this read with the next ones.
  if (!a.sync) return true;
  return sync();
}

bool pipelined_connection::session_read_only() const {
  // Reported by the server (ParameterStatus, PostgreSQL 14+) whenever it
  // changes, so a lease that turned it off is seen before the next request.
  // in_hot_standby alone is not enough: a batch started after a promotion
  // that the connection has not heard of yet would be read-write.
  const char* v = pg_ ? PQparameterStatus(pg_, "default_transaction_read_only") : nullptr;
  return v && std::string_view(v) == "on";
}


void pipelined_connection::complete_with(const std::shared_ptr<query_request>& req, pipe_outcome o) {
  auto [ec, r] = outcome_result(o, *req, break_reason_);
  if (o == pipe_outcome::pooler_suspected && core_.take_pooler_warning())
    if (auto owner = owner_.lock()) owner->log(log_level::warning, "slot " + std::to_string(slot_) + ": " + r.diag().client_message);
  complete(req, ec, std::move(r));
}

void pipelined_connection::deliver(const std::shared_ptr<query_request>& req, result_sink&, std::error_code ec,
                                   result&& r) {
  if (batching_) {
    // Delivered after this batch's capacity went back to the pool, so a
    // handler that looks at stats() or starts the next query sees it free.
    deferred_.emplace_back(req, ec, std::move(r));
    return;
  }
  // Runs inline when the handler has no executor of its own (we are on its
  // loop already); everything the handler may call back into posts.
  req->try_complete(ex_, false, ec, std::move(r));
}

void pipelined_connection::deliver(const std::shared_ptr<query_request>& req, stream_sink& sink, std::error_code ec,
                                   result&& r) {
  // The stream's reader gets the outcome (end marker or error).
  if (!req->completed.load(std::memory_order_acquire)) stream_push(*sink.stream, ec, std::move(r), true);
  req->try_complete(ex_, false, ec, result());
}

void pipelined_connection::deliver(const std::shared_ptr<query_request>& req, script_sink&, std::error_code ec,
                                   result&& r) {
  // Answered while still running (deadline, the caller's cancellation): stop
  // it on the server; its results are still read to the end (script_operation).
  if (solo_ && solo_->runs(*req) && req->id != 0) {
    core_.solo_stop(pool_clock::now(), req->id);
    apply();
  }
  if (batching_) {
    deferred_.emplace_back(req, ec, std::move(r));
    return;
  }
  req->try_complete(ex_, false, ec, std::move(r));
}

void pipelined_connection::deliver(const std::shared_ptr<query_request>& req, copy_sink& sink, std::error_code ec,
                                   result&& r) {
  // The COPY's handle gets the outcome.
  if (!req->completed.load(std::memory_order_acquire)) sink.copy->outcome(*this, ec, std::move(r));
  req->try_complete(ex_, false, ec, result());
}

void pipelined_connection::complete(const std::shared_ptr<query_request>& req, std::error_code ec, result&& r) {
  if (ec) {
    // Read through const: a successful result has no diagnostics to allocate.
    const diagnostics& d = std::as_const(r).diag();
    if (d.client_message.empty() && d.message.empty()) r.diag().client_message = ec.message();
  }
  // Count before delivering: stats read right after a completion include it.
  // A COPY the caller ended counts as cancelled, whatever the server said.
  const auto* copy = std::get_if<copy_sink>(&req->sink);
  meter_completed(*req, copy && copy->copy->core.stopped_by_client() ? make_error_code(errc::cancelled) : ec, r);
  std::visit([&](auto& sink) { deliver(req, sink, ec, std::move(r)); }, req->sink);
}

void pipelined_connection::deliver_deferred() {
  batching_ = false;
  if (deferred_.empty()) return;
  // Swapped with a spare buffer, never moved out: both keep their capacity,
  // so a batch of completions allocates nothing and never moves a result to
  // grow the vector (a result's move copies its diagnostics' strings).
  // Handlers run below may start a nested batch that fills deferred_ again.
  std::vector<deferred_completion> batch = std::move(deferred_spare_);
  batch.clear();
  batch.swap(deferred_);
  for (auto& d : batch) d.req->try_complete(ex_, false, d.ec, std::move(d.res));
  batch.clear();
  if (deferred_spare_.capacity() < batch.capacity()) deferred_spare_ = std::move(batch);
}


void pipelined_connection::fail_request(const std::shared_ptr<query_request>& req, std::error_code ec, result r) {
  complete(req, ec, std::move(r));
}


}  // namespace pgpipe::detail
