// libpq_socket: the one way the async driver watches libpq's socket with Asio.
//
// Asio never owns libpq's own fd: libpq may close it by itself (EOF in
// PQconsumeInput, a multi-host or SSL fallback in PQconnectPoll) and the
// number may be reused at once by any thread. Asio watches a duplicate
// instead, which its owner closes (release_descriptor) while libpq closes
// its own.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <libpq-fe.h>

#include <optional>

namespace pgpipe::detail {

/// Closes the duplicate (libpq closes its own fd); pending waits end with
/// operation_aborted.
void release_descriptor(boost::asio::posix::stream_descriptor& sd) noexcept;

/// A descriptor on `ex` owning a close-on-exec duplicate of PQsocket(pg), or
/// nullopt when libpq has no socket (pg null, PQsocket < 0) or the duplicate
/// could not be made or registered (nothing is left open then).
std::optional<boost::asio::posix::stream_descriptor> watch_libpq_socket(const boost::asio::any_io_executor& ex,
                                                                        PGconn* pg);

/// The same for a socket libpq reports otherwise (PQcancelSocket): a
/// descriptor owning a duplicate of `fd`, or nullopt when fd < 0 or the
/// duplicate could not be made or registered.
std::optional<boost::asio::posix::stream_descriptor> watch_socket_copy(const boost::asio::any_io_executor& ex,
                                                                       int fd);

}  // namespace pgpipe::detail
