// Turning what libpq reports into pgpipe errors: server results into a
// SQLSTATE error_code plus diagnostics, connect failures into the errc that
// tells a caller (and pool_core) whether retrying can help.
#pragma once

#include <pgpipe/error.hpp>

#include <libpq-fe.h>

#include <string>
#include <string_view>
#include <system_error>

namespace pgpipe::detail {

/// The server's fields of an error result (severity, SQLSTATE, message...).
diagnostics diagnostics_of(const PGresult* res);

/// True when the error result ends the session (FATAL or PANIC): the
/// connection is going away, so the request is reported as connection_lost.
bool is_session_fatal(const PGresult* res);

/// Classifies a failed connection attempt from libpq's message (libpq 15
/// exposes no SQLSTATE for it): auth_failed, server_unreachable,
/// bad_conninfo, a SQLSTATE the server named (53300 too many connections,
/// 3D000 no such database, 57P03 starting up) or connect_failed.
std::error_code classify_connect_error(std::string_view message);

/// libpq's message with its trailing newline removed and `secret` (the
/// password from the connection string, if any) scrubbed.
std::string clean_message(std::string_view message, std::string_view secret);

/// The password in a conninfo string (key=value or URI), or "" when none or
/// when the string does not parse.
std::string password_of(const std::string& conninfo);

}  // namespace pgpipe::detail
