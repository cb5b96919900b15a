// commit_check: a COMMIT the server answered with ROLLBACK.
//
// PostgreSQL answers COMMIT (END, COMMIT AND CHAIN, PREPARE TRANSACTION) of a
// transaction that had failed with the command tag ROLLBACK and no error:
// everything in it is gone. Passed on as it comes, that reads as success, so
// the async driver's queries (lease and shared, request_outcome) ask here and
// report an error instead, which the async transaction helper passes on; the
// blocking helper reports the same diagnostics (libpqxx refuses that commit
// itself). blocking_pool::exec never meets such a COMMIT: each call has its
// own lease, whose open transaction is rolled back when it returns.
//
// The error is SQLSTATE 25P02 (in_failed_sql_transaction): the code the
// server gives every other statement of such a transaction. The server's
// result (tag ROLLBACK) stays with it. With AND CHAIN the server has opened
// a new transaction, which the caller still owns and must end.
#pragma once

#include <pgpipe/error.hpp>

#include <string_view>
#include <system_error>

namespace pgpipe::detail {

/// True when the last statement of `sql` asks to commit the transaction in
/// progress (COMMIT or END, with WORK/TRANSACTION/AND [NO] CHAIN; PREPARE
/// TRANSACTION) and `command_tag` says the server rolled it back. Lexes the
/// text only when the tag is ROLLBACK.
bool commit_rolled_back(std::string_view sql, std::string_view command_tag);

/// The SQLSTATE (25P02) and message of that error. `statement` names what
/// was asked ("COMMIT", "PREPARE TRANSACTION").
diagnostics rolled_back_commit_diagnostics(std::string_view statement = "COMMIT");

/// A COMMIT written and not answered: errc::query_timeout (the client
/// stopped waiting: a synchronous standby that is down, a slow deferred
/// trigger) or errc::connection_lost. The server may have committed, so the
/// report must never read as "nothing stayed": when `ec` is one of those,
/// `d.client_message` says so (the code is kept) and true is returned.
bool note_commit_in_doubt(const std::error_code& ec, diagnostics& d);

/// The statement to name in those diagnostics: "PREPARE TRANSACTION" when the
/// last statement of `sql` is one, else "COMMIT".
std::string_view commit_statement_name(std::string_view sql);

}  // namespace pgpipe::detail
