// The transaction helpers' way to a lease's implementation: a pipelined
// batch is submitted as one chain (lease_impl::submit_chain), which the
// public lease API does not offer.
#pragma once

#include "async/pool/lease_impl.hpp"

#include <pgpipe/async_lease.hpp>

namespace pgpipe::detail {

struct lease_access {
  /// Null for an empty, moved-from or released-and-reset lease.
  static lease_impl* impl(async_lease& l) noexcept { return l.impl_.get(); }
};

}  // namespace pgpipe::detail
