// connect_job: see connect_job.hpp for the contract.
#include "async/connection/connect_job.hpp"

#include "async/connection/libpq_socket.hpp"
#include "pq/libpq_failure.hpp"

#include <boost/asio/post.hpp>

namespace pgpipe::detail {

namespace asio = boost::asio;

connect_job::connect_job(asio::any_io_executor ex, std::string conninfo, std::vector<std::string> secrets,
                         connect_hooks hooks, std::chrono::milliseconds timeout, done_fn done)
    : ex_(std::move(ex)),
      conninfo_(std::move(conninfo)),
      secrets_(std::move(secrets)),
      hooks_(std::move(hooks)),
      timeout_(timeout),
      done_(std::move(done)),
      timer_(ex_),
      mailbox_(std::make_shared<hook_mailbox>()) {
  mailbox_->ex = ex_;
}

connect_job::~connect_job() {
  std::lock_guard lk(mailbox_->m);
  mailbox_->ex.reset();
}

void connect_job::run(std::shared_ptr<connect_job> job) {
  auto ex = job->ex_;
  asio::post(ex, [job = std::move(job)] { job->start(); });
}

std::string connect_job::pq_error() const {
  return clean_message(pg_ ? PQerrorMessage(pg_.get()) : "out of memory", secrets_);
}

void connect_job::start() {
  if (!hooks_.before_connect) {
    hooks_returned(prepare_connect(hooks_, conninfo_, secrets_));
    return;
  }
  // before_connect may block, even on the io_context this job runs on (a
  // token fetch through the caller's own client): it runs on a thread of its
  // own, and connect_timeout bounds it as it bounds a handshake.
  // The timer's wait keeps the job alive meanwhile (also with no timeout:
  // then it never fires), and goes with the io_context if that goes first.
  const std::uint64_t gen = ++attempt_gen_;
  if (timeout_.count() > 0) {
    timer_.expires_after(timeout_);
  } else {
    timer_.expires_at(asio::steady_timer::time_point::max());
  }
  timer_.async_wait([self = shared_from_this(), gen](const boost::system::error_code& ec) {
    if (ec || self->finished_ || gen != self->attempt_gen_) return;
    self->finish(make_error_code(errc::connect_failed), before_connect_timeout_text(self->timeout_));
  });
  prepare_connect_off_thread(hooks_, conninfo_, secrets_,
                             [mailbox = mailbox_, weak = weak_from_this(), gen](connect_target t) {
                               // Posted only while the job lives: then so does its io_context.
                               std::lock_guard lk(mailbox->m);
                               if (!mailbox->ex) return;
                               asio::post(*mailbox->ex, [weak, gen, t = std::move(t)]() mutable {
                                 auto self = weak.lock();
                                 if (!self || self->finished_ || gen != self->attempt_gen_) return;
                                 self->hooks_returned(std::move(t));
                               });
                             });
}

void connect_job::hooks_returned(connect_target t) {
  if (t.ec) {
    finish(t.ec, std::move(t.error_message));
    return;
  }
  conninfo_ = std::move(t.conninfo);
  secrets_ = std::move(t.secrets);
  // A string libpq cannot parse is the caller's mistake, not the network's:
  // say so precisely (pool_core treats bad_conninfo as permanent).
  if (auto why = conninfo_parse_error(conninfo_, secrets_); !why.empty()) {
    finish(make_error_code(errc::bad_conninfo), "invalid connection string: " + why);
    return;
  }
  walk_.emplace(plan_host_walk(conninfo_, "pgpipe"));
  start_attempt();
}

void connect_job::start_attempt() {
  pg_.reset(start_connect(walk_->current()));
  if (!pg_) {
    finish(make_error_code(errc::connect_failed), "out of memory starting a connection");
    return;
  }
  if (PQstatus(pg_.get()) == CONNECTION_BAD) {
    attempt_failed(pq_error(), false);
    return;
  }
  const std::uint64_t gen = ++attempt_gen_;
  if (timeout_.count() > 0) {
    timer_.expires_after(timeout_);
    timer_.async_wait([self = shared_from_this(), gen](const boost::system::error_code& ec) {
      if (ec || self->finished_ || gen != self->attempt_gen_) return;
      self->attempt_failed(connect_timeout_text(self->timeout_), true);
    });
  }
  // libpq: after PQconnectStart, act as if PQconnectPoll returned WRITING.
  wait(PGRES_POLLING_WRITING);
}

void connect_job::attempt_failed(std::string message, bool timed_out) {
  const bool needs_password = pg_ && PQconnectionNeedsPassword(pg_.get()) == 1;
  ++attempt_gen_;  // the timer of this attempt no longer applies
  timer_.cancel();
  if (sd_) release_descriptor(*sd_);
  sd_.reset();
  ++sd_gen_;
  pg_.reset();
  walk_step next = walk_->on_attempt_failed(std::move(message), needs_password, timed_out);
  if (next.try_next) {
    start_attempt();
    return;
  }
  finish(next.ec, std::move(next.message));
}

void connect_job::wait(PostgresPollingStatusType want) {
  // PQconnectPoll may close its socket and open another, possibly under the
  // same number (multi-host strings, SSL/GSS fallbacks): watch a fresh
  // duplicate at every step, never libpq's own fd.
  if (sd_) release_descriptor(*sd_);
  sd_.reset();
  ++sd_gen_;
  sd_ = watch_libpq_socket(ex_, pg_.get());
  if (!sd_) {
    finish(make_error_code(errc::connect_failed), "libpq gave no socket while connecting");
    return;
  }
  auto w = want == PGRES_POLLING_READING ? asio::posix::stream_descriptor::wait_read
                                         : asio::posix::stream_descriptor::wait_write;
  sd_->async_wait(w, [self = shared_from_this(), gen = sd_gen_](const boost::system::error_code& ec) {
    if (gen != self->sd_gen_ || self->finished_) return;
    if (ec) {
      self->finish(make_error_code(errc::connect_failed), "waiting for the socket failed: " + ec.message());
      return;
    }
    self->step();
  });
}

void connect_job::step() {
  switch (PQconnectPoll(pg_.get())) {
    case PGRES_POLLING_OK:
      finish({}, {});
      return;
    case PGRES_POLLING_READING:
      wait(PGRES_POLLING_READING);
      return;
    case PGRES_POLLING_WRITING:
      wait(PGRES_POLLING_WRITING);
      return;
    default:
      attempt_failed(pq_error(), false);
      return;
  }
}

void connect_job::finish(std::error_code ec, std::string message) {
  if (finished_) return;
  finished_ = true;
  if (sd_) release_descriptor(*sd_);
  sd_.reset();
  ++sd_gen_;
  timer_.cancel();
  if (ec) pg_.reset();
  auto done = std::move(done_);
  done(std::move(pg_), ec, std::move(message));
}

}  // namespace pgpipe::detail
