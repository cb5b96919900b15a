// listen_protocol: see listen_protocol.hpp.
#include "pq/listen_protocol.hpp"

#include "pq/libpq_failure.hpp"

namespace pgpipe::detail {

bool read_command_results(PGconn* pg, listen_outcome& out) {
  while (!PQisBusy(pg)) {
    PGresult* res = PQgetResult(pg);
    if (res == nullptr) return true;
    const ExecStatusType st = PQresultStatus(res);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && !out.ec) {
      out.diag = diagnostics_of(res);
      out.ec = out.diag.sqlstate.empty() ? make_error_code(errc::protocol_error) : make_sqlstate(out.diag.sqlstate);
    }
    PQclear(res);
  }
  return false;
}

bool take_notifications(PGconn* pg, std::deque<notification>& out) {
  bool any = false;
  while (PGnotify* n = PQnotifies(pg)) {
    notification one;
    one.channel = n->relname;
    one.payload = n->extra;
    one.sender_pid = n->be_pid;
    PQfreemem(n);
    out.push_back(std::move(one));
    any = true;
  }
  return any;
}

std::string relisten_sql(const std::set<std::string>& channels) {
  std::string sql;
  for (const auto& c : channels) sql += "LISTEN " + quote_identifier(c) + ";";
  return sql;
}

}  // namespace pgpipe::detail
