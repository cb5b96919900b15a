// The pipeline core's vocabulary with its shell (pipeline_core.hpp): the
// actions it asks for, the outcomes it gives requests, and the shell's
// reading of what libpq said.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pgpipe::detail {

using pipe_id = std::uint64_t;

enum class pipe_outcome : unsigned char {
  ok,                     ///< the shell's stored result (no_result if none was stored)
  sql_error,              ///< the shell's stored error result
  cancelled_by_server,    ///< stored error (57014) after our PQcancel; none if the cancel skipped it (a chain)
  no_result,              ///< Sync without any result: protocol error
  cancelled_unsent,       ///< removed from the FIFO before it was written
  cancelled_detached,     ///< written; caller answered, results discarded
  cancel_unconfirmed,     ///< PQcancel sent, no answer before the deadline
  timeout_unsent,
  timeout_detached,
  too_many_params,        ///< never written: more than 65535 parameters
  not_sent,               ///< connection broke before it was written
  connection_lost,        ///< connection broke after it was written
  session_ended,          ///< the head's stored FATAL error ended the session
  closed,                 ///< abort(): client teardown
  transaction_left_open,  ///< safety net tripped on this request
  pooler_suspected,       ///< stored error (26000/42P05) that only a transaction pooler explains
  skipped,                ///< a chain's request the server skipped after an earlier one's error
  unit_failed,            ///< never written: the request opening its unit (BEGIN) failed
  timed_out_on_server,    ///< stored error (57014) after the cancel sent at its deadline: the server stopped it
};

struct pipe_action {
  enum class kind : unsigned char {
    send,         ///< write `id`: Parse of `name` first if `parse`; Bind/Execute of `name`
                  ///< (unnamed with the request's SQL if empty); then Sync if `sync`
    send_internal,///< write `sql` (no parameters, unnamed) + Sync; its results are the core's
    close_statement,///< Close of prepared statement `name` + Sync; its results are the core's
    flush,        ///< everything sent since the last flush
    single_row,   ///< set single-row mode at once: `id` is the head at its Execute
    complete,     ///< `id` completes with `outcome`
    release,      ///< `units` shared units of pool capacity go back to the pool
    start_cancel, ///< PQcancel for `id` (off the loop); answer on_cancel_returned / on_cancel_failed(_once_started)
    close,        ///< the connection is unusable (`reason`): tear it down; completes follow
    start_solo,   ///< nothing is written: leave pipeline mode and start solo request `id`; answer on_solo_end
  };
  explicit pipe_action(kind k, pipe_id i = 0) : what(k), id(i) {}
  kind what;
  pipe_id id = 0;
  pipe_outcome outcome = pipe_outcome::ok;
  bool parse = false;
  bool sync = true;  ///< send: a Sync follows (false: more of the same batch follow)
  std::string name;  ///< send, close_statement: statement name; send_internal: the SQL
  std::string reason;
  std::size_t units = 0;
};

/// The shell's reading of one PGresult of the head request.
enum class pipe_result : unsigned char {
  command_ok,  ///< COMMAND_OK, EMPTY_QUERY, TUPLES_OK without rows
  rows,        ///< TUPLES_OK with rows, SINGLE_TUPLE
  error,       ///< FATAL/NONFATAL/BAD_RESPONSE (not session-fatal: see on_session_ended)
  aborted,     ///< PIPELINE_ABORTED: skipped after this segment's error
};

/// What the shell does with that PGresult.
enum class pipe_keep : unsigned char { as_ok, as_error, stream_row, discard };

enum class tx_state : unsigned char { idle, active, in_transaction, failed, unknown };

}  // namespace pgpipe::detail
