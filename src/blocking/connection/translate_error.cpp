// libpqxx exceptions -> pgpipe::error, so that the blocking driver reports
// the same error_code and diagnostics as the async driver.
#include <pgpipe/blocking_lease.hpp>

#include "blocking/connection/translate_error.hpp"

#include "blocking/connection/lease_access.hpp"
#include "blocking/connection/pooled_connection.hpp"
#include "pq/libpq_failure.hpp"

#include <pqxx/except>
#include <pqxx/version>

#include <string_view>

namespace pgpipe::detail {
namespace {

constexpr const char* lost_during_statement = "connection lost during the statement (it may have executed)";

std::string trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return std::string(s);
}

bool is_sqlstate(std::string_view s) {
  if (s.size() != 5) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z'))) return false;
  }
  return true;
}

// libpq's default-verbosity error text, as libpqxx 6.4 passes it on:
//   "ERROR:  division by zero\nDETAIL:  ...\nHINT:  ...\nCONTEXT:  ...\n"
// Split it into the diagnostics fields. The SQLSTATE comes from sql_error
// itself (PG_DIAG_SQLSTATE), not from the text.
void parse_server_message(std::string_view text, diagnostics& d) {
  // libpqxx 7 puts the statement's description (a prepared statement's name)
  // before the server's text: "Failure during 'pgpipe_1': ERROR:  ...".
  if (constexpr std::string_view lead = "Failure during '"; text.starts_with(lead)) {
    if (auto end = text.find("': ", lead.size()); end != std::string_view::npos) text.remove_prefix(end + 3);
  }
  std::string* current = nullptr;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    auto field = [&](std::string_view prefix, std::string& out) {
      if (!line.starts_with(prefix)) return false;
      out = trim(line.substr(prefix.size()));
      current = &out;
      return true;
    };
    if (field("DETAIL:", d.detail) || field("HINT:", d.hint) || field("CONTEXT:", d.context)) continue;
    // Verbose mode names the object the error is about, one line each.
    if (field("SCHEMA NAME:", d.schema) || field("TABLE NAME:", d.table) || field("COLUMN NAME:", d.column) ||
        field("DATATYPE NAME:", d.datatype) || field("CONSTRAINT NAME:", d.constraint)) {
      current = nullptr;  // single-line fields
      continue;
    }
    if (line.starts_with("LOCATION:") || line.starts_with("QUERY:") || line.starts_with("STATEMENT:")) {
      current = nullptr;  // verbose-mode lines the diagnostics do not keep
      continue;
    }
    bool severity_line = false;
    for (std::string_view sev : {"ERROR:", "FATAL:", "PANIC:"}) {
      if (line.starts_with(sev)) {
        d.severity = std::string(sev.substr(0, sev.size() - 1));
        std::string msg = trim(line.substr(sev.size()));
        // Pooled connections use verbose errors: "ERROR:  22012: division by zero".
        if (msg.size() > 7 && msg[5] == ':' && msg[6] == ' ' && is_sqlstate(std::string_view(msg).substr(0, 5))) {
          if (d.sqlstate.empty()) d.sqlstate = msg.substr(0, 5);
          msg.erase(0, 7);
        }
        d.message = std::move(msg);
        current = &d.message;
        severity_line = true;
        break;
      }
    }
    if (severity_line) continue;
    if (line.starts_with("LINE ") || line.starts_with("  ") || line.empty()) {
      current = nullptr;  // the caret display of a syntax error position: not a field
      continue;
    }
    if (current != nullptr) {
      *current += '\n';
      *current += trim(line);
    } else if (d.message.empty()) {
      d.message = trim(line);
    }
  }
}

