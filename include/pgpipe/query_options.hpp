// pgpipe::query_options: per-call options of the async driver's queries
// (async_client::async_query, lease::async_query, async_read_router::async_query,
// lease::copy_in/copy_out). Included by <pgpipe/async_client.hpp>.
#pragma once

#include <chrono>
#include <optional>

namespace pgpipe {

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
};

}  // namespace pgpipe
