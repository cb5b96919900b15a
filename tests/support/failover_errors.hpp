// What a write may fail with while a failover is under way, shared by the
// failover tests (direct pool and through the read routers).
#pragma once

#include <pgpipe/error.hpp>

#include <system_error>

namespace pgpipe::test {

/// Lost with the old primary, no server to connect to yet, or the pool's wait
/// for one ran out (errc::pool_timeout). Anything else is a fault: 25006 from
/// a standby, which read-write never connects to before the promotion, and
/// errc::query_timeout, a write that hung on a connection: a crashed
/// server's sockets close, so a write in flight is lost, never left hanging.
inline bool acceptable_failover_write_error(const std::error_code& ec) {
  return ec == errc_condition::connection_lost || ec == errc_condition::connect_error || ec == errc::pool_timeout;
}

}  // namespace pgpipe::test
