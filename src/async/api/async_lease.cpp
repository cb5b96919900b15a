// lease: a thin handle over lease_impl.
#include <pgpipe/async_lease.hpp>

#include "async/pool/client_impl.hpp"

namespace pgpipe {

lease& lease::operator=(lease&& other) noexcept {
  if (this != &other) {
    release();
    impl_ = std::move(other.impl_);
    failure_ = std::move(other.failure_);
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

}  // namespace pgpipe
