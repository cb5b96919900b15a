// copy_state: one COPY on a lease (async_copy_in / async_copy_out) between
// the caller's handle and the connection that runs it. Everything but `conn`
// is touched only on conn's executor.
#pragma once

#include "async/connection/request.hpp"

#include <pgpipe/detail/async_glue.hpp>
#include <pgpipe/result.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <variant>

namespace pgpipe::detail {

/// A copy_out chunk is handed over once it holds this many bytes; reading
/// the socket stops until the reader takes it (the bound on client memory).
inline constexpr std::size_t copy_chunk_bytes = 64 * 1024;

struct copy_state {
  enum class phase : unsigned char {
    queued,    ///< behind the lease's earlier queries
    starting,  ///< statement sent, waiting for the server to open the COPY
    in_data,   ///< COPY FROM STDIN open: chunks go to libpq
    out_data,  ///< COPY TO STDOUT open: chunks come from libpq
    ending,    ///< data over (CopyDone/CopyFail sent, or the server's end): reading the verdict
    over,      ///< the outcome is known (`ec`, `res`)
  };

  std::shared_ptr<pipelined_connection> conn;
  std::weak_ptr<query_request> req;
  bool out = false;  ///< COPY TO STDOUT
  phase ph = phase::queued;
  /// The server opened the other direction than the handle's (or none).
  bool wrong_direction = false;
  /// The caller stopped it (abort, cancel, destroyed): data is discarded.
  bool stopped = false;

  // copy_in
  std::string pending;        ///< a chunk not yet handed to libpq
  bool has_pending = false;
  std::unique_ptr<completion<std::monostate>> write_waiter;
  bool end_requested = false;  ///< finish or abort asked; CopyDone/CopyFail once the data is out
  bool end_sent = false;
  bool caller_ended = false;   ///< async_finish or async_abort was called
  std::string abort_reason;    ///< non-empty: CopyFail with it
  std::unique_ptr<completion<result>> finish_waiter;
  std::unique_ptr<completion<std::monostate>> abort_waiter;

  // copy_out
  std::string buffer;  ///< rows read, not yet taken by async_next
  std::unique_ptr<completion<std::string>> next_waiter;
  bool error_delivered = false;

  // outcome
  bool decided = false;  ///< the request completed: `ec`/`res` hold its outcome
  std::error_code ec;
  result res;
  std::atomic<std::uint64_t> rows{0};
};

}  // namespace pgpipe::detail
