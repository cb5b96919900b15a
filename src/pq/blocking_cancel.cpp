// blocking_cancel: see blocking_cancel.hpp.
#include "pq/blocking_cancel.hpp"

#include <libpq-fe.h>

namespace pgpipe::detail {

bool send_blocking_cancel(pg_conn* conn) noexcept {
  PGcancel* cancel = PQgetCancel(conn);
  if (cancel == nullptr) return false;
  char err[256];
  const bool ok = PQcancel(cancel, err, sizeof err) == 1;
  PQfreeCancel(cancel);
  return ok;
}

}  // namespace pgpipe::detail
