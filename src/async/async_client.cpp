// async_client and lease: thin handles over client_impl / lease_impl.
#include <pgpipe/async_client.hpp>

#include "async/client_impl.hpp"

#include <boost/asio/post.hpp>

#include <thread>

namespace pgpipe {

// ---- lease ---------------------------------------------------------------------

lease& lease::operator=(lease&& other) noexcept {
  if (this != &other) {
    release();
    impl_ = std::move(other.impl_);
  }
  return *this;
}

lease::~lease() { release(); }

void lease::release() noexcept {
  if (!impl_) return;
  impl_->release();
  impl_.reset();
}

lease::executor_type lease::get_executor() const noexcept {
  return impl_ ? impl_->get_executor() : executor_type();
}

std::shared_ptr<detail::query_target> lease::target() const noexcept { return impl_; }

row_stream lease::start_stream(detail::query_spec spec) {
  if (!impl_) return row_stream();
  return row_stream(impl_->start_stream(std::move(spec)));
}

// ---- row_stream ---------------------------------------------------------------------

row_stream& row_stream::operator=(row_stream&& other) noexcept {
  if (this != &other) {
    cancel();
    st_ = std::move(other.st_);
  }
  return *this;
}

row_stream::~row_stream() { cancel(); }

void row_stream::cancel() noexcept {
  if (!st_) return;
  try {
    auto c = st_->conn;
    boost::asio::post(c->get_executor(), [c, st = st_] { c->stream_cancel(st); });
  } catch (...) {
    // Out of memory posting: the rows are drained when the lease is returned.
  }
}

void row_stream::submit_next(const std::shared_ptr<detail::stream_state>& st,
                             std::unique_ptr<detail::completion<result>> done) {
  if (!st) {
    done->complete(boost::asio::system_executor(), true, make_error_code(errc::closed),
                   detail::client_error_result("empty row_stream"));
    return;
  }
  auto c = st->conn;
  boost::asio::post(c->get_executor(), [c, st, d = std::move(done)]() mutable { c->stream_next(st, std::move(d)); });
}

// ---- async_client ------------------------------------------------------------------

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
                                  std::unique_ptr<detail::completion<lease>> done,
                                  boost::asio::cancellation_slot slot) {
  if (!impl) {
    done->complete(boost::asio::system_executor(), true, make_error_code(errc::closed), lease());
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

std::size_t async_client::loop_count() const noexcept { return impl_ ? impl_->loop_count() : 0; }

std::shared_ptr<detail::query_target> async_client::target() const noexcept { return impl_; }

}  // namespace pgpipe
