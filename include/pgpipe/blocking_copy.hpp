// COPY on a blocking_lease, streamed both ways with bounded memory.
//
//   auto lease = pool.acquire();
//   pgpipe::blocking_copy_in in(lease, "copy items(id, name) from stdin");
//   for (...) in.write(chunk);          // any split: rows may straddle chunks
//   std::uint64_t rows = in.finish();   // or in.abort("reason"): nothing stays
//
//   pgpipe::blocking_copy_out out(lease, "copy items to stdout");
//   std::string row;
//   while (out.next(row)) consume(row); // one row per chunk (libpq's unit)
//
// Memory: write() hands each chunk to libpq, which sends it before taking
// more (the lease's connection is in blocking mode: a full socket blocks the
// caller, it never buffers without bound); next() holds one row at a time.
//
// copy_sql is one statement, a COPY: a text holding another (`copy t from
// stdin; delete from t`) is refused with errc::invalid_argument before
// anything is sent, as in the async driver.
//
// A COPY is one statement: unless the caller opened a transaction block on
// the lease, a COPY that fails or is aborted leaves nothing in the table.
// The lease serves the next query afterwards (a connection that broke is
// replaced when the lease is released).
//
// Preconditions: no libpqxx transaction object is alive on the lease while a
// blocking_copy_in/blocking_copy_out is (they share the connection), and the lease outlives
// the copy object. Thread-safety: as the lease (one thread at a time).
//
// Under connection loss: every call throws pgpipe::error with
// errc::connection_lost and the lease is marked broken. For blocking_copy_in the
// server rolls the COPY back unless finish() had returned (a loss during
// finish() means the rows may or may not have been committed).
#pragma once

#include <pgpipe/blocking_lease.hpp>
#include <pgpipe/error.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace pgpipe {

/// COPY ... FROM STDIN on a lease.
class blocking_copy_in {
 public:
  /// Sends `copy_sql` (must be a COPY ... FROM STDIN). Throws pgpipe::error:
  /// errc::invalid_argument when `copy_sql` is not one COPY statement (nothing sent) or
  /// is a COPY TO (stopped at once), the server's SQLSTATE (e.g. 42P01 no
  /// such table), errc::connection_lost, errc::closed for an empty lease.
  blocking_copy_in(blocking_lease& lease, std::string_view copy_sql);
  /// Aborts the COPY when neither finish() nor abort() was called. Never throws.
  ~blocking_copy_in();
  blocking_copy_in(const blocking_copy_in&) = delete;
  blocking_copy_in& operator=(const blocking_copy_in&) = delete;

  /// Sends a chunk of COPY data (text, CSV or binary as the statement says);
  /// blocks while the connection cannot take more. The server reports bad
  /// data at finish() (or here, when it already has). Throws pgpipe::error
  /// (the server's SQLSTATE, or errc::connection_lost); after a throw the
  /// COPY is over and nothing of it stays.
  void write(std::string_view chunk);

  /// Ends the data and waits for the server's verdict: the number of rows
  /// copied, or pgpipe::error with the server's SQLSTATE (22P02 for a
  /// malformed value, 23505...) and diagnostics, in which case nothing of
  /// the COPY stays.
  std::uint64_t finish();

  /// Ends the COPY with a failure `reason` (the server reports it as
  /// 57014 "COPY from stdin failed: <reason>", which is swallowed here):
  /// nothing of the COPY stays. Never throws; a lost connection marks the
  /// lease broken. Idempotent; no-op after finish().
  void abort(std::string_view reason) noexcept;

  /// True until finish() or abort() (or a throw) ends the COPY.
  bool active() const noexcept { return active_; }

 private:
  [[noreturn]] void fail();
  blocking_lease* lease_;
  bool active_ = false;
};

/// COPY ... TO STDOUT on a lease, read chunk by chunk.
class blocking_copy_out {
 public:
  /// Sends `copy_sql` (must be a COPY ... TO STDOUT). Errors as blocking_copy_in's.
  blocking_copy_out(blocking_lease& lease, std::string_view copy_sql);
  /// Stops a COPY not read to its end (see cancel()). Never throws.
  ~blocking_copy_out();
  blocking_copy_out(const blocking_copy_out&) = delete;
  blocking_copy_out& operator=(const blocking_copy_out&) = delete;

  /// The next chunk (one row in text and CSV formats) into `chunk`; false at
  /// the end (rows() is then known). Blocks until data arrives. Throws
  /// pgpipe::error with the server's SQLSTATE or errc::connection_lost.
  bool next(std::string& chunk);

  /// Rows the server reported once next() returned false.
  std::uint64_t rows() const noexcept { return rows_; }

  /// Stops early: asks the server to cancel (PQcancel) and discards what is
  /// still on the way, so the lease can run its next query. Never throws;
  /// a connection that does not come back clean is marked broken.
  void cancel() noexcept;

 private:
  blocking_lease* lease_;
  bool active_ = false;
  std::uint64_t rows_ = 0;
};

/// The name before the naming rule (docs/api-guide.md, "Names"): use blocking_copy_in. Kept for one release.
using copy_in [[deprecated("renamed pgpipe::blocking_copy_in (docs/api-guide.md, Names)")]] = blocking_copy_in;
/// The name before the naming rule (docs/api-guide.md, "Names"): use blocking_copy_out. Kept for one release.
using copy_out [[deprecated("renamed pgpipe::blocking_copy_out (docs/api-guide.md, Names)")]] = blocking_copy_out;

}  // namespace pgpipe
