// solo_operation: what holds a connection alone, outside pipeline mode (a
// COPY, a script), and solo_host, what it may ask of the connection shell.
//
// pipeline_core says when the wire is free (start_solo: nothing written,
// every result read) and writes nothing behind the operation until
// on_solo_end. In between the shell routes the socket to the one operation in
// its slot: a flush when libpq's buffer waits for the socket, a pump when
// input arrived. Each operation owns its state and its reads; the shell
// never asks which kind it holds. Everything here runs on the connection's
// executor.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <libpq-fe.h>

#include <string>

namespace pgpipe::detail {

class pipeline_core;
class solo_operation;
struct query_request;

/// The connection as a solo operation sees it. Calls that change the core
/// (solo_core()) are carried out by solo_apply().
class solo_host {
 public:
  /// The libpq connection (valid while solo_ready()).
  virtual PGconn* solo_conn() const noexcept = 0;
  /// Connected and not torn down: the wire may be used.
  virtual bool solo_ready() const noexcept = 0;
  /// `op` holds the wire (started, solo_leave not yet called).
  virtual bool solo_holds_wire(const solo_operation& op) const noexcept = 0;
  virtual pipeline_core& solo_core() noexcept = 0;
  /// Carries out the core's queued actions (may complete requests).
  virtual void solo_apply() = 0;
  /// An I/O failure: the core fails the requests, the connection closes.
  virtual void solo_break(const std::string& reason) = 0;
  virtual void solo_watch_read() = 0;
  virtual void solo_watch_write() = 0;
  /// libpq's output buffer waits for the socket (the operation flushes).
  virtual void solo_flush_pending(bool pending) noexcept = 0;
  /// libpq's last error, scrubbed of secrets.
  virtual std::string solo_pq_error() const = 0;
  virtual const boost::asio::any_io_executor& solo_executor() const noexcept = 0;
  /// The operation is over on the wire: the slot is emptied and the
  /// connection enters pipeline mode again. The caller keeps the operation
  /// alive across this call (the slot's reference goes). False when libpq refused (the
  /// connection is then broken and its requests failed).
  virtual bool solo_leave() = 0;
  /// After solo_leave: pipeline_core hears on_solo_end(failed), its actions
  /// are carried out (the operation's request completes unless it was
  /// answered early; what waited behind it is written) and reading resumes.
  virtual void solo_end(bool failed) = 0;

 protected:
  ~solo_host() = default;
};

class solo_operation {
 public:
  virtual ~solo_operation() = default;
  /// What it is, for messages ("COPY", "a script").
  virtual const char* what() const noexcept = 0;
  /// The core's start_solo for `req`, once the shell left pipeline mode
  /// and gave the operation the wire: send it.
  virtual void start(solo_host& host, query_request& req) = 0;
  /// libpq's buffer waits for the socket, which is writable again.
  virtual void flush(solo_host& host) = 0;
  /// Input was consumed: read what the operation allows.
  virtual void pump(solo_host& host) = 0;
  /// The socket is left unread (a copy_out whose reader is behind).
  virtual bool reads_paused() const noexcept { return false; }
  /// `req` is the request this operation runs.
  virtual bool runs(const query_request& req) const noexcept = 0;
};

}  // namespace pgpipe::detail
