// Configuration shared by both drivers (async_client and blocking_pool).
// A plain struct: set the fields you care about, leave the rest at their
// documented defaults, then hand it to a driver, which validates it.
#pragma once

#include <pgpipe/query_observer.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace pgpipe {

/// pool_params::load_balance_hosts: the order a multi-host connection
/// string's hosts are tried in (libpq 16's load_balance_hosts).
enum class load_balance {
  disable,  ///< the order given (libpq's default)
  random,   ///< a random order per connection attempt
};

/// Configuration shared by both drivers: a plain struct with documented
/// defaults, validated by the driver that receives it (validate()).
/// Every member has a default member initializer, so a designated initializer
/// naming only some fields (`{.conninfo = "...", .max_size = 4}`) builds
/// warning-free under -Wextra: g++ reports -Wmissing-field-initializers for
/// each omitted member that has none.
struct pool_params {
  /// libpq connection string, key=value or postgresql:// URI. Passwords in it
  /// are never echoed: any message that quotes it uses redact_conninfo().
  std::string conninfo{};

  /// Most connections the pool ever has open or opening at once.
  std::size_t max_size = 10;
  /// Connections the pool opens eagerly and keeps even when idle.
  std::size_t min_size = 0;

  /// async driver only: requests in flight at once on one connection. The
  /// blocking driver always uses 1 (one query per connection at a time).
  std::size_t pipeline_depth = 128;

  /// Requests that may wait for capacity; the next one fails at once with
  /// errc::queue_full. Bounds memory when the database cannot keep up.
  std::size_t max_queued = 10000;

