// What the blocking driver's own features (COPY) reach inside a lease: the
// libpq handle of the leased connection, which libpqxx 6.4 keeps private.
#pragma once

#include <pgpipe/blocking_lease.hpp>

#include "blocking/connection/pooled_connection.hpp"

#include <libpq-fe.h>

#include <string>
#include <vector>

namespace pgpipe::detail {

struct lease_access {
  /// Null for an empty lease.
  static PGconn* raw(const blocking_lease& l) noexcept { return l.conn_ != nullptr ? l.conn_->raw() : nullptr; }
  /// The leased connection's password spellings (empty for an empty lease).
  static const std::vector<std::string>& secrets(const blocking_lease& l) noexcept {
    static const std::vector<std::string> none;
    return l.conn_ != nullptr ? l.conn_->secrets() : none;
  }
  /// A COPY that ended: counted once in stats().completed, its error (if
  /// any) by kind, as exec() counts a statement.
  static void note_outcome(blocking_lease& l, const std::error_code& ec) noexcept { l.note_outcome(ec); }
};

}  // namespace pgpipe::detail
