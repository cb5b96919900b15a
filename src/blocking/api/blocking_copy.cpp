// COPY on a blocking lease, straight on libpq (PQputCopyData/PQgetCopyData)
// rather than libpqxx 6.4's stream_from/stream_to: those need a transaction
// object (a COPY could then never run in autocommit), parse rows into
// tuples the caller may not want, and their errors lose the SQLSTATE's
// fields. libpq on the lease's own connection gives the raw chunks, the
// server's diagnostics and a way to abort with a reason.
//
// The connection stays in libpq's blocking mode (libpqxx's), so
// PQputCopyData waits for the socket to drain instead of buffering: that is
// the backpressure that keeps memory bounded whatever the producer's speed.
//
// Every path ends with PQgetResult returning null: only then is the
// connection idle again for libpqxx and the next borrower.
#include <pgpipe/blocking_copy.hpp>

#include "blocking/connection/lease_access.hpp"
#include "core/sql/copy_statement.hpp"
#include "pq/blocking_cancel.hpp"
#include "pq/copy_pieces.hpp"
#include "pq/libpq_failure.hpp"

#include <libpq-fe.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pgpipe {
namespace {

[[noreturn]] void throw_lost(blocking_lease& lease, const std::string& what);

PGconn* conn_of(blocking_lease& lease) {
  PGconn* c = detail::lease_access::raw(lease);
  if (c != nullptr) return c;
  if (!lease) throw error(make_error_code(errc::closed), "COPY on an empty lease");
  // A leased connection libpqxx 7 no longer hands out: its status went bad.
  throw_lost(lease, "COPY");
}

[[noreturn]] void throw_lost(blocking_lease& lease, const std::string& what) {
  // libpq's own words, read before the lease is marked broken, scrubbed of
  // this connection's passwords (the pool's and before_connect's). With libpqxx 7 a connection
  // whose status went bad is no longer handed out at all: then the loss is
  // reported without them, never as an empty lease.
  std::string message = what + ": connection lost";
  if (PGconn* c = detail::lease_access::raw(lease)) {
    message += ": " + detail::clean_message(PQerrorMessage(c), detail::lease_access::secrets(lease));
  }
  lease.mark_broken();
  auto ec = make_error_code(errc::connection_lost);
  detail::lease_access::note_outcome(lease, ec);
  throw error(ec, std::move(message));
}

struct result_deleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using result_ptr = std::unique_ptr<PGresult, result_deleter>;

// Reads results until libpq has none left. Keeps the first error (the
// server's verdict on the COPY) and the row count of a success.
struct copy_verdict {
  std::optional<error> failure;
  std::uint64_t rows = 0;
  bool lost = false;
};

copy_verdict drain_results(PGconn* c, const std::vector<std::string>& secrets) {
  copy_verdict v;
  while (result_ptr r{PQgetResult(c)}) {
    switch (PQresultStatus(r.get())) {
      case PGRES_COMMAND_OK:
        v.rows = std::strtoull(PQcmdTuples(r.get()), nullptr, 10);
        break;
      case PGRES_COPY_IN:
        // Still expecting data (we get here after a failed write): end it.
        if (PQputCopyEnd(c, "client stopped the COPY") < 0) v.lost = true;
        break;
      case PGRES_COPY_OUT: {
        char* buf = nullptr;
        int n = 0;
        while ((n = PQgetCopyData(c, &buf, 0)) > 0) PQfreemem(buf);
        if (n == -2) v.lost = true;
        break;
      }
      default: {
        if (!v.failure) {
          diagnostics d = detail::diagnostics_of(r.get());
          detail::scrub(d, secrets);
          if (detail::is_session_fatal(r.get())) v.lost = true;
          std::error_code ec = d.sqlstate.empty() ? make_error_code(errc::protocol_error) : make_sqlstate(d.sqlstate);
          v.failure.emplace(ec, std::move(d));
        }
        break;
      }
    }
    if (v.lost) break;
  }
  if (PQstatus(c) == CONNECTION_BAD) v.lost = true;
  return v;
}

// Refuses anything but one COPY before it is sent (core/sql/copy_statement.hpp):
// the simple protocol below would run every statement of the text.
void require_copy(std::string_view sql) {
  if (std::string why = detail::copy_statement_refusal(sql); !why.empty()) {
    throw error(make_error_code(errc::invalid_argument), why);
  }
}

// Sends the statement and checks it entered the expected COPY direction.
void start_copy(blocking_lease& lease, std::string_view sql, ExecStatusType expected) {
  require_copy(sql);
  PGconn* c = conn_of(lease);
  const std::string text(sql);
  if (PQsendQuery(c, text.c_str()) != 1) throw_lost(lease, "COPY");
  result_ptr r{PQgetResult(c)};
  const ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (st == expected) return;
  if (st == PGRES_COPY_IN) {
    PQputCopyEnd(c, "wrong COPY direction");
  } else if (st == PGRES_COPY_OUT) {
    detail::send_blocking_cancel(c);
  }
  copy_verdict v = drain_results(c, detail::lease_access::secrets(lease));
  if (v.lost || PQstatus(c) == CONNECTION_BAD) throw_lost(lease, "COPY");
  if (st == PGRES_FATAL_ERROR && r) {
    diagnostics d = detail::diagnostics_of(r.get());
    detail::scrub(d, detail::lease_access::secrets(lease));
    auto ec = make_sqlstate(d.sqlstate);
    detail::lease_access::note_outcome(lease, ec);
    throw error(ec, std::move(d));
  }
  throw error(make_error_code(errc::invalid_argument),
              expected == PGRES_COPY_IN ? "blocking_copy_in needs COPY ... FROM STDIN" : "blocking_copy_out needs COPY ... TO STDOUT");
}

}  // namespace

