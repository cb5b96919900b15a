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
// key: the same text with other types is another statement.
std::string statement_key(std::string_view sql, const detail::encoded_params& params, bool typed) {
  std::string key(sql);
  if (typed) {
    key.push_back('\0');
    key.append(reinterpret_cast<const char*>(params.types.data()), params.types.size() * sizeof(type_oid));
  }
  return key;
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

void blocking_lease::pooler_suspected(const PGresult* res) {
  diagnostics d = detail::diagnostics_of(res);
  detail::scrub(d, conn_->secrets());
  const std::error_code ec = make_sqlstate(d.sqlstate);
  d.client_message = detail::pooler_suspected_message(d.sqlstate);
  if (conn_->stop_naming_statements() && pool_) {
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
  std::string key = statement_key(sql, params, a.typed);
  auto prepare = [&](const std::string& name) {
    pgresult_ptr r{PQprepare(c, name.c_str(), key.c_str(), a.typed ? a.count : 0, a.types)};
    if (succeeded(r.get())) return;
    conn_->forget_direct(key);
    // The name is new on this connection: the server knowing it means the
    // session is not the one this connection prepared its statements in.
    if (sqlstate_of(r.get()) == "42P05") pooler_suspected(r.get());
    fail(r.get());
  };
  const int values_format = binary_results ? 1 : 0;
  auto run_prepared = [&](const std::string& name) {
    return pgresult_ptr{
        PQexecPrepared(c, name.c_str(), a.count, a.value_ptrs(), a.length_ptrs(), a.formats, values_format)};
  };

  pgresult_ptr r;
  detail::pooled_connection::direct_statement* st = naming ? conn_->find_direct(key) : nullptr;
  if (st != nullptr) {
    st->fresh = false;
  } else if (naming && (st = conn_->add_direct(key)) != nullptr) {
    prepare(st->name);  // key holds the SQL text first, NUL-terminated
  }
  if (st != nullptr) {
    r = run_prepared(st->name);
    if (!succeeded(r.get()) && stale(r.get())) {
      if (st->fresh && sqlstate_of(r.get()) == "26000") {
        // Prepared a moment ago and already unknown: another session answers.
        conn_->forget_direct(key);
        pooler_suspected(r.get());
      } else if (PQtransactionStatus(c) == PQTRANS_IDLE) {
        // A migration changed what the statement reads, and the server
        // refused it before executing anything: prepare it again and run it
        // again, so the caller never sees the stale plan; each statement of
        // a migration can invalidate it once more, so up to
        // max_stale_repairs times, as the async driver. This holds for a
        // statement prepared by this very call too: a migration can commit
        // between its Parse and its Execute. (After 26000 the DEALLOCATE
        // fails: nothing was left to free.)
        for (int repair = 0; repair < detail::max_stale_repairs && !succeeded(r.get()) && stale(r.get()); ++repair) {
          const std::string old = "DEALLOCATE " + st->name;
          pgresult_ptr gone{PQexec(c, old.c_str())};
          prepare(conn_->rename_direct(*st));
          r = run_prepared(st->name);
          if (!succeeded(r.get()) && detail::is_pooler_symptom(sqlstate_of(r.get()))) {
            conn_->forget_direct(key);
            pooler_suspected(r.get());
          }
        }
      } else {
        // Inside a transaction block the error has already aborted it: a
        // re-run would only fail with 25P02. Prepare afresh next time.
        conn_->forget_direct(key);
      }
    }
  } else {
    r = pgresult_ptr{PQexecParams(c, key.c_str(), a.count, a.types, a.value_ptrs(), a.length_ptrs(), a.formats, values_format)};
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
