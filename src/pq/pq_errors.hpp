// Turning what libpq reports into pgpipe errors: server results into a
// SQLSTATE error_code plus diagnostics, connect failures into the errc that
// tells a caller (and pool_core) whether retrying can help.
#pragma once

#include <pgpipe/error.hpp>

#include <libpq-fe.h>

#include <string>
#include <string_view>
#include <system_error>
#include <vector>

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

/// libpq's message on one line, with every secret scrubbed.
std::string clean_message(std::string_view message, const std::vector<std::string>& secrets);

/// Every spelling of the password in a conninfo string (key=value or URI),
/// found even when the string does not parse (an unterminated quote, a
/// broken URI): libpq may quote any part of a malformed string back.
std::vector<std::string> passwords_of(const std::string& conninfo);

/// Non-empty when libpq cannot parse the conninfo (then errc::bad_conninfo):
/// libpq's reason, scrubbed.
std::string conninfo_parse_error(const std::string& conninfo, const std::vector<std::string>& secrets);

}  // namespace pgpipe::detail
