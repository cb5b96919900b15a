// lease_handoff: what a lease started, in the order it was started, on its
// way to the lease's connection.
//
// Why: a lease's calls go to its connection's loop by asio::post, and Asio
// does not keep the order of posts made on different threads. On a loop
// with one thread, a post made inside a running handler waits in that
// thread's private queue until the handler returns, while a post made on
// another thread meanwhile runs first. So async_begin's BEGIN (posted on the
// loop) could reach the connection after the first statement the caller
// started on its own thread once async_begin completed, and that statement
// would run outside the transaction. Every start therefore appends to this
// queue and posts one turn that takes the queue's OLDEST entry, whichever
// turn runs first: posts may overtake each other, the entries cannot.
//
// The connection is a template parameter (pipelined_connection in the
// driver, a recording fake in tests/unit/async/pool/lease_handoff_test.cpp):
// a seam for the test that costs the driver no virtual call.
#pragma once

#include "async/connection/query_meter.hpp"
#include "async/connection/request.hpp"

#include <pgpipe/query_observer.hpp>

#include <boost/asio/post.hpp>

#include <deque>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace pgpipe::detail {

class lease_handoff {
 public:
  /// One start: requests to enqueue together (a chain is several), or the
  /// lease's end (`returns`: the connection goes back to the pool).
  struct entry {
    std::vector<std::shared_ptr<query_request>> reqs;
    bool observed = true;  ///< the query observer hears of its requests
    bool returns = false;
  };

  /// Thread-safe. The caller posts exactly one take() per push.
  void push(entry e) {
    std::lock_guard lk(m_);
    q_.push_back(std::move(e));
  }
  /// Thread-safe. The oldest entry pushed and not taken yet.
  entry take() {
    std::lock_guard lk(m_);
    entry e = std::move(q_.front());
    q_.pop_front();
    return e;
  }

  /// On `c`'s executor, once per push: carries out the oldest entry. Its
  /// requests are told to the query observer (unless the entry says not)
  /// and enqueued in one call, a chain together; a `returns` entry gives
  /// the connection back (lease_returned).
  template <class Connection>
  void hand_over_next(Connection& c) {
    entry next = take();
    if (next.returns) {
      c.lease_returned();
      return;
    }
    if (query_observer* obs = c.observer(); obs && next.observed)
      for (const auto& req : next.reqs) observe_request_start(*obs, *req, c.slot(), c.backend_pid());
    if (next.reqs.size() == 1) {
      c.enqueue(next.reqs.front());
    } else {
      c.enqueue_chain(next.reqs);
    }
  }

 private:
  std::mutex m_;
  std::deque<entry> q_;
};

/// A lease's start, `e`, queued on `handoff` and carried out on `conn`'s
/// executor in the order of the lease's starts. Throws std::bad_alloc.
template <class Connection>
void hand_off(const std::shared_ptr<Connection>& conn, const std::shared_ptr<lease_handoff>& handoff,
              lease_handoff::entry e) {
  handoff->push(std::move(e));
  boost::asio::post(conn->get_executor(), [c = conn, h = handoff] { h->hand_over_next(*c); });
}

}  // namespace pgpipe::detail
