// blocking_cancel: asks the server to stop the statement running on a
// connection, the blocking way (PQcancel opens a connection of its own and
// waits for it). For the blocking driver's own thread, never for an event
// loop: the async driver cancels through async/connection/cancel_job.
#pragma once

struct pg_conn;

namespace pgpipe::detail {

/// Sends a cancel request for what `conn` is running. False when no request
/// could be sent (no cancel key, the server unreachable); true says it was
/// sent, not that the statement stopped: the caller reads the outcome.
bool send_blocking_cancel(pg_conn* conn) noexcept;

}  // namespace pgpipe::detail
