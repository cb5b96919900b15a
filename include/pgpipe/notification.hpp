// What both listeners deliver (pgpipe::async_listener, pgpipe::blocking_listener),
// and the identifier quoting they use for LISTEN/UNLISTEN.
//
// In core (no libpq, no Asio, no libpqxx) so that each driver's listener can
// include it without pulling in the other driver.
#pragma once

#include <string>
#include <string_view>

namespace pgpipe {

/// One NOTIFY, or the gap marker.
struct notification {
  std::string channel;  ///< as the server spells it (case-folded unless it was quoted in NOTIFY)
  std::string payload;  ///< up to 7999 bytes; empty when none
  int sender_pid = 0;   ///< backend pid of the notifying session
  /// True for the gap event (channel and payload empty): the connection was
  /// lost and is back, subscribed again; notifications may have been missed.
  bool gap = false;
};

/// `name` quoted as an SQL identifier ("a""b"), for LISTEN/UNLISTEN/NOTIFY.
std::string quote_identifier(std::string_view name);

}  // namespace pgpipe
