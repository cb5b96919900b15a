// What both drivers' pools say when no connection could be opened, and the
// one rule for which connect errors no retry can fix. pool_core fails waiters
// with the connect error (at once when it is permanent); the driver remembers
// the last attempt's message and gives it to every request failed that way,
// in the same words in both drivers.
#pragma once

#include <string>
#include <string_view>
#include <system_error>

namespace pgpipe::detail {

/// Whether `ec` says a connection could not be opened (a connect error, or
/// the SQLSTATE a server refused the connection with): the errors pool_core
/// counts itself, and that carry the last connect attempt's message.
bool is_connect_error(const std::error_code& ec) noexcept;

/// What a failed connect means for callers waiting for a connection.
enum class connect_failure_kind {
  /// The next attempt may succeed on its own (refused, timed out,
  /// unreachable, 53300 too many connections, 57P03 starting up): waiters
  /// keep their acquire_timeout while the pool retries after its back-off.
  transient,
  /// No retry succeeds until someone changes the configuration, the server's
  /// roles or the DNS: waiters fail at once with the error.
  permanent,
};

/// The rule, for both drivers: permanent are auth_failed, bad_conninfo,
/// SQLSTATE class 28 (wrong password 28P01, no such role or no pg_hba entry
/// 28000), 3D000 (no such database), and a failure that was only the
/// resolver's final answer that a host name does not exist
/// (`every_host_unknown`: the error code, server_unreachable, is the one a
/// refused port gets, so the driver says which it was). Everything else is
/// transient.
connect_failure_kind kind_of_connect_error(const std::error_code& ec, bool every_host_unknown);

/// "could not connect: <message>", where `message` is libpq's (or the
/// driver's) reason, password already removed.
std::string connect_error_text(std::string_view message);

}  // namespace pgpipe::detail
