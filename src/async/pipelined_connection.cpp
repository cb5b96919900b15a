#include "async/pipelined_connection.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "pq/pq_errors.hpp"

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

// libpq's wire format limits a Bind to 65535 parameters.
constexpr std::size_t max_params = 65535;
// Chunks a stream buffers before the connection stops reading; it resumes
// at half. Bounds memory to this many rows plus the socket buffers.
constexpr std::size_t stream_buffer_limit = 256;
}  // namespace

pipelined_connection::pipelined_connection(asio::any_io_executor ex, slot_id slot,
                                           std::shared_ptr<const connection_config> cfg,
                                           std::weak_ptr<connection_owner> owner)
    : ex_(std::move(ex)), slot_(slot), cfg_(std::move(cfg)), owner_(std::move(owner)), timer_(ex_) {}

pipelined_connection::~pipelined_connection() {
  // Normally torn down already; this covers an io_context destroyed with our
  // handlers still queued. Requests still here complete with errc::closed.
  for (auto* q : {&written_, &waiting_})
    for (auto& r : *q) r->try_complete(ex_, true, make_error_code(errc::closed), client_error_result("client destroyed"));
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
  st_ = state::ready;
  connect_deadline_ = time_point::max();
  last_progress_ = pool_clock::now();
  arm_read();
  if (auto owner = owner_.lock()) {
    owner->log(log_level::info, "connected (slot " + std::to_string(slot_) + ", server " +
                                    std::to_string(PQserverVersion(pg_)) + ", backend pid " +
                                    std::to_string(PQbackendPID(pg_)) + ")");
    owner->conn_connected(slot_);
  }
  if (closing_) maybe_finish_close();
  if (!waiting_.empty()) schedule_write();
}

// ---- requests ---------------------------------------------------------------

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
  req->ph = query_request::phase::waiting;
  if (req->deadline < timer_at_) set_timer(req->deadline);
  waiting_.push_back(std::move(req));
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
  // A cancel may still land: cancel_call_returned()/finish() write the rest.
  if (writes_held()) return;
  bool sent = false;
  const bool was_quiet = written_.empty();
  while (!waiting_.empty()) {
    auto req = waiting_.front();
    if (req->completed.load(std::memory_order_acquire)) {
      waiting_.pop_front();
      if (req->pooled) ++release_units_;
      continue;
    }
    if (req->spec.params.values.size() > max_params) {
      waiting_.pop_front();
      if (req->pooled) ++release_units_;
      complete(req, make_error_code(errc::invalid_argument),
               client_error_result("too many parameters (" + std::to_string(req->spec.params.values.size()) +
                                   "; the protocol allows 65535)"));
      continue;
    }
    if (!send(*req)) {
      // A half-written request would desynchronise the FIFO: the connection
      // is unusable. The request is still in waiting_: it fails with not_sent.
      break_connection("sending failed: " + pq_error());
      return;
    }
    waiting_.pop_front();
    req->ph = query_request::phase::written;
    written_.push_back(std::move(req));
    sent = true;
  }
  if (sent) {
    prime_single_row();
    if (was_quiet) {
      // The stall clock starts when work is outstanding, not at the last read.
      last_progress_ = pool_clock::now();
      if (cfg_->stall_timeout.count() > 0 && last_progress_ + cfg_->stall_timeout < timer_at_)
        set_timer(last_progress_ + cfg_->stall_timeout);
    }
    flush();
  }
  if (release_units_ > 0) {
    auto n = std::exchange(release_units_, 0);
    if (auto owner = owner_.lock()) owner->conn_release(slot_, n);
  }
}

