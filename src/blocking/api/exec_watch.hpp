// exec_watch: one blocking_pool::exec as the pool's query_duration histogram
// and its query_observer (pool_params::observer) see it: times the wait for
// a connection and the statement, reports start and end.
#pragma once

#include <pgpipe/blocking_lease.hpp>
#include <pgpipe/result.hpp>

#include "core/metrics/query_metrics.hpp"

#include <chrono>
#include <cstdint>
#include <string_view>
#include <system_error>

namespace pgpipe::detail {

struct blocking_pool_impl;

class exec_watch {
 public:
  exec_watch(blocking_pool_impl& pool, std::string_view sql) noexcept;
  exec_watch(const exec_watch&) = delete;
  exec_watch& operator=(const exec_watch&) = delete;
  /// blocking_pool::acquire(); on success the observer's on_start runs, on
  /// failure its on_end, then the error is thrown.
  blocking_lease acquire();
  /// The statement succeeded: on_end with its rows.
  result done(result r) noexcept;
  /// Call from a catch block: translates the exception as rethrow_translated
  /// does, reports it to on_end, throws it. `lease` null: the query never
  /// reached a connection, and is counted in stats() here.
  [[noreturn]] void fail(blocking_lease* lease);

 private:
  observed_query observed(bool rerun) const noexcept;
  void end(const std::error_code& ec, std::string_view sqlstate, std::uint64_t rows) noexcept;

  blocking_pool_impl& pool_;
  std::string_view sql_;
  std::chrono::steady_clock::time_point submitted_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::nanoseconds waited_{0};
  std::uint64_t slot_ = 0;
  int backend_pid_ = 0;
  void* user_ = nullptr;
  bool observed_start_ = false;
  bool unstarted_ = false;  ///< failed before a lease ran it: counted by end()
};

}  // namespace pgpipe::detail
