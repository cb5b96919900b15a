#include "async/pipelined_connection.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "async/request_outcome.hpp"
#include "async/session_setup.hpp"
#include "async/stream_chunks.hpp"
#include "pq/libpq_failure.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <system_error>
#include <thread>
#include <vector>

namespace pgpipe::detail {

namespace asio = boost::asio;
using std::chrono::duration_cast;
using std::chrono::milliseconds;

namespace {
// Asio watches a duplicate of libpq's socket (see reassign_socket), which it
// owns and closes here; libpq closes its own fd. libpq may close its fd by
// itself (a failed PQconnectPoll, EOF in PQconsumeInput) and that number may
// be reused at once by any thread; with the duplicate, Asio never touches a
// number it does not own (TSan caught the old release() deregistering a
// reused fd). Pending waits end with operation_aborted.
void release_descriptor(asio::posix::stream_descriptor& sd) noexcept {
  boost::system::error_code ignored;
  if (sd.is_open()) sd.close(ignored);
}

pipeline_params core_params(const connection_config& c) {
  pipeline_params p;
  p.depth = c.pipeline_depth;
  p.prepared_statements = c.prepared_statements;
  p.max_prepared = c.max_prepared;
  p.stall_timeout = c.stall_timeout;
  // PQcancel returns once the postmaster signalled the backend: give it what
  // a connect may take.
  p.cancel_bound = std::max(c.connect_timeout, milliseconds(1000));
  return p;
}
}  // namespace

pipelined_connection::pipelined_connection(asio::any_io_executor ex, slot_id slot,
                                           std::shared_ptr<const connection_config> cfg,
                                           std::weak_ptr<connection_owner> owner)
    : ex_(std::move(ex)), slot_(slot), cfg_(std::move(cfg)), owner_(std::move(owner)),
      core_(core_params(*cfg_)),
      timer_(ex_) {}

pipelined_connection::~pipelined_connection() {
  // Normally torn down already; this covers an io_context destroyed with our
  // handlers still queued. Requests still here complete with errc::closed.
  for (auto& [id, r] : reqs_)
    r->try_complete(ex_, true, make_error_code(errc::closed), client_error_result("client destroyed"));
  end_cancel_calls();
  if (sd_) {
    release_descriptor(*sd_);
  }
  if (pg_) PQfinish(pg_);
}

std::string pipelined_connection::pq_error() const {
  return clean_message(pg_ ? PQerrorMessage(pg_) : "out of memory", cfg_->secrets);
}

// ---- connect ----------------------------------------------------------------

void pipelined_connection::start() {
  if (st_ != state::created) return;
  st_ = state::connecting;
  // A string libpq cannot parse is the caller's mistake, not the network's:
  // say so precisely (pool_core treats bad_conninfo as permanent).
  if (auto why = conninfo_parse_error(cfg_->conninfo, cfg_->secrets); !why.empty()) {
    connect_failed(make_error_code(errc::bad_conninfo), "invalid connection string: " + why);
    return;
  }
  // expand_dbname=1: the whole conninfo (key=value or URI) goes in "dbname".
  const char* keys[] = {"dbname", "fallback_application_name", nullptr};
  const char* vals[] = {cfg_->conninfo.c_str(), "pgpipe", nullptr};
  pg_ = PQconnectStartParams(keys, vals, 1);
  if (!pg_) {
    connect_failed(make_error_code(errc::connect_failed), "out of memory starting a connection");
    return;
  }
  if (PQstatus(pg_) == CONNECTION_BAD) {
    std::string m = pq_error();
    connect_failed(classify_connect_error(m), m);
    return;
  }
  if (cfg_->connect_timeout.count() > 0) {
    connect_deadline_ = pool_clock::now() + cfg_->connect_timeout;
    set_timer(connect_deadline_);
  }
  // libpq: after PQconnectStart, act as if PQconnectPoll returned WRITING.
  connect_wait(PGRES_POLLING_WRITING);
}

void pipelined_connection::reassign_socket() {
  // libpq may have closed the previous socket and opened another (possibly
  // with the same number): always drop the old registration, never close it.
  if (sd_) {
    release_descriptor(*sd_);
    sd_.reset();
  }
  ++sd_gen_;
  read_armed_ = write_armed_ = false;
  const int fd = PQsocket(pg_);
  if (fd < 0) return;
  const int mine = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (mine < 0) return;
  sd_.emplace(ex_);
  boost::system::error_code ec;
  sd_->assign(mine, ec);
  if (ec) {
    ::close(mine);
    sd_.reset();
  }
}

void pipelined_connection::connect_wait(PostgresPollingStatusType want) {
  reassign_socket();
  if (!sd_) {
    connect_failed(make_error_code(errc::connect_failed), "libpq gave no socket while connecting");
    return;
  }
  auto w = want == PGRES_POLLING_READING ? asio::posix::stream_descriptor::wait_read
                                         : asio::posix::stream_descriptor::wait_write;
  sd_->async_wait(w, [self = shared_from_this(), gen = sd_gen_](const boost::system::error_code& ec) {
    if (gen != self->sd_gen_ || self->st_ != state::connecting) return;
    if (ec) {
      self->connect_failed(make_error_code(errc::connect_failed), "waiting for the socket failed: " + ec.message());
      return;
    }
    self->connect_step();
  });
}

void pipelined_connection::connect_step() {
  switch (PQconnectPoll(pg_)) {
    case PGRES_POLLING_OK:
      connected();
      return;
    case PGRES_POLLING_READING:
      connect_wait(PGRES_POLLING_READING);
      return;
    case PGRES_POLLING_WRITING:
      connect_wait(PGRES_POLLING_WRITING);
      return;
    default: {
      std::string m = pq_error();
      connect_failed(classify_connect_error(m), m);
      return;
    }
  }
}

void pipelined_connection::connect_failed(std::error_code ec, std::string message) {
  if (st_ == state::dead) return;
  auto owner = owner_.lock();
  if (owner) owner->log(log_level::warning, "connect failed (slot " + std::to_string(slot_) + "): " + message);
  {
    // Nothing was established: requests cannot be here (the pool grants only
    // open connections), so there is nothing to fail.
    if (sd_) {
      release_descriptor(*sd_);
      sd_.reset();
    }
    if (pg_) {
      PQfinish(pg_);
      pg_ = nullptr;
    }
    ++timer_gen_;
    timer_.cancel();
    st_ = state::dead;
    finished_reported_ = true;
  }
  if (owner) owner->conn_connect_failed(slot_, ec, message);
}

void pipelined_connection::connected() {
  if (PQsetnonblocking(pg_, 1) != 0 || PQenterPipelineMode(pg_) != 1) {
    std::string m = pq_error();
    connect_failed(make_error_code(errc::connect_failed), "cannot enter pipeline mode: " + m);
    return;
  }
  reassign_socket();
  if (!sd_) {
    connect_failed(make_error_code(errc::connect_failed), "libpq gave no socket");
    return;
  }
  // Server notices go to the logger, never to libpq's stderr printer.
  notices_ = std::make_unique<notice_route>(pg_, slot_, [owner = owner_](bool warning, const std::string& line) {
    if (auto o = owner.lock()) o->log(warning ? log_level::warning : log_level::info, line);
  });
  st_ = state::ready;
  connect_deadline_ = time_point::max();
  core_.on_input(pool_clock::now());
  arm_read();
  // pool_params::on_connect runs before the pool hears of the connection.
  if (!cfg_->on_connect.empty()) {
    run_session_setup(shared_from_this(), cfg_->on_connect, cfg_->connect_timeout);
    return;
  }
  announce_connected();
}

void pipelined_connection::session_setup_done(std::error_code ec, const std::string& message) {
  if (st_ != state::ready) return;  // broke meanwhile: conn_broken told the pool
  if (ec) {
    connect_failed(ec, message);
    return;
  }
  announce_connected();
}

void pipelined_connection::announce_connected() {
  if (auto owner = owner_.lock()) {
    owner->log(log_level::info, "connected (slot " + std::to_string(slot_) + ", server " +
                                    std::to_string(PQserverVersion(pg_)) + ", backend pid " +
                                    std::to_string(PQbackendPID(pg_)) + ")");
    owner->conn_connected(slot_);
  }
  if (closing_) maybe_finish_close();
  if (core_.waiting() > 0) schedule_write();
}

// ---- requests ---------------------------------------------------------------

std::shared_ptr<query_request> pipelined_connection::lookup(pipe_id id) const {
  auto it = reqs_.find(id);
  return it == reqs_.end() ? nullptr : it->second;
}

void pipelined_connection::enqueue(std::shared_ptr<query_request> req) {
  if (req->completed.load(std::memory_order_acquire)) {
    // Cancelled on its way here: give its capacity back.
    if (req->pooled) {
      if (auto owner = owner_.lock()) owner->conn_release(slot_, 1);
    }
    return;
  }
  if (st_ == state::dead) {
    // The connection died after the pool granted it; the pool already forgot
    // the grant, so nothing is released.
    complete(req, make_error_code(errc::not_sent), client_error_result("connection closed before the request was sent"));
    return;
  }
  req->id = next_id_++;
  pipe_request r;
  // The cache key: the text, plus the parameter types when they are sent
  // typed (the same SQL with other types is another prepared statement).
  r.sql = req->spec.sql;
  {
    const auto& prm = req->spec.params;
    if (prm.types.size() == prm.values.size() && prm.formats.size() == prm.values.size() && !prm.all_text_untyped())
      for (auto t : prm.types) (r.sql += '\0') += std::to_string(t);
  }
  r.param_count = req->spec.params.values.size();
  r.stream = req->stream != nullptr;
  r.internal = req->internal;
  r.on_lease = req->on_lease;
  r.pooled = req->pooled;
  r.deadline = req->deadline;
  reqs_.emplace(req->id, req);
  core_.submit(pool_clock::now(), req->id, std::move(r));
  if (req->deadline < timer_at_) set_timer(req->deadline);
  apply();
  schedule_write();
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
  core_.write_pass(now);
  apply();
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
    case kind::single_row:
      if (st_ == state::ready) (void)PQsetSingleRowMode(pg_);  // if refused, the rows arrive as one chunk
      return;
    case kind::complete: {
      auto req = lookup(a.id);
      if (!req) return;
      reqs_.erase(a.id);
      complete_with(req, a.outcome);
      return;
    }
    case kind::release:
      release_units_ += a.units;
      return;
    case kind::start_cancel:
      if (!start_cancel_call()) core_.on_cancel_failed(a.id);
      return;
    case kind::close:
      retire(a.reason);
      return;
  }
}

