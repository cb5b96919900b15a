// request_outcome: see request_outcome.hpp.
#include "async/connection/request_outcome.hpp"

#include "core/sql/commit_check.hpp"
#include "pq/libpq_failure.hpp"

#include <libpq-fe.h>

#include <optional>

namespace pgpipe::detail {

std::pair<std::error_code, result> outcome_result(pipe_outcome o, query_request& req, const std::string& break_reason) {
  using out = std::pair<std::error_code, result>;
  auto fail = [](errc e, std::string m) { return out{make_error_code(e), client_error_result(std::move(m))}; };
  auto with_error = [&](std::optional<std::error_code> forced) {
    if (!req.err) return fail(errc::protocol_error, "the server reported an error without a result");
    diagnostics d = diagnostics_of(req.err.get());
    std::error_code ec = forced ? *forced
                         : !d.sqlstate.empty() ? make_sqlstate(d.sqlstate)
                                               : make_error_code(errc::protocol_error);
    return out{ec, result(req.err.release(), std::move(d))};
  };
  switch (o) {
    case pipe_outcome::ok:
      if (req.ok && commit_rolled_back(req.spec.sql, PQcmdStatus(req.ok.get()))) {
        // The server's result (tag ROLLBACK) stays with the error.
        return out{make_sqlstate("25P02"),
                   result(req.ok.release(), rolled_back_commit_diagnostics(commit_statement_name(req.spec.sql)))};
      }
      if (req.ok) return out{std::error_code{}, result(req.ok.release())};
      return fail(errc::protocol_error, "the server sent no result for the query");
    case pipe_outcome::sql_error:
      return with_error(std::nullopt);
    case pipe_outcome::pooler_suspected: {
      // The server's code and fields stay; pgpipe says what they mean here.
      if (!req.err) return fail(errc::protocol_error, "the server reported an error without a result");
      diagnostics d = diagnostics_of(req.err.get());
      d.client_message = pooler_suspected_message(d.sqlstate);
      const std::error_code ec = make_sqlstate(d.sqlstate);
      return out{ec, result(req.err.release(), std::move(d))};
    }
    case pipe_outcome::cancelled_by_server:
      // No error of its own: the cancel stopped the segment ahead of it.
      if (!req.err) return fail(errc::cancelled, "cancelled on the server before it ran");
      return with_error(make_error_code(errc::cancelled));
    case pipe_outcome::timed_out_on_server: {
      // The server's fields (57014) stay; the code says why it was stopped.
      if (!req.err) return fail(errc::query_timeout, "query timed out; the server stopped it at the deadline");
      diagnostics d = diagnostics_of(req.err.get());
      d.client_message = "query timed out: the server stopped it at the client's deadline";
      return out{make_error_code(errc::query_timeout), result(req.err.release(), std::move(d))};
    }
    case pipe_outcome::session_ended:
      return with_error(make_error_code(errc::connection_lost));
    case pipe_outcome::no_result:
      return fail(errc::protocol_error, "the server sent no result for the query");
    case pipe_outcome::cancelled_unsent:
      return fail(errc::cancelled, "cancelled before it was sent");
    case pipe_outcome::cancelled_detached:
      return fail(errc::cancelled, "cancelled after it was sent; result discarded");
    case pipe_outcome::cancel_unconfirmed:
      return fail(errc::cancelled, "cancelled; the server did not confirm in time");
    case pipe_outcome::timeout_unsent:
      return fail(errc::query_timeout, "query timed out before it was sent");
    case pipe_outcome::timeout_detached:
      return fail(errc::query_timeout, "query timed out after it was sent (it may have executed); result discarded");
    case pipe_outcome::too_many_params:
      return fail(errc::invalid_argument, "too many parameters (" + std::to_string(req.spec.params.values.size()) +
                                       "; the protocol allows 65535)");
    case pipe_outcome::not_sent:
      return fail(errc::not_sent, "connection lost before the request was sent: " + break_reason);
    case pipe_outcome::connection_lost:
      return fail(errc::connection_lost, "connection lost after the request was sent (it may have executed): " + break_reason);
    case pipe_outcome::closed:
      return fail(errc::closed, "client closed");
    case pipe_outcome::skipped: {
      // What the server would have said had the statement reached it.
      diagnostics d;
      d.sqlstate = "25P02";
      d.client_message = "not run: an earlier statement of its pipelined transaction failed";
      return out{make_sqlstate("25P02"), result(std::move(d))};
    }
    case pipe_outcome::unit_failed:
      return fail(errc::not_sent, "not sent: the BEGIN of its transaction failed, and nothing of the transaction's "
                                  "work may run outside it");
    case pipe_outcome::transaction_left_open:
      return fail(errc::connection_lost,
           "the statement left a transaction open on a shared connection; the connection was retired and the "
           "transaction rolled back (transactions need a lease: async_acquire)");
  }
  return fail(errc::protocol_error, "unknown outcome");
}

}  // namespace pgpipe::detail
