// pgpipe::query_options: per-call options of the async driver's queries
// (async_client::async_query, lease::async_query, async_read_router::async_query,
// lease::copy_in/copy_out). Included by <pgpipe/async_client.hpp>.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>

namespace pgpipe {

/// The format the server sends result values in (query_options::results).
enum class result_format {
  /// Typed reads (async_query_as and its _one/_opt forms,
  /// blocking_pool::query_as...) ask for binary when every field type of the
  /// row reads binary (field_traits' binary_results; std::string does not,
  /// since it reads any column in text); everything else gets text.
  automatic,
  /// Always text.
  text,
  /// Always binary, for users who read with get<T>() (every built-in type
  /// but std::string/std::string_view decodes binary; those read only text
  /// types and user types in binary, and fail with errc::type_mismatch
  /// naming the column for any other). field::text() then throws
  /// errc::type_mismatch for a column whose binary form is not text; the
  /// raw bytes stay readable through field::value() and field::bytes().
  binary,
};


/// Per-call options for async_query. Every member has a default member
/// initializer, so `{.read_only = true}` builds warning-free under -Wextra.
struct query_options {
  /// Overrides pool_params::query_timeout for this call; 0 disables the
  /// timeout. std::nullopt keeps the pool default.
  std::optional<std::chrono::milliseconds> timeout{};
  /// Marks the query as a read that changes nothing. Such a query may share
  /// a Sync with other reads (Sync coalescing) and may be routed to a read
  /// replica; a marked query that tries to write fails with SQLSTATE 25006
  /// instead of writing. Unmarked queries (the default) keep one Sync each
  /// and always go to the primary.
  /// Sync coalescing happens only on a session the server reports read-only
  /// (pool_params::read_only_sessions), where every write fails with 25006,
  /// marked or not. On a read-write session the marker changes nothing for
  /// the query: it keeps its own Sync, and a write in it runs and commits
  /// like an unmarked one (no 25006, but never a success that a neighbour's
  /// error rolls back). Leases ignore the marker for Syncs.
  bool read_only = false;
  /// Row streams only (async_lease::stream, async_client::async_stream):
  /// how many rows libpq hands over per result. 1 (the default) is
  /// single-row mode: the stream holds at most one row in libpq's buffers,
  /// whatever the rows' width. More asks libpq 17 or newer for chunks of
  /// that many rows (PQsetChunkedRowsMode), each reaching the reader as one
  /// async_next: fewer instructions per row (about 2,700 fewer at 256 rows
  /// on libpq 18; at 64 the extra completions eat most of it:
  /// docs/benchmarks-log.md, 2026-12-05), but a chunk's rows are all in memory at once, so
  /// mind the rows' width. With an older
  /// libpq the stream runs in single-row mode
  /// (pool_stats::runtime.fast_paths.chunked_rows says which). 0, or more
  /// than libpq's int holds, fails the stream with errc::invalid_argument.
  std::size_t stream_chunk_rows = 1;
  /// The format of the result values (see result_format): automatic by
  /// default, which is text for untyped queries and streams.
  result_format results = result_format::automatic;
};

}  // namespace pgpipe
