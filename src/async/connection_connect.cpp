// pipelined_connection: connecting (PQconnectStart/PQconnectPoll) and the
// hand-over to serving (contract in pipelined_connection.hpp).

#include "async/pipelined_connection.hpp"

#include "async/session_setup.hpp"
#include "pq/libpq_failure.hpp"

namespace pgpipe::detail {

namespace asio = boost::asio;

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

}  // namespace pgpipe::detail