  /// Longest a request waits for pool capacity before errc::pool_timeout (or,
  /// when no connection could be opened at all, the connect error).
  std::chrono::milliseconds acquire_timeout{30'000};

  /// Default per-query timeout, from submission to result; 0 disables it.
  /// On a shared pipelined connection a query that times out is detached (its
  /// result discarded), never cancelled with PQcancel. The async driver may
  /// answer a timeout up to 5 ms late: a deadline that close to the one of the
  /// request queued before it on the same connection takes that one.
  std::chrono::milliseconds query_timeout{60'000};

  /// Longest a connection attempt may take (TCP + TLS + authentication).
  std::chrono::milliseconds connect_timeout{10'000};

  /// Connections older than this are drained (no new work; work in flight
  /// completes) and replaced. 0 disables rotation.
  std::chrono::milliseconds max_lifetime{30 * 60'000};

  /// Connections idle this long are closed, down to min_size. 0 disables.
  std::chrono::milliseconds idle_timeout{10 * 60'000};

  /// An idle connection unused for this long is checked (a trivial query)
  /// before it is handed out again or while it sits idle. 0 disables.
  std::chrono::milliseconds health_check_interval{30'000};

  /// After a failed connect, wait this long before the next attempt, doubling
  /// up to connect_backoff_max. Reset by a successful connect.
  std::chrono::milliseconds connect_backoff_initial{50};
  /// The longest wait between two failed connects (see connect_backoff_initial).
  std::chrono::milliseconds connect_backoff_max{500};

  /// Paced growth: while the pool has at least one connection serving, the
  /// connects it starts beyond min_size (growth toward max_size under load,
  /// replacements for queued callers) are at most `growth_connects` in flight
  /// at once, each started at least `growth_interval` after the previous one.
  /// Why: on a small server every connect forks a backend and runs SCRAM on
  /// the CPUs that serve the open connections, so opening many at once takes
  /// throughput from the queries already running. Connects that bring the
  /// pool up to min_size, and every connect while nothing is open (startup,
  /// recovery after an outage), are not paced: there is nothing to protect
  /// and callers are waiting. The trade-off: a slower pace reaches max_size
  /// later (growth_interval 100 ms: 180 connects take at least 18 s) but
  /// costs the open connections less meanwhile (docs/benchmarks.md, "Paced
  /// growth"). growth_connects must be at least 1.
  std::size_t growth_connects = 1;
  /// See growth_connects; 0 starts the next paced connect as soon as one of
  /// the growth_connects in flight finishes.
  std::chrono::milliseconds growth_interval{0};

  /// async driver: a written request on a connection that has made no progress
  /// for this long marks the connection broken (a hung server or network).
  /// 0 disables. Must exceed the longest query you expect.
  std::chrono::milliseconds stall_timeout{0};

  /// Both drivers: cache named prepared statements per connection. Turn off
  /// for PgBouncer in transaction pool mode (1.18 cannot track them): every
  /// query is then an unnamed Parse/Bind/Execute, still pipelined by the async
  /// driver. Left on behind a transaction pooler, a connection notices it (a
  /// fresh name already taken, 42P05, or gone at once, 26000): that request
  /// fails with a message naming this field, a warning is logged, and the
  /// connection goes unnamed. See docs/scaling.md.
  bool prepared_statements = true;

  /// Both drivers: SQL statements run, in order, on every new connection
  /// before it serves anyone: the place for session settings every query
  /// should see, which a shared (pipelined) connection refuses per query
  /// (see async_client::async_query), e.g.
  ///   {"set search_path = app, public", "set timezone = 'UTC'",
  ///    "set statement_timeout = '5s'", "set application_name = 'orders'"}.
  /// One statement per entry (they are sent with the extended protocol).
  /// They run again on every replacement connection. A failure is that
  /// connection's connect failure: the server's SQLSTATE as the code (e.g.
  /// 42704 for an unknown setting), the message naming the entry
  /// ("pool_params.on_connect[1] (set x = 1) failed: ERROR 42704: ...").
  /// Callers see it as any connect error (after acquire_timeout when no
  /// connection could be opened). Settings a lease changes with plain SET
  /// stay on its connection after the lease ends: use SET LOCAL there.
  std::vector<std::string> on_connect{};

  /// Both drivers: called before every connection attempt of the pool (and
  /// of its listeners, and of a read router's probes of its server) with
  /// `conninfo`; what it returns is the connection
  /// string of that attempt. The place for a credential that expires (a
  /// cloud IAM token): `return conninfo + " password='" + token + "'";`. It
  /// never runs on an event loop (the client's or yours): each call runs on
  /// a thread of its own, so it may block, even waiting for the io_context
  /// the client runs on. connect_timeout bounds it (a read router's probe:
  /// probe_timeout): a call that has not returned by then fails that attempt
  /// with errc::connect_failed ("before_connect did not return within
  /// connect_timeout"), and its late result is ignored. Such a call may
  /// still be running after the pool is destroyed: it must not use anything
  /// that dies with the pool. Calls for several connects may run at the
  /// same time (it must be thread-safe). Passwords in what it returns
  /// are scrubbed from every message, as conninfo's are. An exception fails
  /// that attempt with errc::connect_failed and the exception's message
  /// (the pool backs off and tries again, as after a refused connect); a
  /// string libpq cannot parse fails it with errc::bad_conninfo.
  std::function<std::string(const std::string& conninfo)> before_connect{};

  /// Both drivers: with load_balance::random every connection attempt tries
  /// the hosts of a multi-host conninfo ("host=a,b,c port=...") in a new
  /// random order (each host keeps its port; listeners and a router's
  /// probes too), so a pool spreads its
  /// connections over them, as libpq 16's load_balance_hosts=random does
  /// (libpq 15 does not know that keyword: set it here). Applied after
  /// before_connect. target_session_attrs still decides which host is taken.
  load_balance load_balance_hosts = load_balance::disable;

  /// Both drivers: called at the start and end of every query
  /// (query_observer.hpp: which thread, what it must not do). Null (the
  /// default) costs one pointer test per query.
  std::shared_ptr<query_observer> observer{};
  /// Both drivers: open every session read-only (default_transaction_read_only
  /// = on, set after on_connect, before the connection serves anyone), as a
  /// pool for a read replica would. Every write through the pool then fails
  /// with SQLSTATE 25006 (read_only_sql_transaction). The async driver lets
  /// read-only requests share a Sync only on such sessions (read_batch_max).
  bool read_only_sessions = false;

  /// async driver: the pool's default for query_options::read_only. When
  /// true, every async_query of the client (not its leases) is marked
  /// read-only; a call cannot unmark itself, so keep writes on another pool.
  bool read_only_queries = false;

  /// async driver: Sync coalescing for reads. Up to this many requests marked
  /// read-only, pipelined one after the other on a connection whose session
  /// is read-only (see read_only_sessions: the server reports
  /// default_transaction_read_only), share one Sync; the batch never waits to
  /// fill (it closes when the queue is empty), and never exceeds
  /// pipeline_depth. If one of them fails, those behind it in the batch,
  /// which the server skipped without running them, are sent again
  /// transparently: each caller still gets its own result or its own error.
  /// On a read-write session, leases, unmarked requests and statements that
  /// do not start with SELECT, WITH, VALUES or TABLE (or that mention
  /// set_config or pg_notify) keep one Sync each. 1 turns coalescing off.
  /// PostgreSQL 13 reports no default_transaction_read_only (14 and newer
  /// do), so there no session counts as read-only and nothing is coalesced.
  std::size_t read_batch_max = 10;
};

/// on_connect, then what the pool's own settings add (read_only_sessions):
/// the statements each driver runs on a new connection.
std::vector<std::string> session_statements(const pool_params& params);

/// Throws pgpipe::error(errc::bad_params) naming the first invalid field and
/// why (e.g. "pool_params.min_size (12) exceeds max_size (10)").
void validate(const pool_params& params);

}  // namespace pgpipe
