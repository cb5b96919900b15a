// copy_state: one COPY on a lease (async_copy_in / async_copy_out), the solo
// operation (solo_operation.hpp) that runs it, between the caller's handle
// and the connection: its copy_core (every decision, async/sansio/copy_core.hpp),
// the handlers of the caller's pending operations, and the libpq calls that
// carry out copy_core's actions (contract in <pgpipe/async_copy.hpp>).
// Everything but `conn` and `rows` is touched only on conn's executor.
#pragma once

#include "async/connection/request.hpp"
#include "async/connection/solo_operation.hpp"
#include "async/sansio/copy_core.hpp"

#include <pgpipe/detail/async_glue.hpp>
#include <pgpipe/result.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace pgpipe::detail {

struct copy_state final : solo_operation {
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

  // ---- the caller's operations, on conn's executor ----
  void write(std::string data, std::unique_ptr<completion<std::monostate>> done);
  void finish(std::unique_ptr<completion<result>> done);
  void abort(std::string reason, std::unique_ptr<completion<std::monostate>> done);
  void next(std::unique_ptr<completion<std::string>> done);
  void cancel();
  /// The COPY's request completed: copy_core decides what the handle gets.
  void outcome(solo_host& host, std::error_code ec, result r);

  // ---- solo_operation ----
  const char* what() const noexcept override { return "COPY"; }
  /// Sends the COPY (extended protocol: one statement, never a string of several).
  void start(solo_host& host, query_request& request) override;
  /// PQflush for the COPY, answered to copy_core.
  void flush(solo_host& host) override;
  /// Reads what copy_core allows (results, copy_out data).
  void pump(solo_host& host) override;
  bool reads_paused() const noexcept override { return core.paused(); }
  bool runs(const query_request& request) const noexcept override;

 private:
  solo_host& host() const;
  /// Carries out copy_core's actions, in order (reentrant: an action may
  /// complete the COPY's request, whose outcome queues more).
  void apply(solo_host& host);
  void carry_out(solo_host& host, copy_action& a);

  std::vector<copy_action> actions_spare_;  ///< reused by apply()
};

}  // namespace pgpipe::detail
