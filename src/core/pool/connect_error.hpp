// What both drivers' pools say when no connection could be opened. pool_core
// fails waiters with the connect error; the driver remembers the last
// attempt's message and gives it to every request failed that way, in the
// same words in both drivers.
#pragma once

#include <string>
#include <string_view>
#include <system_error>

namespace pgpipe::detail {

/// Whether `ec` says a connection could not be opened (a connect error, or
/// the SQLSTATE a server refused the connection with): the errors pool_core
/// counts itself, and that carry the last connect attempt's message.
bool is_connect_error(const std::error_code& ec) noexcept;

/// "could not connect: <message>", where `message` is libpq's (or the
/// driver's) reason, password already removed.
std::string connect_error_text(std::string_view message);

}  // namespace pgpipe::detail
