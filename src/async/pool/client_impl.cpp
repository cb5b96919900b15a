#include "async/pool/client_impl.hpp"

#include "core/pool/connect_error.hpp"
#include "core/sql/shared_statement.hpp"
#include "pq/libpq_failure.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/system_executor.hpp>

#include <algorithm>

namespace pgpipe::detail {

namespace asio = boost::asio;
using std::chrono::milliseconds;

namespace {

time_point add_or_max(time_point now, milliseconds d) {
  if (d.count() <= 0) return time_point::max();
  return now + d;
}

// Cancellation hooks live in the handler's cancellation slot. They hold weak
// references: a hook that fires after completion finds nothing to do.
struct query_cancel_hook {
  std::weak_ptr<query_request> req;
  void operator()(asio::cancellation_type_t type) const {
    auto r = req.lock();
    if (!r || r->completed.load(std::memory_order_acquire)) return;
    if (auto owner = r->owner.lock()) {
      owner->cancel_query(r, type);
      return;
    }
    if (r->conn) {  // lease request: the connection is fixed from the start
      auto c = r->conn;
      asio::post(c->get_executor(), [c, r, type] { c->cancel(r, type); });
    }
  }
};

struct acquire_cancel_hook {
  std::weak_ptr<acquire_request> req;
  std::weak_ptr<client_impl> owner;
  void operator()(asio::cancellation_type_t) const {
    auto r = req.lock();
    auto o = owner.lock();
    if (r && o) o->cancel_acquire(r);
  }
};

// check_shared_statement lexes the text, which costs about as much as the
// rest of the client's work on a short query. Applications send the same few
// texts again and again, and the verdict depends on the text alone: each
// thread remembers the last text found harmless.
std::optional<shared_refusal> check_shared_sql(const std::string& sql) {
  thread_local std::string last_harmless;
  if (!last_harmless.empty() && sql == last_harmless) return std::nullopt;
  auto refused = check_shared_statement(sql);
  if (!refused) last_harmless = sql;
  return refused;
}

std::uint64_t rows_of(const result& r) noexcept { return r.size() != 0 ? r.size() : r.affected_rows(); }

observed_query observed_of(const query_request& req) noexcept {
  return {req.spec.sql, req.on_lease, req.submitted, req.waited};
}

// The observer runs on the hot path: nothing it throws may reach a
// connection's read loop (query_metrics drops it).
void observe_request_start(query_observer& obs, query_request& req, const pipelined_connection& c) {
  if (req.completed.load(std::memory_order_acquire)) return;  // cancelled on its way: enqueue drops it
  const observed_start s = observe_start(obs, observed_of(req), c.slot(), c.backend_pid(), pool_clock::now());
  req.started = s.at;
  req.backend_pid = s.backend_pid;
  req.observer_user = s.user;
  req.observed_start = true;
}

// A query ended: its duration, then the observer (rows are read only for one).
void end_query(query_metrics& m, const query_request& req, const std::error_code& ec, const result& r,
               time_point now) {
  m.record_query(now - req.submitted);
  query_observer* obs = m.observer();
  if (obs == nullptr) return;
  const observed_start s{req.slot, req.backend_pid, req.started, req.observer_user};
  observe_end(*obs, observed_of(req), req.observed_start ? &s : nullptr, ec, r.diag().sqlstate,
              ec ? 0 : rows_of(r), now);
}

class null_target final : public query_target {
 public:
  void submit_query(query_spec, std::unique_ptr<completion<result>> done, asio::cancellation_slot) override {
    done->complete(asio::system_executor(), true, make_error_code(errc::closed),
                   client_error_result("no client or lease behind this object (moved-from, released or empty)"));
  }
};

}  // namespace

std::shared_ptr<query_target> null_query_target() {
  static auto t = std::make_shared<null_target>();
  return t;
}

bool acquire_request::try_complete(const asio::any_io_executor& ex, std::error_code ec, lease l) {
  if (completed.exchange(true, std::memory_order_acq_rel)) return false;
  auto d = std::move(done);
  d->complete(ex, true, ec, std::move(l));
  return true;
}

// ---- lease_impl -------------------------------------------------------------------

void lease_impl::submit_query(query_spec spec, std::unique_ptr<completion<result>> done,
                              asio::cancellation_slot slot) {
  auto req = std::make_shared<query_request>();
  req->on_lease = true;
  req->done = std::move(done);
  const auto now = pool_clock::now();
  req->submitted = now;
  if (owner_->loops_stopped()) {
    // The client is gone: its loops will never run this handler.
    req->spec.sql = std::move(spec.sql);
    owner_->finish_unstarted(req, asio::system_executor(), make_error_code(errc::closed),
                             client_error_result("the client was destroyed before this lease"));
    return;
  }
  if (released_.load(std::memory_order_acquire)) {
    req->spec.sql = std::move(spec.sql);
    owner_->finish_unstarted(req, conn_->get_executor(), make_error_code(errc::closed),
                             client_error_result("the lease was released"));
    return;
  }
  if (spec.params.ec) {
    auto ec = spec.params.ec;
    auto msg = std::move(spec.params.error_message);
    req->spec.sql = std::move(spec.sql);
    owner_->finish_unstarted(req, conn_->get_executor(), ec, client_error_result(std::move(msg)));
    return;
  }
  // A session change on a lease (SET, LISTEN, temp tables...: the statements
  // the shared path refuses) must not leak to the shared callers this
  // connection serves next: such a connection is retired when the lease ends.
  if (auto r = check_shared_statement(spec.sql);
      r && r->code == errc::session_state_needs_lease && r->outlives_transaction)
    changed_session_.store(true, std::memory_order_relaxed);
  const auto timeout = spec.timeout.value_or(owner_->params().query_timeout);
  req->deadline = add_or_max(now, timeout);
  req->spec = std::move(spec);
  req->conn = conn_;
  req->slot = slot_;
  if (slot.is_connected()) slot.template emplace<query_cancel_hook>(query_cancel_hook{req});
  owner_->post_enqueue(conn_, req);
}

std::shared_ptr<query_request> lease_impl::make_handle_request() const {
  auto req = std::make_shared<query_request>();
  req->on_lease = true;
  auto noop = [](std::error_code, result) {};
  req->done = std::make_unique<completion_impl<result, decltype(noop)>>(noop);
  req->conn = conn_;
  req->slot = slot_;
  return req;
}

void lease_impl::post_failure(const std::shared_ptr<query_request>& req, std::error_code ec, std::string why) const {
  asio::post(conn_->get_executor(), [c = conn_, req, ec, why = std::move(why)] {
    c->fail_request(req, ec, client_error_result(why));
  });
}

std::shared_ptr<stream_state> lease_impl::start_stream(query_spec spec) {
  auto st = std::make_shared<stream_state>();
  st->conn = conn_;
  auto req = make_handle_request();
  req->submitted = pool_clock::now();
  req->stream = st;
  st->req = req;
  std::error_code ec;
  std::string why;
  if (released_.load(std::memory_order_acquire)) {
    ec = make_error_code(errc::closed);
    why = "the lease was released";
  } else if (spec.params.ec) {
    ec = spec.params.ec;
    why = spec.params.error_message;
  }
  req->spec = std::move(spec);
  if (ec) {
    post_failure(req, ec, std::move(why));
  } else {
    owner_->post_enqueue(conn_, req);
  }
  return st;
}

void lease_impl::release() noexcept {
  if (released_.exchange(true, std::memory_order_acq_rel)) return;
  if (owner_->loops_stopped()) return;  // nothing left to give the connection back to
  try {
    if (changed_session_.load(std::memory_order_relaxed)) owner_->retire_after_lease(slot_);
    asio::post(conn_->get_executor(), [c = conn_] { c->lease_returned(); });
  } catch (...) {
    // Posting allocates; if that fails the connection is lost to the pool
    // until the client closes, which is the best we can do in a destructor.
  }
}

// ---- client_impl: construction and shutdown ----------------------------------------

client_impl::client_impl(pool_params params, async_client_options options, asio::io_context* external)
    : params_(std::move(params)),
      options_(std::move(options)),
      core_(params_, std::max<std::size_t>(1, params_.pipeline_depth)),
      metrics_(params_.observer, std::move(options_.logger)) {
  auto cfg = std::make_shared<connection_config>();
  cfg->conninfo = params_.conninfo;
  cfg->secrets = passwords_of(params_.conninfo);
  cfg->connect_timeout = params_.connect_timeout;
  cfg->stall_timeout = params_.stall_timeout;
  cfg->pipeline_depth = std::max<std::size_t>(1, params_.pipeline_depth);
  cfg->prepared_statements = params_.prepared_statements;
  cfg->on_connect = session_statements(params_);
  cfg->observer = params_.observer;
  cfg->sync_batch = std::clamp<std::size_t>(params_.read_batch_max, 1, cfg->pipeline_depth);
  conn_cfg_ = std::move(cfg);

  loops_ = std::make_shared<event_loops>(options_, external,
                                         [this](log_level level, const std::string& line) { log(level, line); });
  pool_ex_ = loops_->first();
  tick_timer_ = std::make_unique<asio::steady_timer>(pool_ex_);
}

client_impl::~client_impl() {
  // shutdown() ran (async_client's destructor). The watchdog logs through us:
  // it ends here, while the loops object may live on in a caller's io_context.
  loops_->stop_watchdog();
}

void client_impl::start() {
  loops_->start();
  todo t;
  {
    std::lock_guard lk(mu_);
    core_.start(pool_clock::now());
    collect_locked(t, true);
  }
  run(t);
}

void client_impl::shutdown() {
  {
    std::lock_guard lk(mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  close();
  if (!loops_->external() && !loops_->on_own_thread()) {
    // Let work in flight finish, for a bounded time: a query that runs for
    // minutes must not make a destructor hang for minutes.
    std::unique_lock lk(mu_);
    drained_cv_.wait_for(lk, std::chrono::seconds(2), [this] { return live_conns_ == 0 && core_.is_drained(); });
  }
  std::vector<std::shared_ptr<pipelined_connection>> rest;
  {
    std::lock_guard lk(mu_);
    for (auto& [id, c] : conns_) rest.push_back(c);
  }
  for (auto& c : rest) asio::post(c->get_executor(), [c] { c->abort(); });
  loops_->stop_watchdog();
  // Weak, as in stop_probes(): on a caller's io_context this may run after
  // the impl (and its timer) is gone.
  asio::post(pool_ex_, [w = weak_from_this()] {
    if (auto self = w.lock()) self->tick_timer_->cancel();
  });
  loops_->join();
}

asio::any_io_executor client_impl::get_executor() const noexcept { return loops_->first(); }

// ---- pool bookkeeping ---------------------------------------------------------------

void client_impl::collect_locked(todo& out, bool timing_may_change) {
  auto actions = core_.take_actions();
  // Read the clock only when a waiter leaves the queue (its wait ends now).
  std::optional<time_point> now_cache;
  auto now = [&] { return now_cache ? *now_cache : *(now_cache = pool_clock::now()); };
  for (auto& a : actions) {
    switch (a.what) {
      case pool_action::kind::open: {
        auto c = std::make_shared<pipelined_connection>(loops_->executor_for_new_connection(), a.slot, conn_cfg_,
                                                        std::weak_ptr<connection_owner>(shared_from_this()));
        conns_[a.slot] = c;
        ++live_conns_;
        out.push_back([c, cex = loops_->connector_for(c->get_executor())] {
          asio::post(c->get_executor(), [c, cex] { c->start(cex); });
        });
        break;
      }
      case pool_action::kind::close: {
        auto it = conns_.find(a.slot);
        if (it == conns_.end()) break;
        auto c = it->second;
        conns_.erase(it);
        out.push_back([c] { asio::post(c->get_executor(), [c] { c->close(); }); });
        break;
      }
      case pool_action::kind::check: {
        auto it = conns_.find(a.slot);
        if (it == conns_.end()) break;
        auto c = it->second;
        out.push_back([c] { asio::post(c->get_executor(), [c] { c->check(); }); });
        break;
      }
      case pool_action::kind::grant: {
        auto cit = conns_.find(a.slot);
        if (auto qit = query_waiters_.find(a.waiter); qit != query_waiters_.end()) {
          auto req = qit->second;
          query_waiters_.erase(qit);
          req->waiter = 0;
          if (cit == conns_.end()) {
            out.push_back([this, req] { complete_query_failure(req, make_error_code(errc::not_sent), "connection gone"); });
            break;
          }
          req->conn = cit->second;
          req->slot = a.slot;
          req->pooled = true;
          req->waited = now() - req->submitted;
          metrics_.record_wait(req->waited);
          out.push_back([this, c = cit->second, req] { post_enqueue(c, req); });
        } else if (auto ait = acquire_waiters_.find(a.waiter); ait != acquire_waiters_.end()) {
          auto req = ait->second;
          acquire_waiters_.erase(ait);
          req->waiter = 0;
          metrics_.record_wait(now() - req->submitted);
          if (cit == conns_.end()) {
            out.push_back([this, req] { complete_acquire_failure(req, make_error_code(errc::not_sent), "connection gone"); });
            break;
          }
          auto impl = std::make_shared<lease_impl>(cit->second, a.slot, shared_from_this());
          out.push_back([req, impl, this, slot = a.slot] {
            if (!req->try_complete(impl->get_executor(), {}, lease(impl))) {
              // Cancelled as it was granted: the lease destructor (in
              // try_complete's discarded argument) gave the connection back.
            }
            (void)slot;
          });
        }
        break;
      }
      case pool_action::kind::fail: {
        std::string msg = connect_error_message_locked(a.ec);
        if (auto qit = query_waiters_.find(a.waiter); qit != query_waiters_.end()) {
          auto req = qit->second;
          query_waiters_.erase(qit);
          req->waiter = 0;
          req->waited = now() - req->submitted;
          metrics_.record_wait(req->waited);
          auto ec = a.ec;
          // The caller's own query deadline was the binding one: say so.
          if (ec == errc::pool_timeout && req->deadline <= pool_clock::now()) ec = make_error_code(errc::query_timeout);
          out.push_back([this, req, ec, msg] { complete_query_failure(req, ec, msg); });
        } else if (auto ait = acquire_waiters_.find(a.waiter); ait != acquire_waiters_.end()) {
          auto req = ait->second;
          acquire_waiters_.erase(ait);
          req->waiter = 0;
          metrics_.record_wait(now() - req->submitted);
          out.push_back([this, req, ec = a.ec, msg] { complete_acquire_failure(req, ec, msg); });
        }
        break;
      }
    }
  }
  if (!actions.empty()) timing_may_change = true;
  if (timing_may_change || tick_at_ == time_point::max()) {
    auto nt = core_.next_timer();
    if (nt && *nt < tick_at_) {
      tick_at_ = *nt;
      auto gen = ++tick_gen_;
      auto at = *nt;
      // Weak: a handler left in a stopped loop's queue must not keep the
      // client (which owns that loop) alive.
      out.push_back([weak = weak_from_this(), ex = pool_ex_, at, gen] {
        asio::post(ex, [weak, at, gen] {
          if (auto self = weak.lock()) self->arm_tick(at, gen);
        });
      });
    }
  }
  maybe_closed_locked(out);
}

std::string client_impl::connect_error_message_locked(const std::error_code& ec) const {
  if (is_connect_error(ec) && !last_connect_message_.empty()) return connect_error_text(last_connect_message_);
  return ec.message();
}

void client_impl::run(todo& t) {
  for (auto& f : t) f();
  t.clear();
}

void client_impl::arm_tick(time_point at, std::uint64_t gen) {
  {
    std::lock_guard lk(mu_);
    if (gen != tick_gen_) return;
  }
  tick_timer_->expires_at(at);
  tick_timer_->async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
    if (ec) return;
    if (auto self = weak.lock()) self->on_tick();
  });
}

void client_impl::on_tick() {
  todo t;
  {
    std::lock_guard lk(mu_);
    tick_at_ = time_point::max();
    core_.on_tick(pool_clock::now());
    collect_locked(t, true);
  }
  run(t);
}

void client_impl::complete_query_failure(const std::shared_ptr<query_request>& req, std::error_code ec,
                                         std::string message) {
  if (req->completed.load(std::memory_order_acquire)) return;
  metrics_.count_unstarted_failure(ec);
  const auto now = pool_clock::now();
  auto r = client_error_result(std::move(message));
  end_query(metrics_, *req, ec, r, now);
  req->try_complete(loops_->first(), true, ec, std::move(r));
}

void client_impl::finish_unstarted(const std::shared_ptr<query_request>& req, const asio::any_io_executor& ex,
                                   std::error_code ec, result r) {
  if (req->completed.load(std::memory_order_acquire)) return;
  end_query(metrics_, *req, ec, r, pool_clock::now());
  req->try_complete(ex, true, ec, std::move(r));
}

void client_impl::post_enqueue(const std::shared_ptr<pipelined_connection>& conn,
                               const std::shared_ptr<query_request>& req) const {
  // The observer is reached through the connection (which the handler
  // holds, and which holds it): on a caller's io_context the handler may run
  // after the client is gone, and no reference count is touched per query.
  asio::post(conn->get_executor(), [c = conn, req] {
    if (query_observer* obs = c->observer()) observe_request_start(*obs, *req, *c);
    c->enqueue(req);
  });
}

void client_impl::complete_acquire_failure(const std::shared_ptr<acquire_request>& req, std::error_code ec,
                                           std::string message) {
  (void)message;
  if (ec == errc::cancelled) metrics_.count_error(ec);
  req->try_complete(loops_->first(), ec, lease());
}

void client_impl::maybe_closed_locked(todo& out) {
  if (!core_.is_closed() || !core_.is_drained() || live_conns_ != 0) return;
  drained_cv_.notify_all();
  if (tick_at_ != time_point::max() || !tick_stopped_) {
    // Nothing is left to time: a pending pool timer must not keep a caller's
    // io_context running after close.
    tick_stopped_ = true;
    tick_at_ = time_point::max();
    ++tick_gen_;
    out.push_back([weak = weak_from_this(), ex = pool_ex_] {
      asio::post(ex, [weak] {
        if (auto self = weak.lock()) self->tick_timer_->cancel();
      });
    });
  }
  if (close_waiters_.empty()) return;
  auto waiters = std::make_shared<std::vector<std::unique_ptr<completion<std::monostate>>>>(std::move(close_waiters_));
  close_waiters_.clear();
  out.push_back([waiters, ex = loops_->first()] {
    for (auto& w : *waiters) w->complete(ex, true, {}, {});
  });
}

// ---- operations ---------------------------------------------------------------------

void client_impl::submit_query(query_spec spec, std::unique_ptr<completion<result>> done,
                               asio::cancellation_slot slot) {
  auto req = std::make_shared<query_request>();
  req->done = std::move(done);
  const auto now = pool_clock::now();
  req->submitted = now;
  if (spec.params.ec) {
    metrics_.count_error(spec.params.ec);
    auto ec = spec.params.ec;
    auto msg = std::move(spec.params.error_message);
    req->spec.sql = std::move(spec.sql);
    finish_unstarted(req, loops_->first(), ec, client_error_result(std::move(msg)));
    return;
  }
  // Sharing rules (core/shared_statement.hpp): a shared connection refuses
  // BEGIN and session-changing statements before anything is sent. Leases
  // (lease_impl::submit_query) are not checked.
  if (auto refused = check_shared_sql(spec.sql)) {
    metrics_.count_error(make_error_code(refused->code));
    req->spec.sql = std::move(spec.sql);
    finish_unstarted(req, loops_->first(), make_error_code(refused->code), client_error_result(refused->message));
    return;
  }
  if (params_.read_only_queries) spec.read_only = true;
  req->deadline = add_or_max(now, spec.timeout.value_or(params_.query_timeout));
  req->spec = std::move(spec);
  req->owner = weak_from_this();
  if (slot.is_connected()) slot.template emplace<query_cancel_hook>(query_cancel_hook{req});

  todo t;
  // The common case (capacity at once) is carried out after the lock without
  // a todo entry: a std::function holding the request would cost an
  // allocation per query.
  std::shared_ptr<pipelined_connection> granted;
  {
    std::lock_guard lk(mu_);
    const auto acquire_deadline = std::min(add_or_max(now, params_.acquire_timeout), req->deadline);
    auto out = core_.request(now, request_kind::shared, acquire_deadline);
    bool timing = false;
    switch (out.what) {
      case request_outcome::kind::granted: {
        granted = conns_.at(out.slot);
        req->conn = granted;
        req->slot = out.slot;
        req->pooled = true;
        metrics_.record_wait(std::chrono::nanoseconds(0));
        break;
      }
      case request_outcome::kind::queued:
        req->waiter = out.waiter;
        query_waiters_.emplace(out.waiter, req);
        timing = true;
        break;
      case request_outcome::kind::rejected: {
        std::string msg = connect_error_message_locked(out.ec);
        t.push_back([this, req, ec = out.ec, msg] { complete_query_failure(req, ec, msg); });
        break;
      }
    }
    collect_locked(t, timing);
  }
  if (granted) post_enqueue(granted, req);
  run(t);
}

void client_impl::submit_acquire(std::unique_ptr<completion<lease>> done, asio::cancellation_slot slot) {
  auto req = std::make_shared<acquire_request>();
  req->done = std::move(done);
  if (slot.is_connected())
    slot.template emplace<acquire_cancel_hook>(acquire_cancel_hook{req, weak_from_this()});
  const auto now = pool_clock::now();
  req->submitted = now;
  todo t;
  {
    std::lock_guard lk(mu_);
    auto out = core_.request(now, request_kind::exclusive, add_or_max(now, params_.acquire_timeout));
    bool timing = false;
    switch (out.what) {
      case request_outcome::kind::granted: {
        metrics_.record_wait(std::chrono::nanoseconds(0));
        auto impl = std::make_shared<lease_impl>(conns_.at(out.slot), out.slot, shared_from_this());
        t.push_back([req, impl] { req->try_complete(impl->get_executor(), {}, lease(impl)); });
        break;
      }
      case request_outcome::kind::queued:
        req->waiter = out.waiter;
        acquire_waiters_.emplace(out.waiter, req);
        timing = true;
        break;
      case request_outcome::kind::rejected: {
        std::string msg = connect_error_message_locked(out.ec);
        t.push_back([this, req, ec = out.ec, msg] { complete_acquire_failure(req, ec, msg); });
        break;
      }
    }
    collect_locked(t, timing);
  }
  run(t);
}

void client_impl::submit_close(std::unique_ptr<completion<std::monostate>> done) {
  loops_->stop_probes();
  todo t;
  {
    std::lock_guard lk(mu_);
    close_waiters_.push_back(std::move(done));
    core_.close(pool_clock::now());
    collect_locked(t, true);
  }
  run(t);
}

void client_impl::close() {
  loops_->stop_probes();
  todo t;
  {
    std::lock_guard lk(mu_);
    core_.close(pool_clock::now());
    collect_locked(t, true);
  }
  run(t);
}

void client_impl::cancel_query(const std::shared_ptr<query_request>& req, asio::cancellation_type_t type) {
  std::shared_ptr<pipelined_connection> conn;
  {
    std::lock_guard lk(mu_);
    if (req->waiter != 0) {
      // Still waiting for capacity: nothing was sent, any type removes it.
      if (core_.cancel(req->waiter)) {
        query_waiters_.erase(req->waiter);
        req->waiter = 0;
      }
    } else {
      conn = req->conn;
    }
  }
  if (conn) {
    asio::post(conn->get_executor(), [conn, req, type] { conn->cancel(req, type); });
    return;
  }
  complete_query_failure(req, make_error_code(errc::cancelled), "cancelled while waiting for a connection");
}

void client_impl::cancel_acquire(const std::shared_ptr<acquire_request>& req) {
  {
    std::lock_guard lk(mu_);
    if (req->waiter == 0 || !core_.cancel(req->waiter)) return;
    acquire_waiters_.erase(req->waiter);
    req->waiter = 0;
  }
  complete_acquire_failure(req, make_error_code(errc::cancelled), "cancelled");
}

// ---- connection events ----------------------------------------------------------------

void client_impl::conn_connected(slot_id slot) {
  todo t;
  {
    std::lock_guard lk(mu_);
    core_.on_open_succeeded(pool_clock::now(), slot);
    collect_locked(t, true);
  }
  run(t);
}

void client_impl::conn_connect_failed(slot_id slot, std::error_code ec, const std::string& message) {
  todo t;
  {
    std::lock_guard lk(mu_);
    last_connect_message_ = message;
    conns_.erase(slot);
    if (live_conns_ > 0) --live_conns_;
    core_.on_open_failed(pool_clock::now(), slot, ec);
    collect_locked(t, true);
  }
  run(t);
}

void client_impl::conn_broken(slot_id slot, const std::string&) {
  todo t;
  {
    std::lock_guard lk(mu_);
    core_.on_broken(pool_clock::now(), slot);
    collect_locked(t, true);
  }
  run(t);
}

void client_impl::conn_release(slot_id slot, std::size_t units) {
  todo t;
  {
    std::lock_guard lk(mu_);
    const auto now = pool_clock::now();
    for (std::size_t i = 0; i < units; ++i) core_.release(now, slot, request_kind::shared);
    // A connection going idle starts its idle/health-check clocks.
    collect_locked(t, core_.load_of(slot) == 0);
  }
  run(t);
}

void client_impl::conn_check_done(slot_id slot, bool healthy) {
  todo t;
  {
    std::lock_guard lk(mu_);
    core_.on_check_done(pool_clock::now(), slot, healthy);
    collect_locked(t, true);
  }
  run(t);
}

void client_impl::retire_after_lease(slot_id slot) {
  std::lock_guard lk(mu_);
  retire_on_return_.insert(slot);
}

void client_impl::conn_lease_returned(slot_id slot) {
  todo t;
  {
    std::lock_guard lk(mu_);
    if (retire_on_return_.erase(slot) != 0) {
      // The lease changed the session: close it (pool_core opens a
      // replacement, which runs pool_params::on_connect afresh).
      core_.on_broken(pool_clock::now(), slot);
    } else {
      core_.release(pool_clock::now(), slot, request_kind::exclusive);
    }
    collect_locked(t, true);
  }
  run(t);
}

void client_impl::conn_finished(slot_id slot) {
  todo t;
  {
    std::lock_guard lk(mu_);
    conns_.erase(slot);
    if (live_conns_ > 0) --live_conns_;
    collect_locked(t, false);
  }
  run(t);
}

void client_impl::count_outcome(const query_request& req, const std::error_code& ec, const result& r) {
  end_query(metrics_, req, ec, r, pool_clock::now());
  metrics_.count_completed(ec);
}

void client_impl::log(log_level level, const std::string& line) { metrics_.log(level, line); }

void client_impl::set_logger(logger_fn fn) { metrics_.set_logger(std::move(fn)); }

pool_stats client_impl::stats() const {
  pool_stats s;
  {
    std::lock_guard lk(mu_);
    core_.fill_stats(s);
  }
  metrics_.fill_stats(s);
  s.loop_lag_last = loops_->lag_last();
  s.loop_lag_max = loops_->lag_max();
  s.threads = loops_->thread_count();
  return s;
}

}  // namespace pgpipe::detail
