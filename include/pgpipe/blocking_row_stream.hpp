// A large result on a blocking_lease, read as it arrives with bounded
// memory: blocking_row_stream hands over rows in small chunks (libpq's
// single-row mode), blocking_typed_stream<T> (blocking_typed_stream.hpp)
// reads them into T.
//
//   auto lease = pool.acquire();
//   pgpipe::blocking_row_stream s(lease, "select id, name from items where team = $1", team);
//   for (pgpipe::result chunk = s.next(); !chunk.empty(); chunk = s.next())
//     for (pgpipe::row r : chunk) use(r);
//
// Memory: libpq holds one row at a time; the server waits (its socket
// buffer full) while the caller does not ask for more.
//
// The statement is sent unnamed (never prepared), with its parameters
// encoded as blocking_lease::exec encodes them. Stopping early (cancel(), or
// destroying the stream) asks the server to cancel the statement (PQcancel:
// the lease is exclusive) and reads what is still on the way, so the lease
// runs its next query afterwards. Inside a transaction block the lease's
// caller opened, that cancel aborts the transaction.
//
// Preconditions: the lease outlives the stream; no libpqxx transaction
// object and no other stream or COPY is alive on the lease meanwhile.
// Thread-safety: as the lease (one thread at a time).
#pragma once

#include <pgpipe/blocking_lease.hpp>
#include <pgpipe/error.hpp>
#include <pgpipe/query_options.hpp>
#include <pgpipe/result.hpp>
#include <pgpipe/type_traits.hpp>

#include <string_view>

namespace pgpipe {

/// A statement's rows on a lease, read chunk by chunk (see the file comment).
class blocking_row_stream {
 public:
  /// Sends `sql` with `args` ($1, $2...), asking for text values. Throws
  /// pgpipe::error: errc::invalid_argument before anything is sent (a NUL
  /// byte in `sql` or a text argument, a value over the server's limits,
  /// more than 65535 parameters); errc::connection_lost (the lease is
  /// marked broken); errc::closed for an empty lease. The statement's own
  /// errors come from the first next().
  template <class... Args>
  blocking_row_stream(blocking_lease& lease, std::string_view sql, const Args&... args)
      : blocking_row_stream(lease, sql, detail::encode_params(args...), false) {}
  /// The same, with the values in `results`' format (binary: read them
  /// with get<T>(); automatic and text: text).
  template <class... Args>
  blocking_row_stream(blocking_lease& lease, result_format results, std::string_view sql, const Args&... args)
      : blocking_row_stream(lease, sql, detail::encode_params(args...), results == result_format::binary) {}
  /// With the parameters encoded (what the typed stream calls).
  blocking_row_stream(blocking_lease& lease, std::string_view sql, detail::encoded_params params,
                      bool binary_results);
  /// Stops a stream not read to its end (see cancel()). Never throws.
  ~blocking_row_stream();
  /// Moves the stream; a move-assignment first stops the one this held.
  ///@{
  blocking_row_stream(blocking_row_stream&& other) noexcept;
  blocking_row_stream& operator=(blocking_row_stream&& other) noexcept;
  ///@}
  blocking_row_stream(const blocking_row_stream&) = delete;
  blocking_row_stream& operator=(const blocking_row_stream&) = delete;

  /// The next chunk: one or more rows (one in single-row mode), blocking
  /// until they arrive. The end is an empty result (its command_tag() says
  /// e.g. "SELECT 1000"; its columns are the statement's), and asking again
  /// returns an empty result. Throws pgpipe::error: the statement's SQLSTATE
  /// with the server's diagnostics (possibly after some rows);
  /// errc::connection_lost (the lease is marked broken);
  /// errc::invalid_argument for a COPY statement (use blocking_copy_in/out;
  /// the lease is marked broken). After a throw the stream is at its end.
  [[nodiscard]] result next();

  /// Stops early (see the file comment). Idempotent; a no-op once the end
  /// was read. Never throws; a connection that does not come back clean is
  /// marked broken.
  void cancel() noexcept;

  /// True until the end was read, an error was thrown, or cancel().
  bool active() const noexcept { return active_; }

 private:
  [[noreturn]] void fail(void* res);
  blocking_lease* lease_ = nullptr;
  bool active_ = false;
};

}  // namespace pgpipe
