// pipelined_connection: the connect (handshake in a connect_job, off the
// loop), pipeline mode and session setup, then the pool hears of it.
#include "async/connection/pipelined_connection.hpp"

#include "async/connection/session_setup.hpp"
#include "pq/libpq_failure.hpp"

#include <boost/asio/post.hpp>

namespace pgpipe::detail {

namespace asio = boost::asio;

void pipelined_connection::start(asio::any_io_executor connect_ex) {
  if (st_ != state::created) return;
  st_ = state::connecting;
  auto hand_over = [weak = weak_from_this(), ex = ex_](pgconn_ptr pg, std::error_code ec, std::string message) {
    asio::post(ex, [weak, pg = std::move(pg), ec, message = std::move(message)]() mutable {
      // Gone: the PGconn is finished with the handler.
      if (auto self = weak.lock()) self->connect_done(std::move(pg), ec, message);
    });
  };
  connect_job::run(std::make_shared<connect_job>(std::move(connect_ex), cfg_->conninfo, cfg_->secrets,
                                                 cfg_->hooks, cfg_->connect_timeout, std::move(hand_over)));
}

void pipelined_connection::connect_done(pgconn_ptr pg, std::error_code ec, const std::string& message) {
  if (st_ != state::connecting) return;  // aborted meanwhile: `pg` is finished here
  if (ec) {
    connect_failed(ec, message);
    return;
  }
  pg_ = pg.release();
  secrets_ = secrets_of(pg_, cfg_->secrets);
  connected();
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
  cfg_->runtime->saw_connection(pg_);
  if (auto owner = owner_.lock()) {
    owner->log(log_level::info, "connected (slot " + std::to_string(slot_) + ", server " +
                                    std::to_string(PQserverVersion(pg_)) + ", backend pid " +
                                    std::to_string(PQbackendPID(pg_)) + ")");
    owner->conn_connected(slot_);
  }
  if (closing_) maybe_finish_close();
  if (core_.waiting() > 0) schedule_write();
}

}  // namespace pgpipe::detail
