// cancel_job: one cancel request for a lease's query, sent from the
// connection's event loop with libpq 17's non-blocking cancel calls
// (PQcancelCreate, PQcancelStart, PQcancelPoll).
//
// Why: libpq 15's PQcancel opens a connection to the postmaster and blocks
// until the postmaster has signalled the backend, so the driver runs it on a
// thread of its own per cancel. Where the loaded libpq has the newer calls
// (pq/libpq_features.hpp), the same exchange is a few socket waits on the
// loop: no thread is created, and a burst of cancels costs no more threads.
//
// Contract:
//  - start() makes the cancel connection and starts it. It returns false,
//    and `done` is never called, when libpq cannot even start one (no
//    memory, the connection has no cancel key): the caller treats that as
//    a cancel that could not be sent.
//  - Otherwise `done` is called exactly once, from a handler on `ex` (never
//    inside start()): sent = true once the postmaster has closed the cancel
//    connection, which it does after signalling the backend (PQcancel's
//    "returned"); sent = false with libpq's message when it failed.
//  - abandon(): `done` will not be called; the socket is released. The
//    job's time is bounded by its owner (pipeline_core's cancel_bound).
//  - The job watches its own duplicate of libpq's socket, taken again at
//    every step (the cancel connection may move to another socket, as a
//    connect does).
#pragma once

#include "pq/libpq_features.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <libpq-fe.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace pgpipe::detail {

class cancel_job : public std::enable_shared_from_this<cancel_job> {
 public:
  using done_fn = std::function<void(bool sent, std::string message)>;

  /// `calls` must be cancel_usable() and outlive the job (the process-wide
  /// loaded_libpq_features(), or a test's fake).
  cancel_job(boost::asio::any_io_executor ex, const libpq_features& calls, done_fn done);
  ~cancel_job();
  cancel_job(const cancel_job&) = delete;
  cancel_job& operator=(const cancel_job&) = delete;

  /// Creates the cancel connection for `pg` and starts it (see the contract).
  bool start(PGconn* pg);
  void abandon() noexcept;

 private:
  void wait(PostgresPollingStatusType want);
  void step();
  void finish(bool sent, std::string message);
  void release() noexcept;

  boost::asio::any_io_executor ex_;
  const libpq_features& calls_;
  done_fn done_;
  void* cancel_ = nullptr;  ///< the PGcancelConn
  std::optional<boost::asio::posix::stream_descriptor> sd_;
  std::uint64_t sd_gen_ = 0;
  bool finished_ = false;
};

}  // namespace pgpipe::detail
