// What both listeners (src/async/listener.cpp, src/blocking/blocking_listener.cpp)
// read from and send to libpq, in one room: they differ in how they wait
// (Asio strand, poll() thread), not in what a LISTEN's answer means.
#pragma once

#include <pgpipe/error.hpp>
#include <pgpipe/notification.hpp>

#include <libpq-fe.h>

#include <deque>
#include <set>
#include <string>
#include <system_error>

namespace pgpipe::detail {

/// The outcome of one command (LISTEN, UNLISTEN, or the several LISTENs
/// sent again after a reconnect): its first error, if any.
struct listen_outcome {
  std::error_code ec;
  diagnostics diag;
};

/// Reads the results libpq holds complete, never blocking. Returns true once
/// the command's last result was read; `out` then holds its outcome (kept
/// across calls until then, so an error read early is not lost).
bool read_command_results(PGconn* pg, listen_outcome& out);

/// Moves every notification libpq has parsed to `out`, in the server's
/// order. Returns whether there was any.
bool take_notifications(PGconn* pg, std::deque<notification>& out);

/// One simple query LISTENing to every channel (they run in one implicit
/// transaction: all or none are listened).
std::string relisten_sql(const std::set<std::string>& channels);

}  // namespace pgpipe::detail
