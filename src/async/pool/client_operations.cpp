// client_impl: the caller's operations on the pool (queries on the shared
// path, lease acquisition) and their cancellation (contract in
// client_impl.hpp). Grants that arrive later are carried out in
// client_pool_actions.cpp.
#include "async/pool/client_impl.hpp"

#include "async/pool/request_hooks.hpp"
#include "async/pool/waiter_failure.hpp"
#include "core/sql/shared_statement.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <optional>
#include <string>

namespace pgpipe::detail {

namespace asio = boost::asio;

namespace {

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

}  // namespace

void pool_cancel_hook::operator()(asio::cancellation_type_t type) const {
  auto t = ticket.lock();
  if (!t || t->wire.completed.load(std::memory_order_acquire)) return;
  if (auto owner = t->owner.lock()) {
    owner->cancel_query(t, type);
    return;
  }
  // The client is gone, so nothing grants or writes `conn` any more; a
  // connection that outlived it (a caller's io_context) still cancels.
  if (auto c = t->conn.lock()) asio::post(c->get_executor(), [c, r = wire_of(t), type] { c->cancel(r, type); });
}

void lease_cancel_hook::operator()(asio::cancellation_type_t type) const {
  auto r = req.lock();
  if (!r || r->completed.load(std::memory_order_acquire)) return;
  if (auto c = conn.lock()) asio::post(c->get_executor(), [c, r, type] { c->cancel(r, type); });
}

bool acquire_request::try_complete(const asio::any_io_executor& ex, std::error_code ec, async_lease l) {
  if (completed.exchange(true, std::memory_order_acq_rel)) return false;
  auto d = std::move(done);
  d->complete(ex, true, ec, std::move(l));
  return true;
}

void client_impl::build_query_request(query_request& req, query_spec spec, std::unique_ptr<completion<result>> done,
                                      time_point now, bool on_lease) const {
  req.on_lease = on_lease;
  req.metrics = metrics_.get();
  req.set_handler(std::move(done));
  req.submitted = now;
  req.deadline = add_or_max(now, spec.timeout.value_or(params_.query_timeout));
  req.spec = std::move(spec);
}

std::shared_ptr<query_request> client_impl::new_query_request(query_spec spec,
                                                              std::unique_ptr<completion<result>> done,
                                                              time_point now, bool on_lease) const {
  auto req = std::make_shared<query_request>();
  build_query_request(*req, std::move(spec), std::move(done), now, on_lease);
  return req;
}

bool client_impl::refuse_unencodable(const std::shared_ptr<query_request>& req, const asio::any_io_executor& ex) {
  if (!req->spec.params.ec) return false;
  const std::error_code ec = req->spec.params.ec;
  finish_unstarted(req, ex, ec, client_error_result(std::move(req->spec.params.error_message)));
  return true;
}

slot_group client_impl::caller_loop_group() const noexcept {
  // One loop: every connection is on it, nothing to prefer.
  if (loops_->size() < 2) return no_slot_group;
  const auto loop = loops_->current_loop();
  return loop ? *loop : no_slot_group;
}

void client_impl::submit_query(query_spec spec, std::unique_ptr<completion<result>> done,
                               asio::cancellation_slot slot) {
  const auto now = pool_clock::now();
  if (params_.read_only_queries) spec.read_only = true;
  // The ticket and its wire request: one allocation (pool_ticket.hpp).
  auto t = std::make_shared<pool_ticket>();
  query_request& req = t->wire;
  build_query_request(req, std::move(spec), std::move(done), now, false);
  if (req.spec.params.ec && refuse_unencodable(wire_of(t), loops_->first())) return;
  // Sharing rules (core/sql/shared_statement.hpp): a shared connection refuses
  // BEGIN and session-changing statements before anything is sent. Leases
  // (lease_impl::submit_query) are not checked.
  if (auto refused = check_shared_sql(req.spec.sql)) {
    finish_unstarted(wire_of(std::move(t)), loops_->first(), make_error_code(refused->code),
                     client_error_result(refused->message));
    return;
  }
  t->owner = weak_from_this();
  if (slot.is_connected()) slot.template emplace<pool_cancel_hook>(pool_cancel_hook{t});

  const slot_group home = caller_loop_group();
  todo later;
  // The common case (capacity at once) is carried out after the lock without
  // a todo entry: a std::function holding the request would cost an
  // allocation per query.
  std::shared_ptr<pipelined_connection> granted;
  {
    std::lock_guard lk(mu_);
    auto out = core_.request(now, request_kind::shared,
                             query_wait_deadline(now, params_.acquire_timeout, req.deadline), home);
    bool timing = false;
    switch (out.what) {
      case request_outcome::kind::granted:
        granted = actions_.grant_now(*t, out.slot);
        break;
      case request_outcome::kind::queued:
        actions_.queue_query(out.waiter, t);
        timing = true;
        break;
      case request_outcome::kind::rejected: {
        diagnostics msg = actions_.connect_error_diag(out.ec);
        later.push_back([this, t, ec = out.ec, msg] { complete_query_failure(t, ec, msg); });
        break;
      }
    }
    collect_locked(later, timing);
  }
  if (granted) post_enqueue(granted, wire_of(std::move(t)));
  run(later);
}

void client_impl::submit_acquire(std::unique_ptr<completion<async_lease>> done, asio::cancellation_slot slot) {
  auto req = std::make_shared<acquire_request>();
  req->done = std::move(done);
  if (slot.is_connected())
    slot.template emplace<acquire_cancel_hook>(acquire_cancel_hook{req, weak_from_this()});
  const auto now = pool_clock::now();
  req->submitted = now;
  const slot_group home = caller_loop_group();
  todo t;
  {
    std::lock_guard lk(mu_);
    auto out = core_.request(now, request_kind::exclusive, add_or_max(now, params_.acquire_timeout), home);
    bool timing = false;
    switch (out.what) {
      case request_outcome::kind::granted:
        t.push_back([d = pool_driver{this}, req, c = actions_.lease_now(out.slot), s = out.slot] {
          d.grant_lease(req, c, s);
        });
        break;
      case request_outcome::kind::queued:
        actions_.queue_acquire(out.waiter, req);
        timing = true;
        break;
      case request_outcome::kind::rejected: {
        diagnostics msg = actions_.connect_error_diag(out.ec);
        t.push_back([this, req, ec = out.ec, msg] { complete_acquire_failure(req, ec, msg); });
        break;
      }
    }
    collect_locked(t, timing);
  }
  run(t);
}

void client_impl::cancel_query(const std::shared_ptr<pool_ticket>& t, asio::cancellation_type_t type) {
  std::shared_ptr<pipelined_connection> conn;
  {
    std::lock_guard lk(mu_);
    // Still waiting for capacity: nothing was sent, any type removes it.
    // Otherwise it was granted (its connection cancels it) or failed: that
    // failure and the one below race, and try_complete lets one answer.
    if (!actions_.withdraw_query(core_, *t)) conn = t->conn.lock();
  }
  if (conn) {
    asio::post(conn->get_executor(), [conn, req = wire_of(t), type] { conn->cancel(req, type); });
    return;
  }
  complete_query_failure(t, make_error_code(errc::cancelled), "cancelled while waiting for a connection");
}

void client_impl::cancel_acquire(const std::shared_ptr<acquire_request>& req) {
  {
    std::lock_guard lk(mu_);
    if (!actions_.withdraw_acquire(core_, *req)) return;
  }
  complete_acquire_failure(req, make_error_code(errc::cancelled), "cancelled");
}

}  // namespace pgpipe::detail
