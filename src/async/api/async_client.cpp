// async_client: a thin handle over client_impl.
#include <pgpipe/async_client.hpp>

#include "async/pool/client_impl.hpp"

#include <stdexcept>
#include <thread>

namespace pgpipe {

namespace {
async_client_options loops_only(std::size_t loops) {
  async_client_options o;
  o.loops = loops;
  return o;
}
}  // namespace

async_client::async_client(pool_params params, std::size_t loops)
    : async_client(std::move(params), loops_only(loops)) {}

async_client::async_client(pool_params params, async_client_options options)
    : impl_(std::make_shared<detail::client_impl>(std::move(params), std::move(options), nullptr)) {
  impl_->start();
}

async_client::async_client(pool_params params, boost::asio::io_context& io, async_client_options options)
    : impl_(std::make_shared<detail::client_impl>(std::move(params), std::move(options), &io)) {
  impl_->start();
}

async_client& async_client::operator=(async_client&& other) noexcept {
  if (this != &other) {
    async_client old(std::move(*this));  // its destructor shuts the old client down
    impl_ = std::move(other.impl_);
  }
  return *this;
}

async_client::~async_client() {
  if (!impl_) return;
  if (impl_->on_own_loop_thread()) {
    // Destroyed from one of its own handlers: a loop cannot join itself, so
    // another thread finishes the shutdown once this handler has returned.
    std::thread([impl = std::move(impl_)] { impl->shutdown(); }).detach();
    return;
  }
  impl_->shutdown();
}

void async_client::submit_acquire(const std::shared_ptr<detail::client_impl>& impl,
                                  std::unique_ptr<detail::completion<async_lease>> done,
                                  boost::asio::cancellation_slot slot) {
  if (!impl) {
    done->complete(boost::asio::system_executor(), true, make_error_code(errc::closed), async_lease());
    return;
  }
  impl->submit_acquire(std::move(done), slot);
}

void async_client::submit_close(const std::shared_ptr<detail::client_impl>& impl,
                                std::unique_ptr<detail::completion<std::monostate>> done) {
  if (!impl) {
    done->complete(boost::asio::system_executor(), true, {}, {});
    return;
  }
  impl->submit_close(std::move(done));
}

void async_client::close() {
  if (impl_) impl_->close();
}

pool_stats async_client::stats() const { return impl_ ? impl_->stats() : pool_stats{}; }

void async_client::set_logger(logger_fn logger) {
  if (impl_) impl_->set_logger(std::move(logger));
}

async_client::executor_type async_client::get_executor() const noexcept {
  return impl_ ? impl_->get_executor() : executor_type();
}

async_client::executor_type async_client::get_executor(std::size_t loop) const noexcept {
  return impl_ ? impl_->get_executor(loop) : executor_type();
}

std::size_t async_client::loop_count() const noexcept { return impl_ ? impl_->loop_count() : 0; }

const pool_params& async_client::params() const {
  if (!impl_) throw std::logic_error("pgpipe::async_client::params: moved-from client");
  return impl_->params();
}

std::shared_ptr<detail::query_target> async_client::target() const noexcept { return impl_; }

}  // namespace pgpipe
