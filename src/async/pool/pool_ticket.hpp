// pool_ticket: a caller's query on the shared path as the pool holds it,
// apart from the wire request (async/connection/request.hpp) the connection
// holds. The ticket is the pool's: its waiter id while it waits for
// capacity, the connection it was granted, and the way back to the pool for
// a cancel. The connection never sees the ticket's own fields.
//
// Why one allocation: both halves live as long as the query, and a caller's
// query on the shared path already costs one allocation for its request.
// The connection gets `wire` through a pointer that shares the ticket's
// reference count (wire_of), so splitting them costs nothing per query.
// A lease's requests have no ticket: the lease knows its connection, and
// nothing of theirs waits in the pool.
//
// The connection is a template parameter so that the pool's unit tests
// (tests/unit/async/pool/pool_actions_test.cpp) hold tickets of a fake
// connection; the driver's is pool_ticket.
#pragma once

#include "async/connection/request.hpp"
#include "core/pool/pool_types.hpp"

#include <memory>
#include <utility>

namespace pgpipe::detail {

class client_impl;
class pipelined_connection;

template <class Connection>
struct basic_pool_ticket {
  /// What the connection carries once the query is granted (filled before).
  query_request wire;

  /// Where a cancel goes (client_impl::cancel_query). Fixed before the
  /// ticket is shared. Weak: a cancel after the client is gone finds nothing
  /// to do.
  std::weak_ptr<client_impl> owner;

  // Guarded by the client's mutex.
  waiter_id waiter = 0;  ///< nonzero while queued (waiter_map)
  /// Once granted. Weak: the connection holds the wire request (and so the
  /// ticket), so a strong link back would make a cycle that only the
  /// connection's teardown breaks; on a caller's io_context that is never
  /// run again, nothing would free either (PGconn, socket, handler).
  std::weak_ptr<Connection> conn;
};

using pool_ticket = basic_pool_ticket<pipelined_connection>;

/// `t`'s wire request, sharing the ticket's allocation and reference count:
/// the pointer a connection holds. Moving `t` in costs no count update.
template <class Connection>
std::shared_ptr<query_request> wire_of(std::shared_ptr<basic_pool_ticket<Connection>> t) noexcept {
  query_request* w = &t->wire;
  return std::shared_ptr<query_request>(std::move(t), w);
}

}  // namespace pgpipe::detail
