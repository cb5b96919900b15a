// copy_state: one COPY on a lease (async_copy_in / async_copy_out) between
// the caller's handle and the connection that runs it: its copy_core (every
// decision, async/sansio/copy_core.hpp) and what the shell holds for it, the
// handlers of the caller's pending operations. Everything but `conn` and
// `rows` is touched only on conn's executor.
#pragma once

#include "async/connection/request.hpp"
#include "async/sansio/copy_core.hpp"

#include <pgpipe/detail/async_glue.hpp>
#include <pgpipe/result.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>

namespace pgpipe::detail {

struct copy_state {
  explicit copy_state(bool out) : core(out) {}

  std::shared_ptr<pipelined_connection> conn;
  std::weak_ptr<query_request> req;
  copy_core core;

  // The caller's pending operations, answered by copy_core's complete_* actions.
  std::unique_ptr<completion<std::monostate>> write_waiter;
  std::unique_ptr<completion<result>> finish_waiter;
  std::unique_ptr<completion<std::monostate>> abort_waiter;
  std::unique_ptr<completion<std::string>> next_waiter;

  /// copy_core::rows(), readable from any thread (async_copy_out::rows).
  std::atomic<std::uint64_t> rows{0};
};

}  // namespace pgpipe::detail
