// The logger both drivers report to (async_client, blocking_pool).
#pragma once

#include <functional>
#include <string_view>

namespace pgpipe {

enum class log_level { debug, info, warning, error };

/// Receives the driver's log lines (connects, disconnects with their reason,
/// blocked event loops, the server's NOTICE/WARNING messages with the
/// connection's slot and backend pid). Called from the driver's threads,
/// possibly several at once: it must be thread-safe and quick. Never receives
/// a password. The library itself never prints to stdout or stderr.
using logger_fn = std::function<void(log_level, std::string_view)>;

}  // namespace pgpipe
