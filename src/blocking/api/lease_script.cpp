// blocking_lease::execute_script: several statements as one simple query on
// the leased connection, with libpq directly (not PQexec, which keeps only
// the last result). What is kept of each result, and when the script's own
// transaction is rolled back, are pq/script_results' rules, shared with the
// async driver.
#include <pgpipe/blocking_lease.hpp>

#include "blocking/connection/pooled_connection.hpp"
#include "blocking/connection/translate_error.hpp"
#include "core/sql/script_statement.hpp"
#include "pq/script_results.hpp"

#include <libpq-fe.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace pgpipe {

namespace {

using pgresult_ptr = detail::script_results::pgresult_ptr;
using step = detail::script_results::step;

constexpr const char* copy_in_refused = "execute_script does not feed COPY ... FROM STDIN: use blocking_copy_in";

}  // namespace

result blocking_lease::execute_script(std::string_view sql) {
  if (auto check = detail::check_script(sql, "execute_script"); !check.refusal.empty()) {
    note_outcome(make_error_code(errc::invalid_argument));
    throw error(errc::invalid_argument, check.refusal);
  }
  PGconn* c = conn_->raw();
  detail::script_results results(c != nullptr && PQtransactionStatus(c) == PQTRANS_IDLE);
  bool lost = c == nullptr || PQstatus(c) != CONNECTION_OK || PQsendQuery(c, std::string(sql).c_str()) != 1;
  while (!lost) {
    pgresult_ptr r{PQgetResult(c)};
    if (!r) break;
    switch (results.take(std::move(r))) {
      case step::next:
        break;
      case step::end_copy_in:
        lost = PQputCopyEnd(c, copy_in_refused) != 1;
        break;
      case step::drain_copy_out: {
        char* buf = nullptr;
        int n = 0;
        while ((n = PQgetCopyData(c, &buf, 0)) > 0) PQfreemem(buf);
        lost = n == -2;
        break;
      }
      case step::give_up:
        mark_broken();
        lost = true;
        break;
    }
    if (PQstatus(c) != CONNECTION_OK) lost = true;
  }
  if (!lost && results.needs_rollback(PQtransactionStatus(c))) {
    pgresult_ptr rolled_back{PQexec(c, "rollback")};
    if (PQresultStatus(rolled_back.get()) != PGRES_COMMAND_OK) lost = true;
  }
  if (lost || results.failed()) {
    // Stopped before libpq's last result: the connection's state is unknown.
    if (lost) mark_broken();
    diagnostics d;
    const std::error_code ec = detail::translate_result(lost ? nullptr : results.first_error(), c, *this, d);
    note_outcome(ec);
    throw error(ec, std::move(d));
  }
  note_outcome({});
  return result(results.take_last().release());
}

}  // namespace pgpipe