std::error_code code_of_current(blocking_lease* lease, diagnostics& d) {
  try {
    throw;
  } catch (const error& e) {
    d = e.diag();
    return e.code();
  } catch (const pqxx::broken_connection& e) {
    parse_server_message(e.what(), d);
    if (lease != nullptr && *lease && (*lease)->is_open() && !d.message.empty()) {
      // libpqxx 6.4 throws broken_connection for every class-08 SQLSTATE, but
      // the connection is fine: the server reported an ordinary error (08P01
      // protocol_violation, e.g. a Bind with the wrong parameter count).
      if (d.sqlstate.empty()) d.sqlstate = "08000";
      return make_sqlstate(d.sqlstate);
    }
    if (lease != nullptr) lease->mark_broken();
    d.client_message = lost_during_statement;
    return errc::connection_lost;
  } catch (const pqxx::in_doubt_error& e) {
    if (lease != nullptr) lease->mark_broken();
    d.client_message = std::string("connection lost during COMMIT (it may have committed): ") + e.what();
    return errc::connection_lost;
  } catch (const pqxx::sql_error& e) {
    parse_server_message(e.what(), d);
    d.sqlstate = e.sqlstate();
    if (d.severity.empty()) d.severity = "ERROR";
    if (lease != nullptr && *lease && !(*lease)->is_open()) {
      // The server ended the session with this error (57P01 admin shutdown,
      // a crash): the caller needs "connection lost" more than the SQLSTATE,
      // which stays in the diagnostics.
      lease->mark_broken();
      d.client_message = lost_during_statement;
      return errc::connection_lost;
    }
    if (d.sqlstate.empty()) {
      d.client_message = "the server reported an error without a SQLSTATE";
      return make_sqlstate("XX000");
    }
    return make_sqlstate(d.sqlstate);
#if PQXX_VERSION_MAJOR < 7
    // From libpqxx 7 on, transaction_rollback is an sql_error (caught above,
    // SQLSTATE kept); a second handler would be dead code (-Wexceptions).
  } catch (const pqxx::transaction_rollback& e) {
    // libpqxx 6.4 throws these without keeping the SQLSTATE; restore it.
    parse_server_message(e.what(), d);
    if (d.severity.empty()) d.severity = "ERROR";
    std::string_view state = "40000";
    if (dynamic_cast<const pqxx::serialization_failure*>(&e) != nullptr) state = "40001";
    if (dynamic_cast<const pqxx::deadlock_detected*>(&e) != nullptr) state = "40P01";
    if (dynamic_cast<const pqxx::statement_completion_unknown*>(&e) != nullptr) state = "40003";
    d.sqlstate = std::string(state);
    if (d.message.empty()) d.message = trim(e.what());
    return make_sqlstate(state);
#endif
  } catch (const pqxx::conversion_error& e) {
    d.client_message = e.what();
    return errc::conversion_error;
  } catch (const pqxx::range_error& e) {
    d.client_message = e.what();
    return errc::out_of_range;
  } catch (const pqxx::usage_error& e) {
    d.client_message = e.what();
    return errc::invalid_argument;
  } catch (const pqxx::argument_error& e) {
    d.client_message = e.what();
    return errc::invalid_argument;
  } catch (const pqxx::failure& e) {
    // Any other run-time failure of libpqxx/libpq (out of memory, protocol).
    if (lease != nullptr && *lease && !(*lease)->is_open()) {
      lease->mark_broken();
      d.client_message = std::string("connection lost: ") + e.what();
      return errc::connection_lost;
    }
    d.client_message = e.what();
    return errc::protocol_error;
  } catch (const std::system_error& e) {
    d.client_message = e.what();
    return e.code();
  } catch (const std::exception& e) {
    d.client_message = e.what();
    return std::make_error_code(std::errc::state_not_recoverable);
  } catch (...) {
    d.client_message = "unknown exception";
    return std::make_error_code(std::errc::state_not_recoverable);
  }
}

bool is_libpqxx(const std::exception_ptr& ex) {
  try {
    std::rethrow_exception(ex);
#if PQXX_VERSION_MAJOR < 7
  } catch (const pqxx::pqxx_exception&) {
    return true;
#else
    // libpqxx 7 has no common base: each of its exceptions derives from the
    // standard one it resembles.
  } catch (const pqxx::failure&) {
    return true;
  } catch (const pqxx::internal_error&) {
    return true;
  } catch (const pqxx::usage_error&) {
    return true;
  } catch (const pqxx::argument_error&) {
    return true;
  } catch (const pqxx::conversion_error&) {
    return true;
  } catch (const pqxx::range_error&) {
    return true;
#endif
  } catch (...) {
    return false;
  }
}

}  // namespace

namespace {

std::error_code code_of_result(const PGresult* res, PGconn* conn, blocking_lease& lease, diagnostics& d) {
  d = diagnostics_of(res);
  if (conn == nullptr || PQstatus(conn) == CONNECTION_BAD || (res != nullptr && is_session_fatal(res))) {
    // The server's fields (57P01 terminated, a crash) stay in the diagnostics;
    // the caller needs "connection lost" more than the SQLSTATE.
    lease.mark_broken();
    std::string libpq = d.message.empty() && conn != nullptr ? trim(PQerrorMessage(conn)) : std::string();
    d.client_message = lost_during_statement;
    if (!libpq.empty()) d.client_message += ": " + libpq;
    return errc::connection_lost;
  }
  if (res == nullptr) {
    d.client_message = trim(PQerrorMessage(conn));
    return errc::protocol_error;
  }
  if (d.sqlstate.empty()) {
    // libpq's own refusal (a limit, out of memory): diagnostics_of kept its message.
    if (!d.message.empty()) {
      d.client_message = "the server reported an error without a SQLSTATE";
      return make_sqlstate("XX000");
    }
    return errc::protocol_error;
  }
  return make_sqlstate(d.sqlstate);
}

}  // namespace

std::error_code translate_result(const PGresult* res, PGconn* conn, blocking_lease& lease, diagnostics& d) {
  const std::error_code ec = code_of_result(res, conn, lease, d);
  // libpq's words (and a lost session's FATAL) can quote the password.
  scrub(d, lease_access::secrets(lease));
  return ec;
}

void throw_nul_param(std::size_t one_based_index) {
  throw error(errc::invalid_argument, nul_byte_message(one_based_index));
}

void rethrow_translated(blocking_lease* lease) {
  std::exception_ptr current = std::current_exception();
  // Only libpqxx's own exceptions are translated: a pgpipe::error is already
  // in shape, and a caller's exception from transaction()'s fn must reach
  // them unchanged.
  if (!is_libpqxx(current)) std::rethrow_exception(current);
  diagnostics d;
  std::error_code ec = code_of_current(lease, d);
  // libpqxx's message is libpq's, which can quote the password.
  if (lease != nullptr) scrub(d, lease_access::secrets(*lease));
  if (lease != nullptr) lease->note_error(ec);
  throw error(ec, std::move(d));
}

std::error_code translate_exception(std::exception_ptr ex, diagnostics* diag) noexcept {
  diagnostics local;
  diagnostics& d = diag != nullptr ? *diag : local;
  d = diagnostics{};
  try {
    std::rethrow_exception(ex);
  } catch (...) {
    try {
      return code_of_current(nullptr, d);
    } catch (...) {
      return std::make_error_code(std::errc::not_enough_memory);
    }
  }
}

}  // namespace pgpipe::detail
