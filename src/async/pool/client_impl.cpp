// client_impl (contract in client_impl.hpp): construction, and what the
// client observes of its queries through query_metrics: the logger slot, the
// query observer's hooks, the outcome counters and stats(). The rest of the
// class lives in client_lifecycle.cpp, client_operations.cpp,
// client_pool_actions.cpp and client_connection_events.cpp.
#include "async/pool/client_impl.hpp"

#include "async/connection/query_meter.hpp"
#include "pq/libpq_failure.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>

#include <algorithm>

namespace pgpipe::detail {

namespace asio = boost::asio;

namespace {

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
      metrics_(std::make_shared<query_metrics>(params_.observer, std::move(options_.logger))),
      core_(params_, std::max<std::size_t>(1, params_.pipeline_depth)),
      actions_(pool_driver{this}, *metrics_) {
  require_supported_libpq();
  auto cfg = std::make_shared<connection_config>();
  cfg->conninfo = params_.conninfo;
  cfg->secrets = passwords_of(params_.conninfo);
  cfg->hooks = connect_hooks_of(params_);
  cfg->connect_timeout = params_.connect_timeout;
  cfg->stall_timeout = params_.stall_timeout;
  cfg->pipeline_depth = std::max<std::size_t>(1, params_.pipeline_depth);
  cfg->prepared_statements = params_.prepared_statements;
  cfg->on_connect = session_statements(params_);
  cfg->observer = params_.observer;
  cfg->metrics = metrics_;
  cfg->sync_batch = std::clamp<std::size_t>(params_.read_batch_max, 1, cfg->pipeline_depth);
  const libpq_features& libpq = loaded_libpq_features();
  cfg->send_pipeline_sync = libpq.send_pipeline_sync;
  cfg->send_close_prepared = libpq.send_close_prepared;
  cfg->set_chunked_rows_mode = libpq.set_chunked_rows_mode;
  if (libpq.cancel_usable()) cfg->cancel_calls = &libpq;
  cfg->runtime = std::make_shared<runtime_record>(async_fast_paths(libpq));
  conn_cfg_ = std::move(cfg);

  loops_ = std::make_shared<event_loops>(options_, external,
                                         [this](log_level level, const std::string& line) { log(level, line); });
  pool_ex_ = loops_->first();
  tick_timer_ = std::make_unique<asio::steady_timer>(pool_ex_);
}

void client_impl::complete_query_failure(const std::shared_ptr<pool_ticket>& t, std::error_code ec,
                                         std::string message) {
  diagnostics d;
  d.client_message = std::move(message);
  complete_query_failure(t, ec, std::move(d));
}

void client_impl::complete_query_failure(const std::shared_ptr<pool_ticket>& t, std::error_code ec,
                                         diagnostics diag) {
  finish_unstarted(wire_of(t), loops_->first(), ec, result(std::move(diag)));
}

void client_impl::finish_unstarted(const std::shared_ptr<query_request>& req, const asio::any_io_executor& ex,
                                   std::error_code ec, result r) {
  if (req->completed.load(std::memory_order_acquire)) return;
  if (end_query(*metrics_, *req, ec, r, pool_clock::now())) metrics_->count_unstarted_failure(ec);
  req->try_complete(ex, true, ec, std::move(r));
}

void client_impl::post_handoff(const std::shared_ptr<pipelined_connection>& conn,
                               const std::shared_ptr<lease_handoff>& handoff, lease_handoff::entry e) const {
  hand_off(conn, handoff, std::move(e));
}

void client_impl::complete_acquire_failure(const std::shared_ptr<acquire_request>& req, std::error_code ec,
                                           std::string message) {
  diagnostics d;
  d.client_message = std::move(message);
  complete_acquire_failure(req, ec, std::move(d));
}

void client_impl::complete_acquire_failure(const std::shared_ptr<acquire_request>& req, std::error_code ec,
                                           diagnostics diag) {
  if (ec == errc::cancelled) metrics_->count_error(ec);
  req->try_complete(loops_->first(), ec, async_lease(std::move(diag)));
}

void client_impl::log(log_level level, const std::string& line) { metrics_->log(level, line); }

void client_impl::set_logger(logger_fn fn) { metrics_->set_logger(std::move(fn)); }

pool_stats client_impl::stats() const {
  pool_stats s;
  {
    std::lock_guard lk(mu_);
    core_.fill_stats(s);
  }
  metrics_->fill_stats(s);
  s.loop_lag_last = loops_->lag_last();
  s.loop_lag_max = loops_->lag_max();
  s.threads = loops_->thread_count();
  s.runtime = conn_cfg_->runtime->snapshot();
  return s;
}

}  // namespace pgpipe::detail
