// script_statement: what execute_script of both drivers accepts, decided
// from the text before anything is sent, and what running it leaves behind.
//
// Why here: both drivers send a script as one simple query, and libpq takes
// it as a C string, so a NUL byte would cut off the rest silently; a text
// with no statement is a caller's mistake, not an empty success. Whether a
// statement changes the session beyond its transaction (SET, LISTEN, temp
// tables: shared_statement) decides whether the async driver may hand the
// connection to shared callers after the lease.
#pragma once

#include <string>
#include <string_view>

namespace pgpipe::detail {

struct script_check {
  /// Empty when the script may be sent; otherwise the message of
  /// errc::invalid_argument, starting with the calling function's name
  /// (a NUL byte: sql_text.hpp's message).
  std::string refusal;
  /// A statement of it leaves the session changed (leaves_session_changed).
  bool changes_session = false;
};

/// `call` names the function in the refusal ("execute_script").
script_check check_script(std::string_view sql, std::string_view call);

/// The statement changes the session beyond its transaction: the shared
/// path refuses it as session state, and not for CREATE TEMP ... ON COMMIT
/// DROP (check_shared_statement).
bool leaves_session_changed(std::string_view statement);

}  // namespace pgpipe::detail
