// What both ways into a connection (the pool's shared path in client_impl,
// an exclusive lease in lease_impl) attach to a query request: its deadline
// and its cancellation hook.
#pragma once

#include "async/connection/request.hpp"
#include "async/pool/waiter_failure.hpp"
#include "core/pool/pool_core.hpp"

#include <boost/asio/cancellation_type.hpp>

#include <memory>

namespace pgpipe::detail {

/// Lives in the handler's cancellation slot. Holds a weak reference: a hook
/// that fires after completion finds nothing to do.
struct query_cancel_hook {
  std::weak_ptr<query_request> req;
  void operator()(boost::asio::cancellation_type_t type) const;
};

}  // namespace pgpipe::detail
