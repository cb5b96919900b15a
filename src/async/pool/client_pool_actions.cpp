// client_impl: the pool bookkeeping (contract in client_impl.hpp). Every
// pool_core call ends with collect_locked, under mu_: pool_actions
// (pool_actions.hpp) takes the core's actions in order and turns each into
// state changes made now and work run after the unlock (posts to
// connections, handlers), because nothing may run a handler or touch a
// connection with mu_ held. Here: what pool_actions asks of the client (its
// pool_driver), and the pool's single timer, kept aimed at pool_core's next
// deadline.
#include "async/pool/client_impl.hpp"

#include <boost/asio/post.hpp>

#include <memory>
#include <utility>

namespace pgpipe::detail {

namespace asio = boost::asio;

void client_impl::collect_locked(todo& out, bool timing_may_change) {
  if (actions_.carry(core_, out)) timing_may_change = true;
  if (timing_may_change || tick_.unaimed()) rearm_tick_locked(out);
  maybe_closed_locked(out);
}

made_connection<pipelined_connection> client_impl::pool_driver::make_connection(slot_id slot) const {
  auto home = self->loops_->home_for_new_connection();
  made_connection<pipelined_connection> m;
  m.conn = std::make_shared<pipelined_connection>(std::move(home.ex), slot, self->conn_cfg_,
                                                  std::weak_ptr<connection_owner>(self->shared_from_this()));
  m.connector = self->loops_->connector_for(m.conn->get_executor());
  // Requests started on this loop prefer this connection (loop affinity,
  // async_client.hpp): no hop between threads on the way in or out.
  m.group = home.loop;
  return m;
}

void client_impl::pool_driver::fail_query(const std::shared_ptr<pool_ticket>& t, std::error_code ec,
                                          diagnostics diag) const {
  self->complete_query_failure(t, ec, std::move(diag));
}

void client_impl::pool_driver::fail_acquire(const std::shared_ptr<acquire_request>& req, std::error_code ec,
                                            diagnostics diag) const {
  self->complete_acquire_failure(req, ec, std::move(diag));
}

void client_impl::pool_driver::grant_lease(const std::shared_ptr<acquire_request>& req,
                                           const std::shared_ptr<pipelined_connection>& conn, slot_id slot) const {
  auto impl = std::make_shared<lease_impl>(conn, slot, self->shared_from_this());
  // Cancelled as it was granted: try_complete refuses, and the lease's
  // destructor (its discarded argument) gives the connection back.
  (void)req->try_complete(impl->get_executor(), {}, async_lease(impl));
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
  if (!core_.is_closed() || !core_.is_drained() || actions_.live() != 0) return;
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
