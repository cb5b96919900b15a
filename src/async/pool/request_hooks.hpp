// What a caller's query carries in its handler's cancellation slot, one hook
// per way into a connection: the pool's shared path (the ticket finds the
// query, queued or granted) and an exclusive lease (its connection is fixed
// from the start). Both hold weak references: a hook that fires after
// completion finds nothing to do.
#pragma once

#include "async/connection/request.hpp"
#include "async/pool/pool_ticket.hpp"

#include <boost/asio/cancellation_type.hpp>

#include <memory>

namespace pgpipe::detail {

class pipelined_connection;

struct pool_cancel_hook {
  std::weak_ptr<pool_ticket> ticket;
  void operator()(boost::asio::cancellation_type_t type) const;
};

struct lease_cancel_hook {
  std::weak_ptr<query_request> req;
  std::weak_ptr<pipelined_connection> conn;
  void operator()(boost::asio::cancellation_type_t type) const;
};

}  // namespace pgpipe::detail
