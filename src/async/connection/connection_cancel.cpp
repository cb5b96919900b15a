// pipelined_connection: Asio cancellation of requests and the lease's
// cancel request: on the loop where libpq has the non-blocking calls
// (cancel_job), else PQcancel on a thread of its own (it blocks in libpq 15).
#include "async/connection/pipelined_connection.hpp"

#include <boost/asio/post.hpp>

#include <system_error>
#include <thread>

namespace pgpipe::detail {

namespace asio = boost::asio;

void pipelined_connection::cancel(const std::shared_ptr<query_request>& req, asio::cancellation_type_t type) {
  if (req->completed.load(std::memory_order_acquire)) return;
  if (req->id == 0) {
    // Still on its way to enqueue(), which gives its capacity back.
    complete(req, make_error_code(errc::cancelled), client_error_result("cancelled before it was sent"));
    return;
  }
  // A written query may have side effects: only terminal and partial
  // cancellation apply to it.
  const bool after_write = (type & (asio::cancellation_type::terminal | asio::cancellation_type::partial)) !=
                           asio::cancellation_type::none;
  if (req->on_lease && after_write && st_ == state::ready && !paused_ && !core_.writes_held()) {
    // Its result may be here already: then there is nothing to cancel, and
    // a signal sent now could only hit the next query.
    if (!PQconsumeInput(pg_)) {
      break_connection(pq_error());
      return;
    }
    drain_results();
    if (req->completed.load(std::memory_order_acquire) || st_ != state::ready) return;
  }
  core_.cancel(pool_clock::now(), req->id, after_write);
  apply();
}

bool pipelined_connection::start_cancel_call(pipe_id target) {
  if (!pg_ || st_ != state::ready || cancel_call_ || cancel_job_) return false;
  if (cfg_->cancel_calls) {
    // One job at a time, and an abandoned one never reports: whatever
    // reports is cancel_job_.
    auto job = std::make_shared<cancel_job>(ex_, *cfg_->cancel_calls, [conn = weak_from_this(), target](bool sent, std::string m) {
      if (auto c = conn.lock()) c->cancel_job_returned(target, sent, m);
    });
    if (!job->start(pg_)) return false;
    cancel_job_ = std::move(job);
    return true;
  }
  PGcancel* c = PQgetCancel(pg_);
  if (!c) return false;
  auto call = std::make_shared<cancel_call>();
  call->ex = ex_;
  call->conn = weak_from_this();
  try {
    // libpq 15's PQcancel blocks (it opens a connection): never on the loop.
    // It returns once the postmaster has signalled the backend.
    std::thread([c, call] {
      char buf[256];
      PQcancel(c, buf, sizeof buf);
      PQfreeCancel(c);
      std::lock_guard<std::mutex> lk(call->m);
      if (!call->live) return;
      asio::post(call->ex, [call] {
        if (auto conn = call->conn.lock()) conn->cancel_call_returned(call.get());
      });
    }).detach();
  } catch (const std::system_error&) {
    PQfreeCancel(c);
    return false;
  }
  cancel_call_ = std::move(call);
  return true;
}

void pipelined_connection::cancel_call_returned(const cancel_call* call) {
  if (cancel_call_.get() != call) return;
  cancel_call_.reset();
  core_.on_cancel_returned();
  apply();
}

void pipelined_connection::cancel_job_returned(pipe_id target, bool sent, const std::string& message) {
  cancel_job_.reset();
  if (sent) {
    core_.on_cancel_returned();
  } else {
    // Failed once started: the CancelRequest may have gone out before the
    // exchange broke, so the signal may still land. The request is answered
    // (detached) and nothing is written until its Sync.
    if (auto o = owner_.lock())
      o->log(log_level::warning, "cancel request failed: " + clean_message(message, secrets_));
    core_.on_cancel_failed_once_started(target);
  }
  apply();
}

void pipelined_connection::end_cancel_calls() noexcept {
  if (cancel_job_) cancel_job_->abandon();
  cancel_job_.reset();
  if (cancel_call_) {
    std::lock_guard<std::mutex> lk(cancel_call_->m);
    cancel_call_->live = false;
  }
  cancel_call_.reset();
}

}  // namespace pgpipe::detail