bool pipelined_connection::send(const pipe_action& a) {
  if (a.what == pipe_action::kind::send_internal) {
    // The core's own statement (DEALLOCATE): no parameters, unnamed.
    if (!PQsendQueryParams(pg_, a.name.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0)) return false;
    return PQpipelineSync(pg_) == 1;
  }
  auto req = lookup(a.id);
  if (!req) return false;
  // A re-run (statement repair) starts from clean results.
  req->ok.reset();
  req->err.reset();
  // Parameters carry their type OIDs and formats (binary where it pays,
  // bytea always binary so any byte goes through). Internal requests may
  // leave types/formats empty: all text, types inferred.
  const auto& prm = req->spec.params;
  const auto& vals = prm.values;
  const int n = static_cast<int>(vals.size());
  const bool typed = prm.types.size() == vals.size() && prm.formats.size() == vals.size() && !prm.all_text_untyped();
  std::vector<const char*> ptrs(vals.size());
  std::vector<int> lengths(vals.size());
  std::vector<Oid> types(typed ? vals.size() : 0);
  for (std::size_t i = 0; i < vals.size(); ++i) {
    ptrs[i] = vals[i] ? vals[i]->data() : nullptr;
    lengths[i] = vals[i] ? static_cast<int>(vals[i]->size()) : 0;
    if (typed) types[i] = prm.types[i];
  }
  const char* const* p = ptrs.empty() ? nullptr : ptrs.data();
  const int* lens = typed ? lengths.data() : nullptr;
  const int* fmts = typed ? prm.formats.data() : nullptr;
  const Oid* oids = typed ? types.data() : nullptr;
  const std::string& sql = req->spec.sql;
  // Parse rides in the same Sync segment as the first Execute: no extra
  // round trip, and a failing Parse aborts only this request. The statement
  // is prepared with its parameter types (part of its cache key, see
  // submit()).
  if (a.parse && !PQsendPrepare(pg_, a.name.c_str(), sql.c_str(), typed ? n : 0, oids)) return false;
  int ok = !a.name.empty() ? PQsendQueryPrepared(pg_, a.name.c_str(), n, p, lens, fmts, 0)
                           : PQsendQueryParams(pg_, sql.c_str(), n, oids, p, lens, fmts, 0);
  if (!ok) return false;
  // One Sync per request: an error aborts this request's segment only.
  return PQpipelineSync(pg_) == 1;
}

