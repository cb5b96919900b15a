// The devcluster's own libpq use: one short-lived connection per call, SQL
// in, rows of text out, failures as std::runtime_error with the server's
// message (libpq's messages never echo the password).
#pragma once

#include <libpq-fe.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pgpipe::devcluster {

struct pg_conn_deleter {
  void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
using conn_ptr = std::unique_ptr<PGconn, pg_conn_deleter>;

/// A conninfo value: as is when plain, else single-quoted with ' and \ escaped.
std::string quote_value(std::string_view v);

/// `s` without trailing newlines and spaces (libpq's messages end with one).
std::string trim(std::string s);

/// PQconnectdb, throwing with libpq's message when the connection fails.
conn_ptr connect_or_throw(const std::string& conninfo);

/// Runs `sql` (several statements allowed without parameters; the last
/// result counts) and returns every row, each field as text ("" for NULL).
std::vector<std::vector<std::string>> run_query(PGconn* conn, std::string_view sql,
                                                const std::vector<std::string>& params);

}  // namespace pgpipe::devcluster
