// script_results: how both drivers read the results of a script
// (execute_script: several statements sent as one simple query), decided
// once here; each driver carries out the steps with its own I/O (the async
// one nonblocking on its loop, the blocking one on the caller's thread).
//
// The rules:
//  - Every result is read, not only the last (PQexec keeps only the last:
//    in "begin; select 1/0; commit" the error would hide behind COMMIT's
//    ROLLBACK tag). The first error is the script's outcome; else the last
//    statement's result.
//  - A COPY in a script has no caller feeding or reading it: FROM STDIN is
//    ended with an error naming the driver's COPY call (the server fails it
//    with 57014 and skips the rest of the implicit transaction); TO
//    STDOUT's rows are read and dropped. COPY BOTH (replication) cannot be
//    ended by a client: the connection is given up.
//  - The server stops a simple query at its first error, before the
//    script's own COMMIT: a transaction the script opened is still open,
//    aborted, and the driver rolls it back. One the caller had open before
//    the script stays theirs (aborted, as after any failed statement).
#pragma once

#include <pgpipe/result.hpp>

#include <libpq-fe.h>

#include <memory>

namespace pgpipe::detail {

class script_results {
 public:
  using pgresult_ptr = std::unique_ptr<PGresult, pgresult_deleter>;

  /// What the driver does after handing a result to take().
  enum class step {
    next,           ///< read the next result
    end_copy_in,    ///< PQputCopyEnd with an error, then the next result
    drain_copy_out, ///< read and drop the COPY's rows, then the next result
    give_up,        ///< COPY BOTH: break the connection
  };

  /// `began_outside_transaction`: no transaction was open when the script
  /// was sent (PQtransactionStatus was IDLE).
  explicit script_results(bool began_outside_transaction) noexcept : outside_(began_outside_transaction) {}

  /// Keeps what the rules keep of `r` (not null) and says what comes next.
  step take(pgresult_ptr r);

  /// After the last result: whether the driver must roll back, given the
  /// session's transaction status now.
  bool needs_rollback(PGTransactionStatusType now) const noexcept {
    return first_error_ && outside_ && now == PQTRANS_INERROR;
  }

  bool failed() const noexcept { return first_error_ != nullptr; }
  /// The script's first error (null when none).
  const PGresult* first_error() const noexcept { return first_error_.get(); }
  pgresult_ptr take_first_error() noexcept { return std::move(first_error_); }
  /// The last statement's result, for a script that did not fail (null
  /// when no statement returned one).
  pgresult_ptr take_last() noexcept { return std::move(last_); }

 private:
  bool outside_;
  pgresult_ptr first_error_;
  pgresult_ptr last_;
};

}  // namespace pgpipe::detail
