// client_impl: the pool bookkeeping (contract in client_impl.hpp). Every
// pool_core call ends with collect_locked, under mu_: it takes the core's
// actions in order and turns each into state changes made now (the maps) and
// work run after the unlock (posts to connections, handlers), because
// nothing may run a handler or touch a connection with mu_ held. It also
// keeps the pool's single timer armed for pool_core's next deadline.
#include "async/pool/client_impl.hpp"

#include "async/pool/waiter_failure.hpp"
#include "core/pool/connect_error.hpp"
#include "pq/libpq_failure.hpp"

#include <boost/asio/post.hpp>

#include <string>

namespace pgpipe::detail {

namespace asio = boost::asio;

void client_impl::collect_locked(todo& out, bool timing_may_change) {
  auto actions = core_.take_actions();
  lazy_now now;
  for (auto& a : actions) {
    switch (a.what) {
      case pool_action::kind::open:
        open_connection_locked(out, a.slot);
        break;
      case pool_action::kind::close:
        close_connection_locked(out, a.slot);
        break;
      case pool_action::kind::check:
        check_connection_locked(out, a.slot);
        break;
      case pool_action::kind::grant:
        grant_locked(out, a, now);
        break;
      case pool_action::kind::fail:
        fail_locked(out, a, now);
        break;
    }
  }
  if (!actions.empty()) timing_may_change = true;
  if (timing_may_change || tick_.unaimed()) rearm_tick_locked(out);
  maybe_closed_locked(out);
}

time_point client_impl::lazy_now::operator()() {
  if (!at_) at_ = pool_clock::now();
  return *at_;
}

void client_impl::open_connection_locked(todo& out, slot_id slot) {
  auto home = loops_->home_for_new_connection();
  auto c = std::make_shared<pipelined_connection>(std::move(home.ex), slot, conn_cfg_,
                                                  std::weak_ptr<connection_owner>(shared_from_this()));
  // Requests started on this loop prefer this connection (loop affinity,
  // async_client.hpp): no hop between threads on the way in or out.
  if (home.loop) core_.set_group(slot, *home.loop);
  conns_[slot] = c;
  ++live_conns_;
  out.push_back([c, cex = loops_->connector_for(c->get_executor())] {
    asio::post(c->get_executor(), [c, cex] { c->start(cex); });
  });
}

void client_impl::close_connection_locked(todo& out, slot_id slot) {
  auto it = conns_.find(slot);
  if (it == conns_.end()) return;
  auto c = it->second;
  conns_.erase(it);
  out.push_back([c] { asio::post(c->get_executor(), [c] { c->close(); }); });
}

void client_impl::check_connection_locked(todo& out, slot_id slot) {
  auto it = conns_.find(slot);
  if (it == conns_.end()) return;
  auto c = it->second;
  out.push_back([c] { asio::post(c->get_executor(), [c] { c->check(); }); });
}

void client_impl::grant_locked(todo& out, const pool_action& a, lazy_now& now) {
  auto cit = conns_.find(a.slot);
  if (auto t = query_waiters_.take(a.waiter)) {
    if (cit == conns_.end()) {
      out.push_back([this, t] { complete_query_failure(t, make_error_code(errc::not_sent), "connection gone"); });
      return;
    }
    t->conn = cit->second;
    query_request& req = t->wire;
    req.pooled = true;
    req.waited = now() - req.submitted;
    metrics_->record_wait(req.waited);
    out.push_back([this, c = cit->second, w = wire_of(std::move(t))] { post_enqueue(c, w); });
  } else if (auto areq = acquire_waiters_.take(a.waiter)) {
    metrics_->record_wait(now() - areq->submitted);
    if (cit == conns_.end()) {
      out.push_back([this, areq] { complete_acquire_failure(areq, make_error_code(errc::not_sent), "connection gone"); });
      return;
    }
    auto impl = std::make_shared<lease_impl>(cit->second, a.slot, shared_from_this());
    // Cancelled as it was granted: try_complete refuses, and the lease's
    // destructor (its discarded argument) gives the connection back.
    out.push_back([areq, impl] { (void)areq->try_complete(impl->get_executor(), {}, async_lease(impl)); });
  }
}

void client_impl::fail_locked(todo& out, const pool_action& a, lazy_now& now) {
  diagnostics msg = connect_error_diag_locked(a.ec);
  if (auto t = query_waiters_.take(a.waiter)) {
    query_request& req = t->wire;
    req.waited = now() - req.submitted;
    metrics_->record_wait(req.waited);
    const auto ec = waiter_failure_code(a.ec, req.deadline, pool_clock::now());
    out.push_back([this, t, ec, msg] { complete_query_failure(t, ec, msg); });
  } else if (auto areq = acquire_waiters_.take(a.waiter)) {
    metrics_->record_wait(now() - areq->submitted);
    out.push_back([this, areq, ec = a.ec, msg] { complete_acquire_failure(areq, ec, msg); });
  }
}

void client_impl::rearm_tick_locked(todo& out) {
  auto order = tick_.aim(core_.next_timer());
  if (!order) return;
  // Weak: a handler left in a stopped loop's queue must not keep the
  // client (which owns that loop) alive.
  out.push_back([weak = weak_from_this(), ex = pool_ex_, at = order->at, gen = order->gen] {
    asio::post(ex, [weak, at, gen] {
      if (auto self = weak.lock()) self->arm_tick(at, gen);
    });
  });
}

diagnostics client_impl::connect_error_diag_locked(const std::error_code& ec) const {
  if (is_connect_error(ec) && !last_connect_message_.empty()) return last_connect_diag_;
  diagnostics d;
  d.client_message = ec.message();
  return d;
}

void client_impl::run(todo& t) {
  for (auto& f : t) f();
  t.clear();
}

void client_impl::arm_tick(time_point at, std::uint64_t gen) {
  {
    std::lock_guard lk(mu_);
    if (!tick_.current(gen)) return;
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
    tick_.fired();
    core_.on_tick(pool_clock::now());
    collect_locked(t, true);
  }
  run(t);
}

void client_impl::maybe_closed_locked(todo& out) {
  if (!core_.is_closed() || !core_.is_drained() || live_conns_ != 0) return;
  drained_cv_.notify_all();
  if (tick_.stop()) {
    // Nothing is left to time: a pending pool timer must not keep a caller's
    // io_context running after close.
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

}  // namespace pgpipe::detail
