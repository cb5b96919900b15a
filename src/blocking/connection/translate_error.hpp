// translate_error: the blocking driver's failures as pgpipe errors, from a
// libpqxx exception (rethrow_translated, blocking_lease.hpp) or from a libpq
// result of a statement the lease ran itself (blocking_lease::exec). Both
// use pq/libpq_failure for what the server's fields mean.
#pragma once

#include <pgpipe/blocking_lease.hpp>
#include <pgpipe/error.hpp>

#include <libpq-fe.h>

#include <system_error>

namespace pgpipe::detail {

/// The code and diagnostics of a statement that failed on `conn`: `res` is
/// libpq's result (null when libpq returned none). A lost connection (libpq
/// says so, or the server ended the session with FATAL/PANIC) is
/// errc::connection_lost, with the server's fields kept, and marks `lease`
/// broken; a server error is its SQLSTATE; an error libpq made up itself
/// (out of memory, a protocol limit) is errc::protocol_error with libpq's
/// message. Does not count the error in the pool's stats.
std::error_code translate_result(const PGresult* res, PGconn* conn, blocking_lease& lease, diagnostics& d);

}  // namespace pgpipe::detail
