// libpq's failure language, in one room for both drivers: what a server
// result or a failed connect means as a pgpipe error_code, how a password is
// kept out of every message libpq or the server produced, and the limits both
// drivers apply before anything is sent (a NUL byte in text, the
// prepared-statement cap).
//
// Depends on libpq and pgpipe/error.hpp only (no Asio, no libpqxx), so the
// async driver, the blocking driver and the SCRAM probe can all use it.
// One list of libpq messages for both drivers, so that a failure gets the
// same code from either (tests/unit/pq/libpq_failure_test pins one table for
// both).
#pragma once

#include "core/pool/connect_error.hpp"

#include <pgpipe/error.hpp>

#include <libpq-fe.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace pgpipe::detail {

// ---- server results -----------------------------------------------------------

/// The server's fields of an error result (severity, SQLSTATE, message...).
diagnostics diagnostics_of(const PGresult* res);

/// True when the error result ends the session (FATAL or PANIC): the
/// connection is going away, so the request is reported as connection_lost.
bool is_session_fatal(const PGresult* res);

// ---- connect failures ---------------------------------------------------------

/// A failed connection attempt as a caller (and pool_core) needs it.
struct connect_failure {
  /// auth_failed, bad_conninfo, server_unreachable, a SQLSTATE the server
  /// named (53300 too many connections, 3D000 no such database, 28000 no such
  /// role, 57P03 starting up / shutting down / in recovery) or connect_failed.
  std::error_code ec;
  /// Server part ("FATAL:  ...") as severity + message (+ sqlstate when the
  /// code is known); client_message = connect_error_text(message)
  /// (core/pool/connect_error.hpp): "could not connect: <libpq's message>".
  diagnostics diag;
  /// libpq's message on one line, secrets scrubbed.
  std::string message;
  /// kind_of_connect_failure(ec, message): whether waiting callers fail at once.
  connect_failure_kind kind = connect_failure_kind::transient;
};

/// Classifies libpq's message for a failed connect. libpq 15 keeps no
/// PGresult for a connect failure, so the SQLSTATE must be read from the
/// (English) text; a non-English lc_messages on the server degrades the
/// server cases to connect_failed. `needs_password` is
/// PQconnectionNeedsPassword. Every secret is scrubbed from what is returned.
connect_failure classify_connect_failure(std::string_view libpq_message, bool needs_password,
                                         const std::vector<std::string>& secrets);

/// classify_connect_failure(message, false, {}).ec, for a message already scrubbed.
std::error_code classify_connect_error(std::string_view message);

/// Whether `message` (libpq's, possibly naming several hosts, or the async
/// host walk's joined one) says only that host names do not exist: every
/// host's failure is the resolver's final answer (EAI_NONAME, EAI_NODATA)
/// and no host was reached or timed out. "Temporary failure in name
/// resolution" is not that answer.
bool every_host_unknown(std::string_view message);

/// kind_of_connect_error(ec, every_host_unknown(message)): the kind of a
/// failed connect from its code and libpq's words, for both drivers.
connect_failure_kind kind_of_connect_failure(const std::error_code& ec, std::string_view message);

/// What both drivers say when pool_params::on_connect[index] failed with
/// `what` (the server's diagnostics): the connect failure's message.
std::string on_connect_failure(std::size_t index, std::string_view sql, std::string_view what);

/// Both drivers: the message for a named statement the driver has just
/// prepared on this connection that the server then does not know (26000) or
/// already has under that fresh name (42P05). The driver's bookkeeping rules
/// out a migration or its own mistake: the server session changed under the
/// connection, as behind a transaction pooler. Appended to the error's
/// diagnostics and logged.
std::string pooler_suspected_message(std::string_view sqlstate);

// ---- passwords and conninfo ----------------------------------------------------

/// `configured` and the password libpq used for `conn` (PQpass: the one
/// pool_params::before_connect returned, which the pool's own conninfo does
/// not carry). libpq's words about a connection can quote only that
/// connection's password, so this list scrubs everything libpq says of it.
std::vector<std::string> secrets_of(PGconn* conn, std::vector<std::string> configured);

/// libpq's message on one line, with every secret scrubbed.
std::string clean_message(std::string_view message, const std::vector<std::string>& secrets);

/// Every secret scrubbed from every text field of `d` (the server's fields
/// and libpq's words a failure carries): what a lost connection reports may
/// quote libpq, whose words can contain a password.
void scrub(diagnostics& d, const std::vector<std::string>& secrets);

/// Every spelling of the password in a conninfo string (key=value or URI),
/// found even when the string does not parse (an unterminated quote, a
/// broken URI): libpq may quote any part of a malformed string back. Longest
/// first, so that clean_message scrubs a secret containing another whole.
/// Usable by any layer that holds a conninfo (the SCRAM probe too).
std::vector<std::string> passwords_of(std::string_view conninfo);

/// Empty when libpq parses the conninfo; otherwise libpq's reason (then the
/// caller reports errc::bad_conninfo), with the string itself replaced by
/// redact_conninfo() and every secret scrubbed.
std::string conninfo_parse_error(const std::string& conninfo, const std::vector<std::string>& secrets);

// ---- limits checked before anything is sent ---------------------------------

/// libpq sends text as C strings: a NUL byte would silently cut the value
/// there. Index (0-based) of the first value holding one, if any.
std::optional<std::size_t> first_value_with_nul(const std::vector<std::optional<std::string>>& values);

/// The message both drivers give for such a value ($n is 1-based).
std::string nul_byte_message(std::size_t one_based_index);

}  // namespace pgpipe::detail
