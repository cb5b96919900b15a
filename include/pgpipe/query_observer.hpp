// query_observer: a hook both drivers call at the start and at the end of
// every query, enough to build OpenTelemetry spans or a slow-query log.
//
// Installed once, in pool_params::observer, for the life of the pool: the
// drivers then test one pointer per query, so a pool without an observer
// pays a null check and nothing else.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>
#include <system_error>

namespace pgpipe {

/// What an observer learns about one query. The SQL text is passed, its
/// parameters never are: they may hold secrets. Every string_view is valid
/// only during the call.
struct query_event {
  /// The statement text as the caller passed it.
  std::string_view sql;
  /// The pool slot of the connection that runs it; 0 when it never reached one.
  std::uint64_t slot = 0;
  /// The server process (pg_backend_pid()) of that connection; 0 when none.
  int backend_pid = 0;
  /// async: the query ran on a lease (no wait for capacity of its own).
  bool on_lease = false;
  /// 1 for the caller's call; 2, 3... for the runs a read router starts
  /// after an attempt found its server unreachable (see `rerun`).
  std::uint32_t attempt = 1;
  /// Time spent waiting for pool capacity, from the call to the grant (or,
  /// in on_end of a query that was never granted, to its failure).
  std::chrono::nanoseconds wait{0};

  // ---- set in on_end only ----
  /// From the moment its connection took the query (it is written in the
  /// same event-loop turn; blocking: sent at once) to its result.
  std::chrono::nanoseconds server{0};
  /// From the caller's call to the completion: what the caller waited in
  /// all (for a re-run, its earlier attempts included).
  std::chrono::nanoseconds total{0};
  /// Rows returned, or affected by INSERT/UPDATE/DELETE (the command tag's
  /// count); 0 on error. async_row_stream: the end's command tag count, so
  /// the rows streamed for a SELECT; 0 for a statement whose tag has no
  /// count (SHOW).
  std::uint64_t rows = 0;
  /// The outcome: empty on success, else the code the caller gets
  /// (errc::query_timeout, errc::pool_timeout, a SQLSTATE...).
  std::error_code ec;
  /// The server's SQLSTATE when it reported the error ("23505"), else empty.
  std::string_view sqlstate;
  /// This attempt failed because its server was unreachable and a read
  /// router runs the query again elsewhere: the caller never sees `ec`, the
  /// next attempt's events follow (attempt + 1). Such an attempt is not
  /// counted in the pool's stats (completed, errors, query_duration): those
  /// count what callers saw, once per call.
  bool rerun = false;
  /// on_start was called for this query (false: it failed before reaching a
  /// connection: pool timeout, queue full, refused by the sharing rules...).
  bool started = false;
  /// What on_start returned for this query (null when not started): the
  /// place for a span handle, so no lookup table is needed.
  void* user = nullptr;
};

/// Receives every query a pool runs: async_client::async_query, a lease's
/// queries and streams; blocking_pool::exec. (Statements a blocking lease or
/// transaction runs through libpqxx directly are libpqxx's and not seen.)
///
/// Contract:
///  - on_start is called once a query has its connection, just before it is
///    sent; on_end exactly once per query, after on_start when there was one,
///    before the caller's handler runs (async) or exec() returns (blocking).
///    A query that fails before reaching a connection gets on_end alone.
///  - A read router's read that it runs again elsewhere (its server was
///    unreachable) is one query per attempt: the failed attempt's on_end has
///    `rerun` set, the next attempt's events have `attempt` one higher, and
///    only the last attempt's outcome is the caller's.
///  - Threads: async, the event-loop thread of the query's connection (or,
///    for a query that never reached one, the thread that completed it);
///    blocking, the caller's thread. Calls for different queries may run at
///    once on several threads: the observer must be thread-safe.
///  - It runs on the hot path, inside the event loop: it must not block
///    (no I/O, no locks held long). Hand slow work to another thread.
///  - It must not throw; an exception is caught and dropped.
///  - It must not call back into the pool synchronously.
class query_observer {
 public:
  virtual ~query_observer() = default;
  /// The query got its connection. The value returned comes back in
  /// on_end's `user` (for example a span started here).
  virtual void* on_start(const query_event& e) {
    (void)e;
    return nullptr;
  }
  /// The query completed (successfully or not).
  virtual void on_end(const query_event& e) { (void)e; }
};

}  // namespace pgpipe