void pipelined_connection::flush() {
  if (st_ != state::ready) return;
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
  drain_results();
  if (st_ != state::ready) return;
  if (PQstatus(pg_) == CONNECTION_BAD) {
    break_connection(pq_error());
    return;
  }
  if (flush_pending_) flush();
  if (st_ != state::ready) return;
  arm_read();
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
  bool last_null = false;
  // The head changes once per Sync, results arrive several per request:
  // look the request up only when the head changes.
  pipe_id req_id = 0;
  std::shared_ptr<query_request> req;
  while (st_ == state::ready && !core_.is_broken()) {
    auto head_id = core_.head();
    if (!head_id) break;
    if (*head_id != req_id) {
      req_id = *head_id;
      req = lookup(req_id);
    }
    if (req && req->stream) {
      auto& sst = *req->stream;
      if (stream_should_pause(sst)) {
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
        core_.on_sync(pool_clock::now(), transaction_state(req.get()));
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
        // Raised before anything executed: safe to prepare again and re-run.
        const bool retryable =
            sqlstate == "26000" ||
            (sqlstate == "0A000" && primary && std::string_view(primary) == "cached plan must not change result type");
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
            if (req && req->stream) stream_row(req->stream, res.release());
            break;
          default:
            break;
        }
        break;
      }
    }
  }
}

