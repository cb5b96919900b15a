// client_impl (contract in client_impl.hpp): construction, and what the
// client observes of its queries: the logger slot, the query observer's
// hooks, the outcome counters and stats(). The rest of the class lives in
// client_lifecycle.cpp, client_operations.cpp, client_pool_actions.cpp and
// client_connection_events.cpp.
#include "async/pool/client_impl.hpp"

#include "pq/libpq_failure.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>

#include <algorithm>

namespace pgpipe::detail {

namespace asio = boost::asio;

namespace {

std::uint64_t rows_of(const result& r) noexcept { return r.size() != 0 ? r.size() : r.affected_rows(); }

// The observer runs on the hot path: nothing it throws may reach a
// connection's read loop.
void observe_start(query_observer& obs, query_request& req, const pipelined_connection& c) {
  if (req.completed.load(std::memory_order_acquire)) return;  // cancelled on its way: enqueue drops it
  req.started = pool_clock::now();
  req.backend_pid = c.backend_pid();
  query_event e;
  e.sql = req.spec.sql;
  e.slot = c.slot();
  e.backend_pid = req.backend_pid;
  e.on_lease = req.on_lease;
  e.wait = req.waited;
  try {
    req.observer_user = obs.on_start(e);
  } catch (...) {
  }
  req.observed_start = true;
}

void observe_end(query_observer& obs, const query_request& req, const std::error_code& ec, const result& r,
                 time_point now) {
  query_event e;
  e.sql = req.spec.sql;
  e.on_lease = req.on_lease;
  e.wait = req.waited;
  e.total = now - req.submitted;
  e.ec = ec;
  e.sqlstate = r.diag().sqlstate;
  if (!ec) e.rows = rows_of(r);
  if (req.observed_start) {
    e.started = true;
    e.slot = req.slot;
    e.backend_pid = req.backend_pid;
    e.server = now - req.started;
    e.user = req.observer_user;
  }
  try {
    obs.on_end(e);
  } catch (...) {
  }
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

client_impl::client_impl(pool_params params, async_client_options options, asio::io_context* external)
    : params_(std::move(params)),
      options_(std::move(options)),
      core_(params_, std::max<std::size_t>(1, params_.pipeline_depth)) {
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
  if (options_.logger) logger_ = std::make_shared<const logger_fn>(std::move(options_.logger));
  observer_ = params_.observer;

  loops_ = std::make_shared<event_loops>(options_, external,
                                         [this](log_level level, const std::string& line) { log(level, line); });
  pool_ex_ = loops_->first();
  tick_timer_ = std::make_unique<asio::steady_timer>(pool_ex_);
}

void client_impl::complete_query_failure(const std::shared_ptr<query_request>& req, std::error_code ec,
                                         std::string message) {
  if (req->completed.load(std::memory_order_acquire)) return;
  if (ec == errc::cancelled) {
    err_cancelled_.fetch_add(1, std::memory_order_relaxed);
  } else if (ec == errc::query_timeout) {
    err_timeout_.fetch_add(1, std::memory_order_relaxed);
  } else if (ec != errc::pool_timeout && ec != errc::queue_full && ec != errc_condition::connect_error &&
             ec.category() != sqlstate_category()) {
    err_other_.fetch_add(1, std::memory_order_relaxed);
  }
  const auto now = pool_clock::now();
  query_hist_.record(now - req->submitted);
  auto r = client_error_result(std::move(message));
  if (observer_) observe_end(*observer_, *req, ec, r, now);
  req->try_complete(loops_->first(), true, ec, std::move(r));
}

void client_impl::finish_unstarted(const std::shared_ptr<query_request>& req, const asio::any_io_executor& ex,
                                   std::error_code ec, result r) {
  if (req->completed.load(std::memory_order_acquire)) return;
  const auto now = pool_clock::now();
  query_hist_.record(now - req->submitted);
  if (observer_) observe_end(*observer_, *req, ec, r, now);
  req->try_complete(ex, true, ec, std::move(r));
}

void client_impl::post_enqueue(const std::shared_ptr<pipelined_connection>& conn,
                               const std::shared_ptr<query_request>& req) const {
  // The observer is reached through the connection (which the handler
  // holds, and which holds it): on a caller's io_context the handler may run
  // after the client is gone, and no reference count is touched per query.
  asio::post(conn->get_executor(), [c = conn, req] {
    if (query_observer* obs = c->observer()) observe_start(*obs, *req, *c);
    c->enqueue(req);
  });
}

void client_impl::complete_acquire_failure(const std::shared_ptr<acquire_request>& req, std::error_code ec,
                                           std::string message) {
  (void)message;
  if (ec == errc::cancelled) err_cancelled_.fetch_add(1, std::memory_order_relaxed);
  req->try_complete(loops_->first(), ec, lease());
}

void client_impl::count_outcome(const query_request& req, const std::error_code& ec, const result& r) {
  const auto now = pool_clock::now();
  query_hist_.record(now - req.submitted);
  if (observer_) observe_end(*observer_, req, ec, r, now);
  completed_.fetch_add(1, std::memory_order_relaxed);
  if (!ec) return;
  if (ec.category() == sqlstate_category()) {
    err_server_.fetch_add(1, std::memory_order_relaxed);
  } else if (ec == errc_condition::connection_lost) {
    err_lost_.fetch_add(1, std::memory_order_relaxed);
  } else if (ec == errc::query_timeout) {
    err_timeout_.fetch_add(1, std::memory_order_relaxed);
  } else if (ec == errc::cancelled) {
    err_cancelled_.fetch_add(1, std::memory_order_relaxed);
  } else {
    err_other_.fetch_add(1, std::memory_order_relaxed);
  }
}

void client_impl::log(log_level level, const std::string& line) {
  std::shared_ptr<const logger_fn> l;
  {
    std::lock_guard lk(log_mu_);
    l = logger_;
  }
  if (!l || !*l) return;
  try {
    (*l)(level, line);
  } catch (...) {
    // A logger that throws must not take a connection down with it.
  }
}

void client_impl::set_logger(logger_fn fn) {
  auto p = fn ? std::make_shared<const logger_fn>(std::move(fn)) : nullptr;
  std::lock_guard lk(log_mu_);
  logger_ = std::move(p);
}

pool_stats client_impl::stats() const {
  pool_stats s;
  {
    std::lock_guard lk(mu_);
    core_.fill_stats(s);
  }
  s.completed = completed_.load(std::memory_order_relaxed);
  s.errors.connection_lost = err_lost_.load(std::memory_order_relaxed);
  s.errors.query_timeout = err_timeout_.load(std::memory_order_relaxed);
  s.errors.cancelled = err_cancelled_.load(std::memory_order_relaxed);
  s.errors.server = err_server_.load(std::memory_order_relaxed);
  s.errors.other = err_other_.load(std::memory_order_relaxed);
  s.loop_lag_last = loops_->lag_last();
  s.loop_lag_max = loops_->lag_max();
  s.threads = loops_->thread_count();
  s.query_duration = query_hist_.snapshot();
  s.acquire_wait = wait_hist_.snapshot();
  return s;
}

}  // namespace pgpipe::detail
