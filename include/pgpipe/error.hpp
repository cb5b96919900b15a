// Error model shared by every part of pgpipe.
//
// Two categories:
//  - pgpipe::errc (client_category()): conditions the client detects itself.
//  - SQLSTATE (sqlstate_category()): errors the server reported; the value
//    encodes the five-character SQLSTATE, so `ec == make_sqlstate("22012")`
//    and `sqlstate_of(ec) == "22012"` both work.
// `diagnostics` keeps the server's fields apart from the client's message.
// No message produced here ever contains a password: conninfo strings are
// passed through redact_conninfo() before they are quoted.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace pgpipe {

enum class errc {
  // Pool and request lifecycle.
  pool_timeout = 1,    ///< no connection capacity became free before the deadline
  queue_full,          ///< max_queued requests were already waiting; rejected at once
  closed,              ///< the pool/client is closing or closed
  cancelled,           ///< the caller cancelled the operation
  query_timeout,       ///< the per-query timeout fired (the query may have executed)
  // Connection loss. Both compare equal to errc_condition::connection_lost.
  not_sent,            ///< connection lost before the request was written: safe to retry
  connection_lost,     ///< connection lost after the request was written: it may have executed
  // Connecting.
  bad_conninfo,        ///< the connection string cannot be parsed
  server_unreachable,  ///< unknown host, connection refused, network unreachable, connect timeout
  auth_failed,         ///< the server rejected the credentials
  connect_failed,      ///< any other failure to establish a session
  // Using results and parameters.
  bad_params,          ///< pool_params (or another *_params) failed validation
  invalid_argument,    ///< a query or its argument cannot be sent (e.g. a NUL byte in SQL text or a text parameter)
  conversion_error,    ///< a field cannot be converted to the requested C++ type
  null_value,          ///< a NULL field was read into a non-optional type
  out_of_range,        ///< row or column index out of range, or a value the C++ type cannot hold
  protocol_error,      ///< the server or libpq did something unexpected
  // Sharing rules of a shared (pipelined, non-lease) connection: refused
  // before anything is sent (see async_client::async_query for the list).
  transaction_needs_lease,    ///< BEGIN / START TRANSACTION on a shared connection: use a lease
  session_state_needs_lease,  ///< SET, RESET, LISTEN, PREPARE, DISCARD, temp tables, COPY...: use a
                              ///< lease or pool_params::on_connect
  type_mismatch,       ///< the column's PostgreSQL type cannot be read as the requested C++ type
  // The environment.
  unsupported_libpq,   ///< the libpq loaded at run time is older than pgpipe needs (14: pipeline mode)
  // Typed rows (result::rows_as<T> and the *_as operations).
  columns_mismatch,    ///< the result's columns do not fit the row type: a count, a missing or an extra column
  dimensions_mismatch, ///< an array's number of dimensions does not fit the C++ type (a 2-D array into a std::vector)
};

/// Portable conditions: use these to classify an error_code from any category.
enum class errc_condition {
  connection_lost = 1,  ///< errc::not_sent or errc::connection_lost
  timeout,              ///< errc::pool_timeout or errc::query_timeout
  server_error,         ///< any SQLSTATE error
  connect_error,        ///< errc::server_unreachable, auth_failed, bad_conninfo, connect_failed, and the
                        ///< SQLSTATEs a server refuses a connection with (class 28, 3D000)
  auth_error,           ///< the credentials were refused: errc::auth_failed (libpq gave up before
                        ///< the server said) or SQLSTATE class 28 (28P01 wrong password, 28000)
};

const std::error_category& client_category() noexcept;
const std::error_category& sqlstate_category() noexcept;
const std::error_category& condition_category() noexcept;

[[nodiscard]] std::error_code make_error_code(errc e) noexcept;
[[nodiscard]] std::error_condition make_error_condition(errc_condition e) noexcept;

/// An error_code in sqlstate_category() for a five-character SQLSTATE. Anything
/// that is not five characters of [0-9A-Z] maps to "XX000" (internal_error).
[[nodiscard]] std::error_code make_sqlstate(std::string_view sqlstate) noexcept;
/// The SQLSTATE of `ec`, or "" when ec is not in sqlstate_category().
[[nodiscard]] std::string sqlstate_of(const std::error_code& ec);

/// True when the request may have reached the server: a caller must not
/// blindly retry a non-idempotent statement after such an error.
[[nodiscard]] bool may_have_executed(const std::error_code& ec) noexcept;
/// True for both connection-loss codes.
[[nodiscard]] bool is_connection_lost(const std::error_code& ec) noexcept;

/// What the server said, kept apart from what the client says.
struct diagnostics {
  std::string severity;        ///< ERROR, FATAL, PANIC (non-localized)
  std::string sqlstate;        ///< five characters, empty for client-side errors
  std::string message;         ///< the server's primary message
  std::string detail;          ///< the server's DETAIL, if any
  std::string hint;            ///< the server's HINT, if any
  std::string context;         ///< the server's CONTEXT (where in a function), if any
  /// The object the error is about, when the server names one (constraint
  /// violations, a domain's check, an undefined column...): its schema,
  /// table, column, data type and constraint names.
  ///@{
  std::string schema;
  std::string table;
  std::string column;
  std::string datatype;
  std::string constraint;
  ///@}
  /// Where in the statement the error is: a 1-based character index, 0 when
  /// the server gives none, and for an error libpqxx reported (a statement
  /// run through libpqxx on a blocking lease), which does not pass it on.
  int position = 0;
  std::string client_message;  ///< pgpipe's own explanation (never contains a password)

  /// True when the server reported the error (a SQLSTATE is set).
  bool has_server_error() const noexcept { return !sqlstate.empty(); }
  /// One line for logs: "ERROR 22012: division by zero (detail...)" or the client message.
  std::string to_string() const;
};

/// The exception pgpipe throws: from the blocking driver's calls, from an
/// async operation awaited with use_awaitable or use_future, and from reading
/// a failed result. It carries the code and diagnostics that a (ec, value)
/// completion handler gets.
class error : public std::system_error {
 public:
  /// `ec` with the server's (or the client's) fields; what() is diag.to_string().
  error(std::error_code ec, diagnostics diag);
  /// `ec` with only a client-side explanation (never holding a password).
  error(std::error_code ec, const std::string& client_message);
  /// The fields behind code().
  const diagnostics& diag() const noexcept { return diag_; }
  /// diag().to_string(), which names a server error's SQLSTATE; for a
  /// client-side error, its message and code().message().
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  diagnostics diag_;
  std::string what_;
};

/// The conninfo with every password replaced by "********". Handles both
/// key=value strings (quoted or not) and postgresql:// URIs (userinfo and
/// ?password= query parameters).
[[nodiscard]] std::string redact_conninfo(std::string_view conninfo);

/// Replaces every occurrence of `secret` in `text` (used to scrub messages
/// that libpq or the server produced before they reach the caller).
[[nodiscard]] std::string redact_secret(std::string text, std::string_view secret);

}  // namespace pgpipe

/// @cond
template <>
struct std::is_error_code_enum<pgpipe::errc> : std::true_type {};
template <>
struct std::is_error_condition_enum<pgpipe::errc_condition> : std::true_type {};
/// @endcond
