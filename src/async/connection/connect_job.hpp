// connect_job: one nonblocking libpq connect (PQconnectStartParams, then
// PQconnectPoll until OK or FAILED), run on an executor of its own choosing.
//
// Why a separate object: the connect handshake does real CPU work on the
// thread that polls it (SCRAM derives its keys with thousands of HMAC
// rounds), and a pool opening 200 connections would do all of it on the event
// loops, starving the queries on connections already open. The client runs
// jobs on its connector thread (event_loops::connector()); on a caller's
// io_context they run on the connection's own strand.
//
// Contract:
//  - run() starts the job; `done` is called exactly once, on the job's
//    executor: with the connected PGconn (ownership passes to the callee;
//    blocking mode, nothing else set) or with an error code and a message
//    from which the password was scrubbed.
//  - A multi-host string is walked host by host, each attempt bounded by
//    `timeout` (0: none) on its own, so a host that never answers costs one
//    timeout, not the whole connect. pq/host_walk.hpp's host_walk decides
//    what a failed attempt means and how the connect fails (the blocking
//    listener and the routers' probes use the same walk).
//  - If the executor is destroyed first, `done` is never called and the
//    PGconn is finished with the job.
//  - The job watches its own duplicate of libpq's socket, closed before
//    `done` runs: the receiver registers the socket with its own loop.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <libpq-fe.h>

#include "pq/connect_hooks.hpp"
#include "pq/host_walk.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace pgpipe::detail {

struct pgconn_deleter {
  void operator()(PGconn* c) const noexcept {
    if (c) PQfinish(c);
  }
};
using pgconn_ptr = std::unique_ptr<PGconn, pgconn_deleter>;

class connect_job : public std::enable_shared_from_this<connect_job> {
 public:
  using done_fn = std::function<void(pgconn_ptr conn, std::error_code ec, std::string message)>;

  /// `hooks`: before_connect runs on a thread of its own
  /// (prepare_connect_off_thread), never on `ex`, and connect_timeout bounds
  /// it (errc::connect_failed, before_connect_timeout_text); a call that
  /// returns after that is ignored.
  connect_job(boost::asio::any_io_executor ex, std::string conninfo, std::vector<std::string> secrets,
              connect_hooks hooks, std::chrono::milliseconds timeout, done_fn done);
  ~connect_job();
  connect_job(const connect_job&) = delete;
  connect_job& operator=(const connect_job&) = delete;

  /// Posts the start to the job's executor.
  static void run(std::shared_ptr<connect_job> job);

 private:
  void start();
  /// before_connect's outcome (and the hosts' order): on to the first attempt.
  void hooks_returned(connect_target t);
  void start_attempt();
  void attempt_failed(std::string message, bool timed_out);
  void wait(PostgresPollingStatusType want);
  void step();
  void finish(std::error_code ec, std::string message);
  std::string pq_error() const;

  boost::asio::any_io_executor ex_;
  std::string conninfo_;
  std::vector<std::string> secrets_;
  connect_hooks hooks_;
  std::chrono::milliseconds timeout_;
  done_fn done_;
  std::optional<host_walk> walk_;
  std::uint64_t attempt_gen_ = 0;  // tells a late timer of an earlier attempt from the current one
  pgconn_ptr pg_;
  std::optional<boost::asio::posix::stream_descriptor> sd_;
  std::uint64_t sd_gen_ = 0;
  boost::asio::steady_timer timer_;
  bool finished_ = false;
  // Where before_connect's thread hands its outcome over: only while the job
  // (and with it its io_context) lives. The thread holds no executor of its
  // own, which it might otherwise destroy after its io_context.
  struct hook_mailbox {
    std::mutex m;
    std::optional<boost::asio::any_io_executor> ex;
  };
  std::shared_ptr<hook_mailbox> mailbox_;
};

}  // namespace pgpipe::detail
