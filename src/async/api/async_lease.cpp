// lease: a thin handle over lease_impl.
#include <pgpipe/async_lease.hpp>

#include "async/connection/request.hpp"
#include "async/pool/client_impl.hpp"
#include "async/pool/lease_impl.hpp"

#include <boost/asio/system_executor.hpp>

#include <utility>

namespace pgpipe {

async_lease& async_lease::operator=(async_lease&& other) noexcept {
  if (this != &other) {
    release();
    impl_ = std::move(other.impl_);
    failure_ = std::move(other.failure_);
  }
  return *this;
}

async_lease::~async_lease() { release(); }

void async_lease::release() noexcept {
  if (!impl_) return;
  impl_->release();
  impl_.reset();
}

async_lease::executor_type async_lease::get_executor() const noexcept {
  return impl_ ? impl_->get_executor() : executor_type();
}

std::shared_ptr<detail::query_target> async_lease::target() const noexcept { return impl_; }

void async_lease::submit_script(const std::shared_ptr<detail::lease_impl>& impl, std::string sql,
                                std::optional<std::chrono::milliseconds> timeout,
                                std::unique_ptr<detail::completion<result>> done, boost::asio::cancellation_slot slot) {
  if (!impl) {
    done->complete(boost::asio::system_executor(), true, make_error_code(errc::closed),
                   detail::client_error_result("async_execute_script on an empty lease"));
    return;
  }
  impl->submit_script(std::move(sql), timeout, std::move(done), slot);
}

async_row_stream async_lease::start_stream(detail::query_spec spec) {
  if (!impl_) return async_row_stream();
  return async_row_stream(impl_->start_stream(std::move(spec)));
}

}  // namespace pgpipe
