// A chain of statements on a lease (lease_impl::submit_chain) that a
// coroutine awaits as a whole: the transaction helpers send BEGIN ahead of
// the work, or a whole batch, this way, and wait for it once.
#pragma once

#include "async/api/lease_access.hpp"

#include <pgpipe/async_lease.hpp>
#include <pgpipe/result.hpp>

#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace pgpipe::detail {

/// The coroutine awaiting a chain (wait_chain), type-erased in one allocation.
class chain_waiter {
 public:
  virtual ~chain_waiter() = default;
  /// Resumes it on its own executor, never inline.
  virtual void resume() = 0;
};

/// The outcomes of one chain, filled in by the connection (any thread) and
/// read by the coroutine once wait_chain has returned.
struct chain_state {
  std::mutex m;
  std::vector<std::pair<std::error_code, result>> out;  ///< one per statement, in order
  std::size_t left = 0;
  std::unique_ptr<chain_waiter> waiter;  ///< set when awaited before the last outcome came
};

/// Submits `specs` as one chain on `l` (see lease_impl::submit_chain).
std::shared_ptr<chain_state> start_chain(lease_impl& l, std::vector<query_spec> specs, bool open_end);

/// Completes (on the awaiting coroutine's executor, never inline) once every
/// statement of the chain has its outcome.
boost::asio::awaitable<void> wait_chain(std::shared_ptr<chain_state> st);

}  // namespace pgpipe::detail