// ---- blocking_copy_in -------------------------------------------------------------------

blocking_copy_in::blocking_copy_in(blocking_lease& lease, std::string_view copy_sql) : lease_(&lease) {
  start_copy(lease, copy_sql, PGRES_COPY_IN);
  active_ = true;
}

blocking_copy_in::~blocking_copy_in() {
  if (active_) abort("blocking_copy_in destroyed before finish()");
}

void blocking_copy_in::fail() {
  active_ = false;
  PGconn* c = conn_of(*lease_);
  copy_verdict v = drain_results(c, detail::lease_access::secrets(*lease_));
  if (v.lost) throw_lost(*lease_, "COPY");
  if (v.failure) {
    detail::lease_access::note_outcome(*lease_, v.failure->code());
    throw *v.failure;
  }
  throw_lost(*lease_, "COPY");
}

void blocking_copy_in::write(std::string_view chunk) {
  if (!active_) throw error(make_error_code(errc::closed), "blocking_copy_in::write after the COPY ended");
  PGconn* c = conn_of(*lease_);
  // PQputCopyData takes an int: a chunk of any size goes as pieces that fit
  // it (pq/copy_pieces.hpp), each waiting for the socket in blocking mode.
  for (std::size_t off = 0; off < chunk.size();) {
    const detail::copy_piece piece = detail::copy_piece_at(chunk.size(), off);
    if (PQputCopyData(c, chunk.data() + piece.offset, piece.length) != 1) fail();
    off += static_cast<std::size_t>(piece.length);
  }
}

std::uint64_t blocking_copy_in::finish() {
  if (!active_) throw error(make_error_code(errc::closed), "blocking_copy_in::finish after the COPY ended");
  PGconn* c = conn_of(*lease_);
  active_ = false;
  if (PQputCopyEnd(c, nullptr) != 1) {
    active_ = true;
    fail();
  }
  copy_verdict v = drain_results(c, detail::lease_access::secrets(*lease_));
  if (v.lost) throw_lost(*lease_, "COPY");
  if (v.failure) {
    detail::lease_access::note_outcome(*lease_, v.failure->code());
    throw *v.failure;
  }
  detail::lease_access::note_outcome(*lease_, {});
  return v.rows;
}

void blocking_copy_in::abort(std::string_view reason) noexcept {
  if (!active_) return;
  active_ = false;
  // The client ended it: one request, counted as cancelled.
  detail::lease_access::note_outcome(*lease_, make_error_code(errc::cancelled));
  PGconn* c = detail::lease_access::raw(*lease_);
  if (c == nullptr) return;
  const std::string why(reason.empty() ? std::string_view("aborted by the client") : reason);
  if (PQputCopyEnd(c, why.c_str()) != 1) {
    lease_->mark_broken();
    return;
  }
  // The expected answer is 57014 ("COPY from stdin failed: <reason>").
  if (drain_results(c, detail::lease_access::secrets(*lease_)).lost) lease_->mark_broken();
}

// ---- blocking_copy_out ------------------------------------------------------------------

blocking_copy_out::blocking_copy_out(blocking_lease& lease, std::string_view copy_sql) : lease_(&lease) {
  start_copy(lease, copy_sql, PGRES_COPY_OUT);
  active_ = true;
}

blocking_copy_out::~blocking_copy_out() {
  if (active_) cancel();
}

bool blocking_copy_out::next(std::string& chunk) {
  if (!active_) return false;
  PGconn* c = conn_of(*lease_);
  char* buf = nullptr;
  const int n = PQgetCopyData(c, &buf, 0);
  if (n > 0) {
    chunk.assign(buf, static_cast<std::size_t>(n));
    PQfreemem(buf);
    return true;
  }
  active_ = false;
  copy_verdict v = drain_results(c, detail::lease_access::secrets(*lease_));
  if (v.lost || n == -2) throw_lost(*lease_, "COPY");
  if (v.failure) {
    detail::lease_access::note_outcome(*lease_, v.failure->code());
    throw *v.failure;
  }
  detail::lease_access::note_outcome(*lease_, {});
  rows_ = v.rows;
  return false;
}

void blocking_copy_out::cancel() noexcept {
  if (!active_) return;
  active_ = false;
  // The client ended it: one request, counted as cancelled.
  detail::lease_access::note_outcome(*lease_, make_error_code(errc::cancelled));
  PGconn* c = detail::lease_access::raw(*lease_);
  if (c == nullptr) return;
  if (!detail::send_blocking_cancel(c)) {
    lease_->mark_broken();
    return;
  }
  // Discards the rows still on the way, then the 57014 (or the success, when
  // the server had finished before the signal arrived).
  char* buf = nullptr;
  int n = 0;
  while ((n = PQgetCopyData(c, &buf, 0)) > 0) PQfreemem(buf);
  if (n == -2 || drain_results(c, detail::lease_access::secrets(*lease_)).lost) lease_->mark_broken();
}

}  // namespace pgpipe
