// blocking_lease::exec: one statement on the leased connection, with libpq
// directly. libpqxx's way (a nontransaction object, then get_notifs(), which
// reads the socket once more after every statement) cost a system call and
// allocations per statement for nothing this call needs; the result is the
// async driver's pgpipe::result, so both drivers read rows alike.
#include <pgpipe/blocking_lease.hpp>

#include "blocking/api/libpq_args.hpp"
#include "blocking/connection/pooled_connection.hpp"
#include "blocking/connection/translate_error.hpp"
#include "blocking/pool/blocking_pool_impl.hpp"
#include "core/sql/commit_check.hpp"
#include "core/sql/sql_text.hpp"
#include "core/statements/statement_cache.hpp"
#include "pq/libpq_failure.hpp"

#include <libpq-fe.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace pgpipe {

namespace {

using detail::libpq_args;
using pgresult_ptr = std::unique_ptr<PGresult, detail::pgresult_deleter>;

// A statement is prepared with its parameter types, so they are part of its
// key: the same text with other types is another statement. The key borrows
// the text and the types' bytes: nothing is built per call.
detail::statement_key key_of(std::string_view sql, const detail::encoded_params& params, bool typed) noexcept {
  if (!typed) return detail::statement_key(sql);
  return detail::statement_key(
      sql, std::string_view(reinterpret_cast<const char*>(params.types.data()), params.types.size() * sizeof(type_oid)));
}

bool succeeded(const PGresult* r) noexcept {
  const ExecStatusType st = r != nullptr ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_EMPTY_QUERY;
}

std::string_view sqlstate_of(const PGresult* r) noexcept {
  const char* s = r != nullptr ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  return s != nullptr ? std::string_view(s) : std::string_view();
}

bool stale(const PGresult* r) noexcept {
  const char* primary = r != nullptr ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  return detail::is_stale_statement(sqlstate_of(r), primary != nullptr ? primary : "");
}

}  // namespace

void blocking_lease::pooler_suspected(const PGresult* res, bool first_sign) {
  diagnostics d = detail::diagnostics_of(res);
  detail::scrub(d, conn_->secrets());
  const std::error_code ec = make_sqlstate(d.sqlstate);
  d.client_message = detail::pooler_suspected_message(d.sqlstate);
  if (first_sign && pool_) {
    pool_->metrics.log(log_level::warning, "slot " + std::to_string(slot_) + ": " + d.client_message);
  }
  throw error(ec, std::move(d));
}

result blocking_lease::exec_encoded(std::string_view sql, detail::encoded_params params, bool binary_results) {
  // Counted here, once, whichever way the statement ends: refused before
  // sending, failed on the server, or succeeded.
  try {
    result r = run_encoded(sql, std::move(params), binary_results);
    note_outcome({});
    return r;
  } catch (const error& e) {
    note_outcome(e.code());
    throw;
  }
}

result blocking_lease::run_encoded(std::string_view sql, detail::encoded_params params, bool binary_results) {
  // Every statement of the driver comes this way (pool, lease, transaction,
  // read router) or through a row stream: a text libpq would cut is refused
  // before anything is sent.
  detail::refuse_unsendable(sql, params);
  PGconn* c = conn_->raw();
  auto fail = [&](const PGresult* r) {
    diagnostics d;
    const std::error_code ec = detail::translate_result(r, c, *this, d);
    throw error(ec, std::move(d));
  };
  if (c == nullptr || PQstatus(c) != CONNECTION_OK) fail(nullptr);

  const libpq_args a(params);
  const bool naming = pool_ == nullptr || pool_->params.prepared_statements;
  detail::statement_cache& cache = conn_->statements();
  const detail::statement_key key = key_of(sql, params, a.typed);
  // libpq takes the text NUL-terminated: copied only when it is sent (a
  // Parse, or an unnamed run), never for a cached statement.
  std::string text;
  auto text_ptr = [&] {
    text.assign(sql);
    return text.c_str();
  };
  const int values_format = binary_results ? 1 : 0;
  auto run_unnamed = [&] {
    return pgresult_ptr{
        PQexecParams(c, text_ptr(), a.count, a.types, a.value_ptrs(), a.length_ptrs(), a.formats, values_format)};
  };
  auto run_prepared = [&](const std::string& name) {
    return pgresult_ptr{
        PQexecPrepared(c, name.c_str(), a.count, a.value_ptrs(), a.length_ptrs(), a.formats, values_format)};
  };
  // The policy's verdict on a failure of statement `name` (core/statements);
  // a pooler suspected is thrown from here.
  auto judge = [&](const PGresult* res, const std::string& name, detail::statement_failure f) {
    f.sqlstate = sqlstate_of(res);
    const bool first_sign = cache.naming();
    const detail::statement_verdict v = cache.judge(key, name, f);
    if (v == detail::statement_verdict::pooler_suspected) pooler_suspected(res, first_sign);
    return v;
  };
  // A new statement for `key`, prepared; its name ("" when it runs unnamed).
  // Invalidated statements (the one evicted for it, a stale one) are
  // deallocated first, so the server never holds more than the bound.
  auto prepare = [&]() -> std::string {
    const std::string* slot = cache.put(key, PQtransactionStatus(c) != PQTRANS_INERROR);
    if (slot == nullptr) return {};
    std::string name = *slot;
    conn_->drop_invalidated();
    pgresult_ptr r{PQprepare(c, name.c_str(), text_ptr(), a.typed ? a.count : 0, a.types)};
    if (succeeded(r.get())) return name;
    detail::statement_failure f;
    f.at_parse = true;
    f.carried_parse = true;
    (void)judge(r.get(), name, f);
    fail(r.get());
    return {};  // fail() throws
  };

  pgresult_ptr r;
  std::string name;
  bool carried_parse = false;
  if (naming) {
    if (const std::string* cached = cache.get(key)) {
      name = *cached;
    } else {
      name = prepare();
      carried_parse = !name.empty();
    }
  }
  r = name.empty() ? run_unnamed() : run_prepared(name);
  for (unsigned repairs = 0; !name.empty() && !succeeded(r.get()); ++repairs) {
    detail::statement_failure f;
    f.stale = stale(r.get());
    f.carried_parse = carried_parse;
    // Inside a transaction block the error has already aborted it: a re-run
    // would only fail with 25P02.
    f.in_transaction = PQtransactionStatus(c) != PQTRANS_IDLE;
    f.repairs = repairs;
    if (judge(r.get(), name, f) != detail::statement_verdict::rerun) break;
    // A migration changed what the statement reads, and the server refused
    // it before executing anything: prepared again and run again, so the
    // caller never sees the stale plan. A statement prepared by this very
    // call too: a migration can commit between its Parse and its Execute.
    name = prepare();
    carried_parse = !name.empty();
    r = name.empty() ? run_unnamed() : run_prepared(name);
  }

  if (!succeeded(r.get())) {
    const ExecStatusType status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH) {
      // The connection is in the middle of a COPY nobody will finish: the
      // pool closes it rather than hand it on.
      mark_broken();
      throw error(errc::invalid_argument,
                  "exec() cannot run COPY ... FROM STDIN / TO STDOUT: use pgpipe::blocking_copy_in or pgpipe::blocking_copy_out");
    }
    fail(r.get());
  }
  if (detail::commit_rolled_back(sql, PQcmdStatus(r.get()))) {
    const std::error_code ec = make_sqlstate("25P02");
    throw error(ec, detail::rolled_back_commit_diagnostics(detail::commit_statement_name(sql)));
  }
  return result(r.release());
}

}  // namespace pgpipe