void pipelined_connection::complete_with(const std::shared_ptr<query_request>& req, pipe_outcome o) {
  auto [ec, r] = outcome_result(o, *req, break_reason_);
  if (o == pipe_outcome::pooler_suspected && core_.take_pooler_warning())
    if (auto owner = owner_.lock()) owner->log(log_level::warning, "slot " + std::to_string(slot_) + ": " + r.diag().client_message);
  complete(req, ec, std::move(r));
}

void pipelined_connection::complete(const std::shared_ptr<query_request>& req, std::error_code ec, result r) {
  if (!r.diag().client_message.empty() || !r.diag().message.empty()) {
    // already described
  } else if (ec) {
    r.diag().client_message = ec.message();
  }
  // Count before delivering: stats read right after a completion include it.
  if (!req->internal && !req->completed.load(std::memory_order_acquire)) {
    if (auto owner = owner_.lock()) owner->count_outcome(ec);
  }
  if (req->stream) {
    // The stream's reader gets the outcome (end marker or error); the
    // request itself completes with its no-op handler.
    if (!req->completed.load(std::memory_order_acquire)) stream_push(*req->stream, ec, std::move(r), true);
    req->try_complete(ex_, false, ec, result());
    return;
  }
  if (batching_) {
    // Delivered after this batch's capacity went back to the pool, so a
    // handler that looks at stats() or starts the next query sees it free.
    deferred_.push_back({req, ec, std::move(r)});
    return;
  }
  // Runs inline when the handler has no executor of its own (we are on its
  // loop already); everything the handler may call back into posts.
  req->try_complete(ex_, false, ec, std::move(r));
}

