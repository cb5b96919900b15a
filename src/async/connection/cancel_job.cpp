// cancel_job: see cancel_job.hpp for the contract.
#include "async/connection/cancel_job.hpp"

#include "async/connection/libpq_socket.hpp"

#include <boost/asio/post.hpp>

namespace pgpipe::detail {

namespace asio = boost::asio;

cancel_job::cancel_job(asio::any_io_executor ex, const libpq_features& calls, done_fn done)
    : ex_(std::move(ex)), calls_(calls), done_(std::move(done)) {}

cancel_job::~cancel_job() { release(); }

void cancel_job::release() noexcept {
  if (sd_) release_descriptor(*sd_);
  sd_.reset();
  ++sd_gen_;
  if (cancel_) calls_.cancel_finish(cancel_);
  cancel_ = nullptr;
}

bool cancel_job::start(PGconn* pg) {
  cancel_ = pg ? calls_.cancel_create(pg) : nullptr;
  // PQcancelCreate reports its own failures (e.g. no cancel key) as a
  // connection in CONNECTION_BAD; PQcancelStart returns 0 the same way.
  if (!cancel_ || calls_.cancel_status(cancel_) == CONNECTION_BAD || calls_.cancel_start(cancel_) == 0) {
    finished_ = true;
    release();
    return false;
  }
  // libpq: after PQcancelStart, act as if PQcancelPoll returned WRITING.
  wait(PGRES_POLLING_WRITING);
  return true;
}

void cancel_job::abandon() noexcept {
  finished_ = true;
  release();
}

void cancel_job::wait(PostgresPollingStatusType want) {
  if (sd_) release_descriptor(*sd_);
  sd_.reset();
  ++sd_gen_;
  sd_ = watch_socket_copy(ex_, calls_.cancel_socket(cancel_));
  if (!sd_) {
    // Reported from a handler, as the contract promises.
    asio::post(ex_, [self = shared_from_this(), gen = sd_gen_] {
      if (gen == self->sd_gen_ && !self->finished_) self->finish(false, "libpq gave no socket for the cancel request");
    });
    return;
  }
  const auto w = want == PGRES_POLLING_READING ? asio::posix::stream_descriptor::wait_read
                                               : asio::posix::stream_descriptor::wait_write;
  sd_->async_wait(w, [self = shared_from_this(), gen = sd_gen_](const boost::system::error_code& ec) {
    if (gen != self->sd_gen_ || self->finished_) return;
    if (ec) {
      self->finish(false, "waiting for the cancel request's socket failed: " + ec.message());
      return;
    }
    self->step();
  });
}

void cancel_job::step() {
  switch (calls_.cancel_poll(cancel_)) {
    case PGRES_POLLING_OK:
      finish(true, {});
      return;
    case PGRES_POLLING_READING:
      wait(PGRES_POLLING_READING);
      return;
    case PGRES_POLLING_WRITING:
      wait(PGRES_POLLING_WRITING);
      return;
    default: {
      const char* m = calls_.cancel_error_message(cancel_);
      finish(false, m && *m ? m : "the cancel request failed");
      return;
    }
  }
}

void cancel_job::finish(bool sent, std::string message) {
  if (finished_) return;
  finished_ = true;
  release();
  auto done = std::move(done_);
  done(sent, std::move(message));
}

}  // namespace pgpipe::detail
