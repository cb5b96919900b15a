// Server NOTICE/WARNING messages to the driver's logger, never to stderr.
//
// libpq's default notice processor prints to stderr; both drivers replace the
// receiver of every PGconn they open with ours. libpq also hands a
// connection's notice hooks to every PGresult made from it and may call them
// from that result after the connection is gone, so the hook's argument is not
// a pointer to anything: it is a number looked up in a registry, and a route
// that has ended drops what still arrives.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <functional>
#include <string>

namespace pgpipe::detail {

/// Receives one notice as a log line; `warning` is true for WARNING (and
/// anything more severe), false for NOTICE, INFO, LOG, DEBUG.
using notice_fn = std::function<void(bool warning, const std::string& line)>;

/// Routes `conn`'s notices to `fn` as "server NOTICE (slot 3, backend pid
/// 4242): <message> (detail: ...) (hint: ...)" while this object lives.
/// Create it once the connection is open (the pid is read then); `fn` runs
/// on whichever thread is reading `conn`.
class notice_route {
 public:
  notice_route(PGconn* conn, std::uint64_t slot, notice_fn fn);
  ~notice_route();
  notice_route(const notice_route&) = delete;
  notice_route& operator=(const notice_route&) = delete;

 private:
  std::uint64_t id_;
};

}  // namespace pgpipe::detail