void pipelined_connection::deliver_deferred() {
  batching_ = false;
  auto batch = std::move(deferred_);
  deferred_.clear();
  for (auto& d : batch) d.req->try_complete(ex_, false, d.ec, std::move(d.res));
}

// ---- cancellation, checks, close ------------------------------------------------

void pipelined_connection::cancel(const std::shared_ptr<query_request>& req, asio::cancellation_type_t type) {
  if (req->completed.load(std::memory_order_acquire)) return;
  if (req->id == 0) {
    // Still on its way to enqueue(), which gives its capacity back.
    complete(req, make_error_code(errc::cancelled), client_error_result("cancelled before it was sent"));
    return;
  }
  // A written query may have side effects: only terminal and partial
  // cancellation apply to it.
  const bool after_write = (type & (asio::cancellation_type::terminal | asio::cancellation_type::partial)) !=
                           asio::cancellation_type::none;
  if (req->on_lease && after_write && st_ == state::ready && !paused_ && !core_.writes_held()) {
    // Its result may be here already: then there is nothing to cancel, and
    // a signal sent now could only hit the next query.
    if (!PQconsumeInput(pg_)) {
      break_connection(pq_error());
      return;
    }
    drain_results();
    if (req->completed.load(std::memory_order_acquire) || st_ != state::ready) return;
  }
  core_.cancel(pool_clock::now(), req->id, after_write);
  apply();
}

bool pipelined_connection::start_cancel_call() {
  if (!pg_ || st_ != state::ready || cancel_call_) return false;
  PGcancel* c = PQgetCancel(pg_);
  if (!c) return false;
  auto call = std::make_shared<cancel_call>();
  call->ex = ex_;
  call->conn = weak_from_this();
  try {
    // libpq 15's PQcancel blocks (it opens a connection): never on the loop.
    // It returns once the postmaster has signalled the backend.
    std::thread([c, call] {
      char buf[256];
      PQcancel(c, buf, sizeof buf);
      PQfreeCancel(c);
      std::lock_guard<std::mutex> lk(call->m);
      if (!call->live) return;
      asio::post(call->ex, [call] {
        if (auto conn = call->conn.lock()) conn->cancel_call_returned(call.get());
      });
    }).detach();
  } catch (const std::system_error&) {
    PQfreeCancel(c);
    return false;
  }
  cancel_call_ = std::move(call);
  return true;
}

void pipelined_connection::cancel_call_returned(const cancel_call* call) {
  if (cancel_call_.get() != call) return;
  cancel_call_.reset();
  core_.on_cancel_returned();
  apply();
}

void pipelined_connection::end_cancel_calls() noexcept {
  if (cancel_call_) {
    std::lock_guard<std::mutex> lk(cancel_call_->m);
    cancel_call_->live = false;
  }
  cancel_call_.reset();
}

// ---- streams ----------------------------------------------------------------------

void pipelined_connection::fail_request(const std::shared_ptr<query_request>& req, std::error_code ec, result r) {
  complete(req, ec, std::move(r));
}

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
    if (req && req->stream) {
      auto& sst = *req->stream;
      if (!stream_may_resume(sst)) return;
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
                   client_error_result("row_stream::async_next is already pending"));
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

void pipelined_connection::check() {
  auto req = std::make_shared<query_request>();
  req->internal = true;
  req->spec.sql = "select 1";
  if (cfg_->connect_timeout.count() > 0) req->deadline = pool_clock::now() + cfg_->connect_timeout;
  auto self = shared_from_this();
  auto cb = [self](std::error_code ec, result) {
    if (auto owner = self->owner_.lock()) owner->conn_check_done(self->slot_, !ec);
  };
  req->done = std::make_unique<completion_impl<result, decltype(cb)>>(std::move(cb));
  enqueue(std::move(req));
}