bool pipelined_connection::send(query_request& req) {
  const auto& vals = req.spec.params.values;
  const int n = static_cast<int>(vals.size());
  std::vector<const char*> ptrs(vals.size());
  for (std::size_t i = 0; i < vals.size(); ++i) ptrs[i] = vals[i] ? vals[i]->c_str() : nullptr;
  const char* const* p = ptrs.empty() ? nullptr : ptrs.data();
  const std::string& sql = req.spec.sql;

  // Streams stay unnamed: single-row mode must be set when the Execute
  // becomes current, which a preceding Parse would complicate.
  bool named = cfg_->prepared_statements && !req.internal && !req.stream;
  const std::string* name = nullptr;
  if (named) {
    auto it = statements_.find(sql);
    if (it != statements_.end()) {
      name = &it->second;
    } else if (statements_.size() < cfg_->max_prepared) {
      std::string nm = "pgpipe_" + std::to_string(++next_statement_);
      // Parse rides in the same Sync segment as the first Execute: no extra
      // round trip, and a failing Parse aborts only this request.
      if (!PQsendPrepare(pg_, nm.c_str(), sql.c_str(), 0, nullptr)) return false;
      it = statements_.emplace(sql, std::move(nm)).first;
      req.prepared_name = it->second;
      name = &it->second;
    } else {
      named = false;
    }
  }
  req.stage = req.prepared_name.empty() ? 1 : 0;
  int ok = named ? PQsendQueryPrepared(pg_, name->c_str(), n, p, nullptr, nullptr, 0)
                 : PQsendQueryParams(pg_, sql.c_str(), n, nullptr, p, nullptr, nullptr, 0);
  if (!ok) return false;
  // One Sync per request: an error aborts this request's segment only.
  return PQpipelineSync(pg_) == 1;
}

void pipelined_connection::flush() {
  if (st_ != state::ready) return;
  const int r = PQflush(pg_);
  if (r < 0) {
    break_connection("flush failed: " + pq_error());
    return;
  }
  flush_pending_ = r == 1;
  if (flush_pending_) arm_write();
  // While sending, libpq may have read input into its buffer: results can be
  // ready without the socket becoming readable again.
  if (!written_.empty()) drain_results();
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
  last_progress_ = pool_clock::now();
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
  if (outer) deliver_deferred();
}

