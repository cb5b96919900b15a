// A plain libpq connection for tests that check the server or a partner
// (PgBouncer, a standby) directly, below both drivers.
#pragma once

#include <libpq-fe.h>

#include <memory>
#include <string>

namespace pgpipe::test {

struct raw_conn_deleter {
  void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
/// Owns a PGconn; PQstatus tells whether it connected.
using raw_conn = std::unique_ptr<PGconn, raw_conn_deleter>;

/// PQconnectdb, blocking; never null (libpq returns a BAD connection instead,
/// unless out of memory).
inline raw_conn raw_connect(const std::string& conninfo) { return raw_conn(PQconnectdb(conninfo.c_str())); }

}  // namespace pgpipe::test
