// client_impl: start, close and shutdown (contract in client_impl.hpp).
#include "async/pool/client_impl.hpp"

#include <boost/asio/post.hpp>

#include <chrono>
#include <vector>

namespace pgpipe::detail {

namespace asio = boost::asio;

client_impl::~client_impl() {
  // shutdown() ran (async_client's destructor). The watchdog logs through us:
  // it ends here, while the loops object may live on in a caller's io_context.
  loops_->stop_watchdog();
}

void client_impl::start() {
  loops_->start();
  todo t;
  {
    std::lock_guard lk(mu_);
    core_.start(pool_clock::now());
    collect_locked(t, true);
  }
  run(t);
}

void client_impl::submit_close(std::unique_ptr<completion<std::monostate>> done) {
  loops_->stop_probes();
  todo t;
  {
    std::lock_guard lk(mu_);
    close_waiters_.push_back(std::move(done));
    core_.close(pool_clock::now());
    collect_locked(t, true);
  }
  run(t);
}

void client_impl::close() {
  loops_->stop_probes();
  todo t;
  {
    std::lock_guard lk(mu_);
    core_.close(pool_clock::now());
    collect_locked(t, true);
  }
  run(t);
}

void client_impl::shutdown() {
  {
    std::lock_guard lk(mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  close();
  if (!loops_->external() && !loops_->on_own_thread()) {
    // Let work in flight finish, for a bounded time: a query that runs for
    // minutes must not make a destructor hang for minutes.
    std::unique_lock lk(mu_);
    drained_cv_.wait_for(lk, std::chrono::seconds(2), [this] { return actions_.live() == 0 && core_.is_drained(); });
  }
  std::vector<std::shared_ptr<pipelined_connection>> rest;
  {
    std::lock_guard lk(mu_);
    rest = actions_.connections();
  }
  for (auto& c : rest) asio::post(c->get_executor(), [c] { c->abort(); });
  loops_->stop_watchdog();
  // Weak, as in stop_probes(): on a caller's io_context this may run after
  // the impl (and its timer) is gone.
  asio::post(pool_ex_, [w = weak_from_this()] {
    if (auto self = w.lock()) self->tick_timer_->cancel();
  });
  loops_->join();
}

asio::any_io_executor client_impl::get_executor() const noexcept { return loops_->first(); }

}  // namespace pgpipe::detail