void pipelined_connection::drain_results_batch() {
  bool last_null = false;
  while (st_ == state::ready && !written_.empty()) {
    if (auto& head = written_.front(); head->stream) {
      prime_single_row();
      if (!head->stream->abandoned && head->stream->chunks.size() >= stream_buffer_limit) {
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
      auto& head = written_.front();
      if (head->stage == 0) head->stage = 1;
      continue;
    }
    last_null = false;
    std::unique_ptr<PGresult, pgresult_deleter> res(raw);
    auto req = written_.front();
    switch (PQresultStatus(raw)) {
      case PGRES_PIPELINE_SYNC:
        written_.pop_front();
        finish(req);
        break;
      case PGRES_FATAL_ERROR:
      case PGRES_BAD_RESPONSE:
      case PGRES_NONFATAL_ERROR:
        if (is_session_fatal(raw)) {
          // The server is ending the session (terminated backend, shutdown):
          // everything in flight may have executed.
          written_.pop_front();
          if (req->pooled) ++release_units_;
          complete(req, make_error_code(errc::connection_lost), result(res.release(), diagnostics_of(raw)));
          break_connection("server ended the session: " + diagnostics_of(raw).to_string());
          return;
        }
        if (!req->err) {
          req->err_in_parse = req->stage == 0;
          req->err = std::move(res);
        }
        break;
      case PGRES_PIPELINE_ABORTED:
        break;  // a command skipped after this request's own error
      case PGRES_COPY_IN:
      case PGRES_COPY_OUT:
      case PGRES_COPY_BOTH:
        break_connection("COPY is not supported on a pipelined connection");
        return;
      default:  // TUPLES_OK, COMMAND_OK, EMPTY_QUERY, SINGLE_TUPLE
        if (req->stream && PQntuples(raw) > 0) {
          // A row (single-row mode), or all rows when the mode could not be
          // set: a chunk for the reader; the end marker comes at the Sync.
          if (!req->completed.load(std::memory_order_acquire))
            stream_push(*req->stream, {}, result(res.release()), false);
          break;
        }
        // The Execute's result replaces the Parse's COMMAND_OK.
        req->ok = std::move(res);
        break;
    }
  }
  if (release_units_ > 0 && st_ != state::dead) {
    auto n = std::exchange(release_units_, 0);
    if (auto owner = owner_.lock()) owner->conn_release(slot_, n);
  }
  if (closing_) maybe_finish_close();
}

void pipelined_connection::finish(const std::shared_ptr<query_request>& req) {
  req->ph = query_request::phase::finished;
  if (req == cancel_target_) {
    // The backend is past the target: a cancel that has not landed yet finds
    // it reading its next command, and is ignored there.
    cancel_target_.reset();
    if (!writes_held() && !waiting_.empty()) schedule_write();
  }
  if (req->pooled) ++release_units_;
  if (req->err && !req->prepared_name.empty()) {
    // The statement may not exist on the server: forget it, so the next use
    // prepares again instead of failing with 26000.
    auto it = statements_.find(req->spec.sql);
    if (it != statements_.end() && it->second == req->prepared_name) statements_.erase(it);
  }
  if (req->completed.load(std::memory_order_acquire)) return;  // detached: discard
  if (req->err) {
    const PGresult* e = req->err.get();
    diagnostics d = diagnostics_of(e);
    std::error_code ec;
    if (req->cancel_sent && d.sqlstate == "57014") {
      ec = make_error_code(errc::cancelled);
    } else if (!d.sqlstate.empty()) {
      ec = make_sqlstate(d.sqlstate);
    } else {
      ec = make_error_code(errc::protocol_error);
    }
    complete(req, ec, result(req->err.release(), std::move(d)));
    return;
  }
  if (req->ok) {
    complete(req, {}, result(req->ok.release()));
    return;
  }
  complete(req, make_error_code(errc::protocol_error), client_error_result("the server sent no result for the query"));
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
  if (req->ph == query_request::phase::pending) {
    // Still on its way to enqueue(), which gives its capacity back.
    complete(req, make_error_code(errc::cancelled), client_error_result("cancelled before it was sent"));
    return;
  }
  if (req->ph == query_request::phase::waiting) {
    // Not written: no side effect, any cancellation type removes it.
    auto it = std::find(waiting_.begin(), waiting_.end(), req);
    if (it != waiting_.end()) waiting_.erase(it);
    if (req->pooled) {
      if (auto owner = owner_.lock()) owner->conn_release(slot_, 1);
    }
    complete(req, make_error_code(errc::cancelled), client_error_result("cancelled before it was sent"));
    return;
  }
  if (req->ph != query_request::phase::written) return;
  // Written: the query may have side effects, so only terminal and partial
  // cancellation apply.
  if ((type & (asio::cancellation_type::terminal | asio::cancellation_type::partial)) ==
      asio::cancellation_type::none)
    return;
  if (req->on_lease && st_ == state::ready && !req->cancel_sent && !paused_) {
    // Its result may be here already: then there is nothing to cancel, and
    // a signal sent now could only hit the next query.
    if (!PQconsumeInput(pg_)) {
      break_connection(pq_error());
      return;
    }
    drain_results();
    if (req->completed.load(std::memory_order_acquire) || st_ != state::ready) return;
  }
  if (req->on_lease && st_ == state::ready && !req->cancel_sent && send_cancel_request(req)) {
    // Exclusive connection and the target is the only query written: the
    // signal can hit nothing else (later queries are held back until it has
    // landed), so ask the server to cancel. The request completes when the
    // server answers (57014 -> errc::cancelled; a result that beat the
    // cancel is delivered as is), or with errc::cancelled at the latest after
    // max(connect_timeout, 1 s) (then its result is discarded).
    auto bound = pool_clock::now() + std::max(cfg_->connect_timeout, milliseconds(1000));
    cancel_deadline_ = bound;
    if (bound < req->deadline) req->deadline = bound;
    if (bound < timer_at_) set_timer(bound);
    return;
  }
  // Shared pipelined connection, or a lease with other queries written
  // behind (or before) this one, which a cancel signal could hit: detach. The caller is answered now; the
  // server's answer is matched and discarded when it arrives.
  complete(req, make_error_code(errc::cancelled), client_error_result("cancelled after it was sent; result discarded"));
}

bool pipelined_connection::send_cancel_request(const std::shared_ptr<query_request>& req) {
  if (!pg_ || st_ != state::ready || req->cancel_sent || cancel_call_ || cancel_target_) return false;
  // The signal hits whatever the backend is executing when it arrives: only
  // safe if nothing but the target can be executing, i.e. it is the only
  // request written (writes_held() keeps it so until the signal has landed).
  if (written_.size() != 1 || written_.front() != req) return false;
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
  req->cancel_sent = true;
  cancel_call_ = std::move(call);
  cancel_target_ = req;
  return true;
}

void pipelined_connection::cancel_call_returned(const cancel_call* call) {
  if (cancel_call_.get() != call) return;
  cancel_call_.reset();
  cancel_deadline_ = time_point::max();
  if (!writes_held() && !waiting_.empty()) schedule_write();
}

void pipelined_connection::end_cancel_calls() noexcept {
  if (cancel_call_) {
    std::lock_guard<std::mutex> lk(cancel_call_->m);
    cancel_call_->live = false;
  }
  cancel_call_.reset();
  cancel_target_.reset();
  cancel_deadline_ = time_point::max();
}

// ---- streams ----------------------------------------------------------------------

void pipelined_connection::fail_request(const std::shared_ptr<query_request>& req, std::error_code ec, result r) {
  complete(req, ec, std::move(r));
}

void pipelined_connection::prime_single_row() {
  // Pipeline mode: single-row mode is set when the query becomes the one
  // libpq is processing, before any of its results are parsed.
  if (written_.empty() || st_ != state::ready) return;
  auto& h = written_.front();
  if (!h->stream || h->single_row_set || h->stage != 1) return;
  h->single_row_set = true;
  (void)PQsetSingleRowMode(pg_);  // if refused, the rows arrive as one chunk
}

void pipelined_connection::stream_push(stream_state& st, std::error_code ec, result r, bool final) {
  if (st.ended) return;
  if (final) st.ended = true;
  if (st.abandoned) return;
  if (st.waiter) {
    auto w = std::move(st.waiter);
    w->complete(ex_, false, ec, std::move(r));
    return;
  }
  st.chunks.emplace_back(ec, std::move(r));
}

void pipelined_connection::resume_if_paused() {
  if (!paused_ || st_ != state::ready) return;
  if (!written_.empty() && written_.front()->stream) {
    auto& sst = *written_.front()->stream;
    if (!sst.abandoned && sst.chunks.size() > stream_buffer_limit / 2) return;
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
    auto [ec, r] = std::move(st->chunks.front());
    st->chunks.pop_front();
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
  st->chunks.clear();
  if (st->waiter) {
    auto w = std::move(st->waiter);
    w->complete(ex_, false, make_error_code(errc::cancelled), client_error_result("the stream was cancelled"));
  }
  auto req = st->req.lock();
  if (req && !req->completed.load(std::memory_order_acquire)) {
    if (req->ph == query_request::phase::waiting) {
      auto it = std::find(waiting_.begin(), waiting_.end(), req);
      if (it != waiting_.end()) waiting_.erase(it);
      complete(req, make_error_code(errc::cancelled), client_error_result("the stream was cancelled"));
    } else if (req->ph == query_request::phase::written) {
      // Stop the server producing rows nobody will read (only if the signal
      // cannot hit another query); the rest of the result is discarded as
      // it arrives.
      if (send_cancel_request(req)) {
        cancel_deadline_ = pool_clock::now() + std::max(cfg_->connect_timeout, milliseconds(1000));
        if (cancel_deadline_ < timer_at_) set_timer(cancel_deadline_);
      }
    }
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
  if (written_.empty() && waiting_.empty() && ts == PQTRANS_IDLE && !writes_held()) {
    if (auto owner = owner_.lock()) owner->conn_lease_returned(slot_);
    return;
  }
  // A transaction may be open (or work is still in flight and may open one):
  // ROLLBACK behind it. Harmless when there is none (a warning).
  auto req = std::make_shared<query_request>();
  req->internal = true;
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
  if (!waiting_.empty()) return;
  // Detached requests (timed out, cancelled, a failed health check) have
  // nobody waiting: closing need not wait for a server that may never answer.
  for (auto& r : written_)
    if (!r->completed.load(std::memory_order_acquire)) return;
  written_.clear();
  if (auto owner = owner_.lock())
    owner->log(log_level::info, "disconnected (slot " + std::to_string(slot_) + "): closed by the pool");
  teardown();
}

void pipelined_connection::abort() {
  if (st_ == state::dead) return;
  auto written = std::move(written_);
  auto waiting = std::move(waiting_);
  written_.clear();
  waiting_.clear();
  teardown();
  for (auto& r : written) complete(r, make_error_code(errc::closed), client_error_result("client closed"));
  for (auto& r : waiting) complete(r, make_error_code(errc::closed), client_error_result("client closed"));
}

void pipelined_connection::break_connection(const std::string& reason) {
  if (st_ == state::dead) return;
  auto owner = owner_.lock();
  auto written = std::move(written_);
  auto waiting = std::move(waiting_);
  written_.clear();
  waiting_.clear();
  release_units_ = 0;  // the pool forgets every grant of a broken slot
  if (owner) {
    owner->log(log_level::warning, "disconnected (slot " + std::to_string(slot_) + "): " + reason);
    // First the pool, so that handlers run below cannot be granted this slot.
    owner->conn_broken(slot_, reason);
  }
  teardown();
  for (auto& r : written) {
    complete(r, make_error_code(errc::connection_lost),
             client_error_result("connection lost after the request was sent (it may have executed): " + reason));
  }
  for (auto& r : waiting) {
    complete(r, make_error_code(errc::not_sent),
             client_error_result("connection lost before the request was sent: " + reason));
  }
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
  // Stalled: written work and no input for stall_timeout.
  if (cfg_->stall_timeout.count() > 0 && !written_.empty() && now - last_progress_ >= cfg_->stall_timeout) {
    break_connection("no progress for " + std::to_string(cfg_->stall_timeout.count()) + " ms (stall_timeout)");
    return;
  }
  if (cancel_call_ && now >= cancel_deadline_) {
    // PQcancel has not returned: the signal may land at any time, on any
    // later query. The connection cannot be used safely any more.
    break_connection("the cancel request was not answered within " +
                     std::to_string(std::max(cfg_->connect_timeout, milliseconds(1000)).count()) + " ms");
    return;
  }
  time_point next = cancel_call_ ? cancel_deadline_ : time_point::max();
  // Expired, not written: removed. Expired, written: answered now, detached.
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    auto& r = *it;
    if (!r->completed.load(std::memory_order_acquire) && r->deadline <= now) {
      auto req = r;
      it = waiting_.erase(it);
      if (req->pooled) ++release_units_;
      complete(req, make_error_code(errc::query_timeout), client_error_result("query timed out before it was sent"));
      continue;
    }
    if (!r->completed.load(std::memory_order_acquire)) next = std::min(next, r->deadline);
    ++it;
  }
  for (auto& r : written_) {
    if (r->completed.load(std::memory_order_acquire)) continue;
    if (r->deadline <= now) {
      if (r->cancel_sent) {
        complete(r, make_error_code(errc::cancelled), client_error_result("cancelled; the server did not confirm in time"));
      } else {
        complete(r, make_error_code(errc::query_timeout),
                 client_error_result("query timed out after it was sent (it may have executed); result discarded"));
      }
      continue;
    }
    next = std::min(next, r->deadline);
  }
  if (cfg_->stall_timeout.count() > 0 && !written_.empty()) next = std::min(next, last_progress_ + cfg_->stall_timeout);
  if (release_units_ > 0) {
    auto n = std::exchange(release_units_, 0);
    if (auto owner = owner_.lock()) owner->conn_release(slot_, n);
  }
  if (next != time_point::max()) set_timer(next);
  if (closing_) maybe_finish_close();
}

}  // namespace pgpipe::detail
