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

bool take_notifications(PGconn* pg, listener_core& core) {
  bool any = false;
  while (PGnotify* n = PQnotifies(pg)) {
    notification one;
    one.channel = n->relname;
    one.payload = n->extra;
    one.sender_pid = n->be_pid;
    PQfreemem(n);
    core.on_notification(std::move(one));
    any = true;
  }
  return any;
}

std::string connect_failed_text(PGconn* pg, std::string_view reason, const std::vector<std::string>& secrets) {
  const std::string why = !reason.empty() ? std::string(reason)
                          : pg != nullptr ? clean_message(PQerrorMessage(pg), secrets)
                                          : std::string("out of memory");
  return "connect failed: " + why;
}

std::string relisten_failed_text(std::string_view server) {
  return "LISTEN again after a reconnect failed: " + std::string(server);
}

std::string connection_lost_text(PGconn* pg, const std::vector<std::string>& secrets) {
  return "connection lost (" + (pg != nullptr ? clean_message(PQerrorMessage(pg), secrets) : std::string()) +
         "): reconnecting; a gap event follows";
}

}  // namespace pgpipe::detail
