// pool_params::on_connect for the async driver: the statements run on a new
// connection before the pool hears of it, so no caller ever sees the session
// without them. They go through the connection's own FIFO as internal
// requests (pipelined, each in its own Sync segment, never prepared), which
// keeps the shell free of a second way to talk to the server.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace pgpipe::detail {

class pipelined_connection;

/// Enqueues every statement on `conn` (ready, not yet announced) and, once
/// all have completed, calls conn->session_setup_done(ec, message): ec is
/// the first failure (the server's SQLSTATE, or the connection-loss code) and
/// message names the statement and the server's diagnostics.
/// Each statement must complete within `timeout` (connect_timeout; 0: none).
void run_session_setup(const std::shared_ptr<pipelined_connection>& conn, const std::vector<std::string>& statements,
                       std::chrono::milliseconds timeout);

}  // namespace pgpipe::detail
