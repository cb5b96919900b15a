// shared_statement: which SQL statements may run on a connection that other
// callers share (async_client::async_query), decided from the text alone,
// before anything is sent. Sans-IO: no libpq, no Asio; a pure function.
//
// Why before sending: on a pipelined connection the neighbours' requests are
// already queued behind ours. A BEGIN would pull them into our transaction,
// a SET would change their session; finding out afterwards is too late.
//
// Refused (first statement keyword(s), case-insensitive, after whitespace and
// -- / nested /* */ comments):
//   errc::transaction_needs_lease   BEGIN, START TRANSACTION
//   errc::session_state_needs_lease SET (not SET LOCAL / SET TRANSACTION /
//       SET CONSTRAINTS; SET SESSION ..., SET ROLE, SET SESSION AUTHORIZATION
//       included), RESET, LISTEN, UNLISTEN, PREPARE (not PREPARE
//       TRANSACTION), DEALLOCATE, DISCARD, DECLARE (cursors: WITH HOLD ones
//       outlive the statement), LOAD, COPY (its protocol cannot be pipelined),
//       CREATE [OR REPLACE] [LOCAL|GLOBAL] TEMP|TEMPORARY ... (table, view,
//       sequence), CREATE TABLE|VIEW|SEQUENCE pg_temp.x, SELECT ... INTO
//       TEMP|TEMPORARY, and anywhere in the statement a call of
//       set_config(name, value, is_local) whose is_local is not literally
//       true, or of pg_advisory_lock / pg_advisory_lock_shared /
//       pg_try_advisory_lock / pg_try_advisory_lock_shared (session locks;
//       the _xact_ variants are fine).
// Never looked into: string literals ('...', E'...', $tag$...$tag$), quoted
// identifiers ("..."), comments. So `select 'begin'`, a column `reset_at` or
// a DO body are not refused. What a DO block or a procedure does inside
// cannot be seen from here (the after-the-fact check catches an open
// transaction).
#pragma once

#include <pgpipe/error.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace pgpipe::detail {

struct shared_refusal {
  errc code;              ///< transaction_needs_lease or session_state_needs_lease
  std::string statement;  ///< what was recognised, upper case: "BEGIN", "SET", "CREATE TEMP TABLE", "set_config(..., false)"
  std::string message;    ///< for diagnostics::client_message: names the statement and the way out
  /// The change outlives the transaction it ran in (false only for CREATE
  /// TEMP ... ON COMMIT DROP): a lease that ran it leaves its connection's
  /// session changed, so the async driver retires that connection on return.
  bool outlives_transaction = true;
};

/// std::nullopt when `sql` may run on a shared connection.
std::optional<shared_refusal> check_shared_statement(std::string_view sql);
/// The same decision with `message` left empty, for callers that read only
/// `code` and `outlives_transaction` (a lease checks every statement it
/// sends): a refusal's message is a few hundred bytes built for nothing.
std::optional<shared_refusal> classify_shared_statement(std::string_view sql);

}  // namespace pgpipe::detail
