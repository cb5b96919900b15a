// blocking_row_stream: one statement in libpq's single-row mode on the
// lease's own connection. libpqxx 6.4 has no row-at-a-time read of a query
// (its stream_from is COPY, and needs a transaction object); libpq gives it
// directly, with the server's diagnostics kept.
//
// The connection stays in libpq's blocking mode (libpqxx's): PQgetResult
// waits for the next row, and while the caller does not call next() nothing
// reads the socket, so the server blocks instead of the client buffering.
//
// Every path ends with PQgetResult returning null: only then is the
// connection idle again for the next statement on the lease.
#include <pgpipe/blocking_row_stream.hpp>

#include "blocking/api/libpq_args.hpp"
#include "blocking/connection/lease_access.hpp"
#include "blocking/connection/translate_error.hpp"
#include "pq/blocking_cancel.hpp"

#include <libpq-fe.h>

#include <string>
#include <utility>

namespace pgpipe {
namespace {

// Reads what is left of the statement; false when the connection broke.
bool drain(PGconn* c) noexcept {
  while (PGresult* r = PQgetResult(c)) {
    const ExecStatusType st = PQresultStatus(r);
    PQclear(r);
    // A COPY nobody will finish: the connection cannot serve again.
    if (st == PGRES_COPY_IN || st == PGRES_COPY_OUT || st == PGRES_COPY_BOTH) return false;
  }
  return PQstatus(c) == CONNECTION_OK;
}

}  // namespace

blocking_row_stream::blocking_row_stream(blocking_lease& lease, std::string_view sql, detail::encoded_params params,
                                         bool binary_results)
    : lease_(&lease) {
  detail::refuse_unsendable(sql, params);
  if (!lease) throw error(make_error_code(errc::closed), "a row stream on an empty lease");
  PGconn* c = detail::lease_access::raw(lease);
  if (c == nullptr || PQstatus(c) != CONNECTION_OK) fail(nullptr);
  const detail::libpq_args a(params);
  const std::string text(sql);
  if (PQsendQueryParams(c, text.c_str(), a.count, a.types, a.value_ptrs(), a.length_ptrs(), a.formats,
                        binary_results ? 1 : 0) != 1) {
    fail(nullptr);
  }
  // Refused only when called too late; the rows would then come as one result.
  (void)PQsetSingleRowMode(c);
  active_ = true;
}

blocking_row_stream::~blocking_row_stream() { cancel(); }

blocking_row_stream::blocking_row_stream(blocking_row_stream&& other) noexcept
    : lease_(std::exchange(other.lease_, nullptr)), active_(std::exchange(other.active_, false)) {}

blocking_row_stream& blocking_row_stream::operator=(blocking_row_stream&& other) noexcept {
  if (this != &other) {
    cancel();
    lease_ = std::exchange(other.lease_, nullptr);
    active_ = std::exchange(other.active_, false);
  }
  return *this;
}

void blocking_row_stream::fail(void* res) {
  auto* r = static_cast<PGresult*>(res);
  active_ = false;
  PGconn* c = lease_ != nullptr ? detail::lease_access::raw(*lease_) : nullptr;
  diagnostics d;
  std::error_code ec;
  if (c == nullptr) {
    ec = make_error_code(errc::connection_lost);
    d.client_message = "row stream: connection lost";
    lease_->mark_broken();
  } else {
    ec = detail::translate_result(r, c, *lease_, d);
  }
  PQclear(r);
  // The error ended the statement; what follows it (nothing but the end,
  // normally) is read so the lease can run its next one.
  if (c != nullptr && !drain(c)) lease_->mark_broken();
  detail::lease_access::note_outcome(*lease_, ec);
  throw error(ec, std::move(d));
}

result blocking_row_stream::next() {
  if (!active_) return result();
  PGconn* c = detail::lease_access::raw(*lease_);
  if (c == nullptr) fail(nullptr);
  PGresult* r = PQgetResult(c);
  const ExecStatusType st = r != nullptr ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  switch (st) {
    case PGRES_SINGLE_TUPLE:
      return result(r);
    case PGRES_TUPLES_OK:
    case PGRES_COMMAND_OK:
    case PGRES_EMPTY_QUERY: {
      result end(r);
      active_ = false;
      if (!drain(c)) lease_->mark_broken();
      detail::lease_access::note_outcome(*lease_, {});
      // Single-row mode refused: every row came in this one result. It is
      // handed over as a chunk; the next call returns the empty end.
      return end;
    }
    case PGRES_COPY_IN:
    case PGRES_COPY_OUT:
    case PGRES_COPY_BOTH: {
      PQclear(r);
      active_ = false;
      // The connection is in the middle of a COPY nobody will finish: the
      // pool closes it rather than hand it on.
      lease_->mark_broken();
      const auto ec = make_error_code(errc::invalid_argument);
      detail::lease_access::note_outcome(*lease_, ec);
      throw error(ec, "a row stream cannot run COPY ... FROM STDIN / TO STDOUT: use pgpipe::blocking_copy_in or "
                      "pgpipe::blocking_copy_out");
    }
    default:
      fail(r);
  }
}

void blocking_row_stream::cancel() noexcept {
  if (!active_) return;
  active_ = false;
  // The client ended it: one statement, counted as cancelled.
  detail::lease_access::note_outcome(*lease_, make_error_code(errc::cancelled));
  PGconn* c = detail::lease_access::raw(*lease_);
  if (c == nullptr) return;
  // The server may have sent every row already (it is then idle when the
  // signal arrives, and ignores it); either way the rest is read here.
  if (!detail::send_blocking_cancel(c) || !drain(c)) lease_->mark_broken();
}

}  // namespace pgpipe