void pipelined_connection::lease_returned() {
  if (st_ == state::dead) return;  // broken: the pool already knows
  const auto ts = PQtransactionStatus(pg_);
  // A PQcancel may still be on its way: the rollback below is held back until
  // it has landed, so it cannot reach the pool's shared queries.
  if (!core_.has_written_or_waiting() && ts == PQTRANS_IDLE && !core_.writes_held()) {
    if (auto owner = owner_.lock()) owner->conn_lease_returned(slot_);
    return;
  }
  // A transaction may be open (or work is still in flight and may open one):
  // ROLLBACK behind it. Harmless when there is none (a warning).
  auto req = std::make_shared<query_request>();
  req->internal = true;
  req->on_lease = true;  // the lease's own cleanup: its transaction is expected
  req->spec.sql = "rollback";
  if (cfg_->connect_timeout.count() > 0) req->deadline = pool_clock::now() + cfg_->connect_timeout;
  auto self = shared_from_this();
  auto cb = [self](std::error_code ec, result) {
    if (ec) {
      // Could not roll back: never hand out a connection in an unknown state.
      self->break_connection("rollback on lease return failed: " + ec.message());
      return;
    }
    if (auto owner = self->owner_.lock()) owner->conn_lease_returned(self->slot_);
  };
  req->done = std::make_unique<completion_impl<result, decltype(cb)>>(std::move(cb));
  enqueue(std::move(req));
}

void pipelined_connection::close() {
  if (st_ == state::dead) return;
  closing_ = true;
  maybe_finish_close();
}

void pipelined_connection::maybe_finish_close() {
  if (!closing_ || st_ == state::dead) return;
  if (st_ == state::connecting) return;  // connected()/connect_failed() come back here
  // Detached requests (timed out, cancelled, a failed health check) have
  // nobody waiting: closing need not wait for a server that may never answer.
  if (!core_.can_close()) return;
  if (auto owner = owner_.lock())
    owner->log(log_level::info, "disconnected (slot " + std::to_string(slot_) + "): closed by the pool");
  teardown();
}

void pipelined_connection::abort() {
  if (st_ == state::dead) return;
  core_.abort();
  teardown();
  apply();
}

void pipelined_connection::break_connection(const std::string& reason) {
  if (st_ == state::dead) return;
  core_.on_broken(reason);
  apply();
}

void pipelined_connection::retire(const std::string& reason) {
  if (st_ == state::dead) return;
  break_reason_ = reason;
  release_units_ = 0;  // the pool forgets every grant of a broken slot
  if (auto owner = owner_.lock()) {
    owner->log(log_level::warning, "disconnected (slot " + std::to_string(slot_) + "): " + reason);
    // First the pool, so that handlers run below cannot be granted this slot.
    owner->conn_broken(slot_, reason);
  }
  teardown();
}

void pipelined_connection::teardown() {
  if (sd_) {
    release_descriptor(*sd_);
    sd_.reset();
  }
  ++sd_gen_;
  if (pg_) {
    PQfinish(pg_);
    pg_ = nullptr;
  }
  ++timer_gen_;
  timer_.cancel();
  timer_at_ = time_point::max();
  end_cancel_calls();
  st_ = state::dead;
  if (!finished_reported_) {
    finished_reported_ = true;
    if (auto owner = owner_.lock()) owner->conn_finished(slot_);
  }
}

// ---- timers ---------------------------------------------------------------------

void pipelined_connection::set_timer(time_point at) {
  if (st_ == state::dead) return;
  timer_at_ = at;
  timer_.expires_at(at);
  timer_.async_wait([self = shared_from_this(), gen = ++timer_gen_](const boost::system::error_code&) {
    // Only the latest arming acts; a superseded wait may still run with success.
    if (gen != self->timer_gen_) return;
    self->on_timer();
  });
}

void pipelined_connection::on_timer() {
  timer_at_ = time_point::max();
  if (st_ == state::dead) return;
  const auto now = pool_clock::now();
  if (st_ == state::connecting) {
    if (now >= connect_deadline_) {
      connect_failed(make_error_code(errc::server_unreachable),
                     "timeout expired after " + std::to_string(cfg_->connect_timeout.count()) + " ms (connect_timeout)");
      return;
    }
    set_timer(connect_deadline_);
    return;
  }
  core_.on_tick(now);
  apply();
}

}  // namespace pgpipe::detail
