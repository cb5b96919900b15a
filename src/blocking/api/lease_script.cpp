// blocking_lease::execute_script: several statements as one simple query on
// the leased connection, with libpq directly.
//
// Why not PQexec: it keeps only the last result, so in "begin; select 1/0;
// commit" the script's error is lost behind COMMIT's ROLLBACK tag. Every
// result is read here: the first error is the script's, else the last
// statement's result. A COPY in the script has no caller feeding or reading
// it: FROM STDIN is ended with an error (the server fails it with 57014 and
// skips the rest of the implicit transaction); TO STDOUT's rows are dropped.
// The server stops a simple query at its first error: a transaction the
// script opened itself is then still open, aborted; it is rolled back here.
#include <pgpipe/blocking_lease.hpp>

#include "blocking/connection/pooled_connection.hpp"
#include "blocking/connection/translate_error.hpp"
#include "core/sql/script_statement.hpp"

#include <libpq-fe.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace pgpipe {

namespace {

using pgresult_ptr = std::unique_ptr<PGresult, detail::pgresult_deleter>;

constexpr const char* copy_in_refused = "execute_script does not feed COPY ... FROM STDIN: use blocking_copy_in";

}  // namespace

result blocking_lease::execute_script(std::string_view sql) {
  if (auto check = detail::check_script(sql, "execute_script"); !check.refusal.empty())
    throw error(errc::invalid_argument, check.refusal);
  PGconn* c = conn_->raw();
  // A transaction the script opens and then fails in is the script's to
  // end: the server stopped at the error, before the script's COMMIT. One
  // the caller had open stays theirs (aborted, as any failed statement
  // leaves it: their COMMIT is answered 25P02).
  const bool outside_transaction = c != nullptr && PQtransactionStatus(c) == PQTRANS_IDLE;
  pgresult_ptr first_error;
  pgresult_ptr last;
  bool lost = c == nullptr || PQstatus(c) != CONNECTION_OK || PQsendQuery(c, std::string(sql).c_str()) != 1;
  while (!lost) {
    pgresult_ptr r{PQgetResult(c)};
    if (!r) break;
    switch (PQresultStatus(r.get())) {
      case PGRES_COPY_IN:
        lost = PQputCopyEnd(c, copy_in_refused) != 1;
        break;
      case PGRES_COPY_OUT: {
        char* buf = nullptr;
        int n = 0;
        while ((n = PQgetCopyData(c, &buf, 0)) > 0) PQfreemem(buf);
        lost = n == -2;
        break;
      }
      case PGRES_COPY_BOTH:
        // Replication's protocol: nothing here can end it.
        mark_broken();
        lost = true;
        break;
      case PGRES_FATAL_ERROR:
      case PGRES_BAD_RESPONSE:
      case PGRES_NONFATAL_ERROR:
        if (!first_error) first_error = std::move(r);
        break;
      default:
        last = std::move(r);
        break;
    }
    if (PQstatus(c) != CONNECTION_OK) lost = true;
  }
  if (first_error && !lost && outside_transaction && PQtransactionStatus(c) == PQTRANS_INERROR) {
    pgresult_ptr rolled_back{PQexec(c, "rollback")};
    if (PQresultStatus(rolled_back.get()) != PGRES_COMMAND_OK) lost = true;
  }
  if (lost || first_error) {
    // Stopped before libpq's last result: the connection's state is unknown.
    if (lost) mark_broken();
    diagnostics d;
    const std::error_code ec = detail::translate_result(lost ? nullptr : first_error.get(), c, *this, d);
    note_error(ec);
    throw error(ec, std::move(d));
  }
  return result(last.release());
}

}  // namespace pgpipe
