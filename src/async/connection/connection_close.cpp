// pipelined_connection: health checks, rollback when a lease ends, close,
// teardown and the timer.
#include "async/connection/pipelined_connection.hpp"

#include <string>

namespace pgpipe::detail {

void pipelined_connection::check() {
  auto req = std::make_shared<query_request>();
  req->internal = true;
  req->spec.sql = "select 1";
  if (cfg_->connect_timeout.count() > 0) req->deadline = pool_clock::now() + cfg_->connect_timeout;
  // Weak: the request (and so this handler) is held by the connection.
  auto cb = [w = weak_from_this()](std::error_code ec, result) {
    auto self = w.lock();
    if (!self) return;
    if (auto owner = self->owner_.lock()) owner->conn_check_done(self->slot_, !ec);
  };
  req->set_handler(std::make_unique<completion_impl<result, decltype(cb)>>(std::move(cb)));
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
  // Weak: the request (and so this handler) is held by the connection.
  auto cb = [w = weak_from_this()](std::error_code ec, result) {
    auto self = w.lock();
    if (!self) return;
    if (ec) {
      // Could not roll back: never hand out a connection in an unknown state.
      self->break_connection("rollback on lease return failed: " + ec.message());
      return;
    }
    if (auto owner = self->owner_.lock()) owner->conn_lease_returned(self->slot_);
  };
  req->set_handler(std::make_unique<completion_impl<result, decltype(cb)>>(std::move(cb)));
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
  // Detached entries still hold their requests (the core borrows their SQL
  // text, see sql_key), and a request holds this connection: drop them.
  // Every one was answered already, so this completes nothing.
  core_.abort();
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
  solo_.reset();  // a COPY's holds the connection: break the cycle
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
  if (st_ == state::connecting) return;  // the connect_job has its own deadline
  core_.on_tick(now);
  apply();
}

}  // namespace pgpipe::detail
