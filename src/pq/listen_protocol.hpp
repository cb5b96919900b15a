// What both listeners (src/async/api/listener.cpp,
// src/blocking/api/blocking_listener.cpp) read from libpq, in one room: they
// differ in how they wait (Asio strand, poll() thread), not in what a
// LISTEN's answer means. What to send and when is listener_core's
// (src/core/listen/listener_core.hpp).
#pragma once

#include <pgpipe/error.hpp>
#include <pgpipe/notification.hpp>

#include "core/listen/listener_core.hpp"

#include <libpq-fe.h>

#include <string>
#include <string_view>
#include <system_error>
#include <vector>

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

/// Hands every notification libpq has parsed to `core`, in the server's
/// order. Returns whether there was any.
bool take_notifications(PGconn* pg, listener_core& core);

// ---- what both listeners log --------------------------------------------------

/// "connect failed: <reason>", or libpq's message (secrets scrubbed) when
/// `reason` is empty.
std::string connect_failed_text(PGconn* pg, std::string_view reason, const std::vector<std::string>& secrets);
/// The reason for a refused re-LISTEN (`server` is the server's diagnostics).
std::string relisten_failed_text(std::string_view server);
/// The line for a lost connection, with libpq's message (secrets scrubbed).
std::string connection_lost_text(PGconn* pg, const std::vector<std::string>& secrets);

}  // namespace pgpipe::detail
