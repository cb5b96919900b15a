// pgpipe::async_read_router: read routing to streaming replicas for the async driver.
//
// A small layer above async_client pools: one for the primary, one per
// replica. A query marked read-only (query_options::read_only) goes to a
// healthy replica within the lag bound, round-robin; when none is, it goes to
// the primary, through a small read-only pool of the router's own there, so
// a marked write fails with 25006 wherever it runs. Everything else
// (unmarked queries, leases, transactions) goes to the primary. Reads on a replica may be stale by its lag
// (replica_stats::lag); docs/scaling.md, "Read replicas", says what that
// figure means and how to run with replicas.
//
//   pgpipe::async_read_router router(pgpipe::async_client(primary_params),
//                              [&] { std::vector<pgpipe::async_client> v;
//                                    v.emplace_back(replica_params); return v; }(),
//                              {.max_lag = std::chrono::seconds(5)});
//   router.async_query({.read_only = true}, "select ...", key, token);  // a replica
//   router.async_query("update ...", key, token);                        // the primary
//
// Health and lag come from probes: every probe_interval, one short query on
// the primary (pg_current_wal_lsn()) and one on each replica
// (pg_is_in_recovery(), its replayed WAL position), each on a connection of
// the router's own to that server and from a thread of the router's own per
// server, bounded by probe_timeout. They never queue behind users' queries,
// never take a pool's connection and never run on an event loop. A replica
// that reports it left recovery (promoted) serves no marked reads. A read
// that fails on a server with a lost connection or a connect error runs
// again on another (a replica, or the primary), each at most once, and marks
// a replica unhealthy at once. Connections: one more per server than the
// pools open (the probes'), plus the read-only pool's on the primary.
#pragma once

#include <pgpipe/async_client.hpp>
#include <pgpipe/read_routing.hpp>

#include <cstddef>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

namespace pgpipe {

namespace detail {
struct read_router_impl;
}  // namespace detail

/// Routes read-only async queries to replicas (see the file comment).
/// Thread-safe: every member may be called from any thread at the same time.
/// Move-only; a moved-from router answers errc::closed.
class async_read_router {
 public:
  /// Takes the primary's client and the replicas' clients (each configured as
  /// you like: loops, io_context, pool_params; give replicas a short
  /// acquire_timeout, since a read waiting on a dead replica's pool is
  /// re-run on the primary only when that wait fails; and set
  /// pool_params::read_only_sessions on any replica that may be promoted
  /// (Patroni, any failover): a promoted standby keeps its open sessions,
  /// marked reads reach them until the next probe, and only read-only
  /// sessions keep a marked write from committing there). Starts probing at
  /// once. Throws pgpipe::error(errc::bad_params) for invalid `params`.
  async_read_router(async_client primary, std::vector<async_client> replicas, read_routing_params params = {});
  /// Stops the probes, then closes and destroys the replicas' clients and the
  /// primary's (see ~async_client).
  ~async_read_router();
  /// Takes `other`'s clients and probes; `other` answers errc::closed afterwards.
  async_read_router(async_read_router&& other) noexcept;
  /// Stops this router's probes and destroys its clients, then takes `other`'s.
  async_read_router& operator=(async_read_router&& other) noexcept;
  async_read_router(const async_read_router&) = delete;
  async_read_router& operator=(const async_read_router&) = delete;

  /// An unmarked query: always the primary (async_client::async_query).
  template <class... ArgsAndToken>
  auto async_query(std::string_view sql, ArgsAndToken&&... args_and_token) {
    return detail::initiate_query_args(primary_target(), query_options{}, detail::rows_expected::any, sql,
                                       std::forward<ArgsAndToken>(args_and_token)...);
  }
  /// With opts.read_only, the query goes to a healthy replica within
  /// read_routing_params::max_lag, else to the primary's read-only pool
  /// (read_routing_params::primary_read_only_pool_size: read-only sessions on
  /// the primary, run on the primary client's first event loop); without it,
  /// to the primary. A marked statement that writes fails with SQLSTATE
  /// 25006 wherever it runs. Same parameters, token, errors, executor and cancellation as
  /// async_client::async_query, and:
  ///  - a read that fails on a server because its connection was lost
  ///    (errc::not_sent, errc::connection_lost), no connection could be opened
  ///    (connect errors) or the server is shutting down (SQLSTATE 57P01-57P03;
  ///    not class 08, which a live server sends: 08P01 for a wrong
  ///    parameter count) is run again elsewhere: after a replica, on another healthy
  ///    replica or else the primary (its read-only pool); after the primary,
  ///    on a replica that may serve it (in recovery, within max_lag unless
  ///    the primary counts as down, its latest probe good). Each server is
  ///    tried at most once; the caller sees the answer, or the last server's
  ///    error when none is left. Safe because a marked query changes nothing
  ///    (a standby refuses writes, the read-only pool too). The caller's
  ///    cancellation slot follows the read: a signal emitted while a re-run
  ///    is pending cancels it, with the same types and effects as
  ///    async_client::async_query; one emitted earlier, that an attempt
  ///    ignored (total cancellation of a written query), cancels the re-run
  ///    as it starts.
  ///  - a read may see data older than the primary's by the replica's lag.
  template <class... ArgsAndToken>
  auto async_query(const query_options& opts, std::string_view sql, ArgsAndToken&&... args_and_token) {
    return detail::initiate_query_args(opts.read_only ? read_target() : primary_target(), opts,
                                       detail::rows_expected::any, sql,
                                       std::forward<ArgsAndToken>(args_and_token)...);
  }

  /// A lease on the primary (async_client::async_acquire): transactions and
  /// anything needing a whole connection never go to a replica.
  template <class CompletionToken>
  auto async_acquire(CompletionToken&& token) {
    return primary().async_acquire(std::forward<CompletionToken>(token));
  }

  /// The primary's client. Use it for what the router does not wrap (streams,
  /// listeners); it must not outlive the router.
  async_client& primary();
  /// Replica i's client (0-based, in the order given); throws std::out_of_range.
  async_client& replica(std::size_t i);
  /// Number of replicas given to the constructor (0 after a move).
  std::size_t replica_count() const noexcept;

  /// Routing decisions, each replica's health and lag, and every pool's
  /// stats. Thread-safe; takes each pool's lock briefly. Render with
  /// to_prometheus(read_routing_stats).
  read_routing_stats stats() const;

  /// close() on every client (async_client::close). Probes stop. Idempotent.
  void close();

 private:
  std::shared_ptr<detail::query_target> primary_target() const noexcept;
  std::shared_ptr<detail::query_target> read_target() const noexcept;
  std::unique_ptr<detail::read_router_impl> impl_;
};

/// The name before the naming rule (docs/api-guide.md, "Names"): use async_read_router. Kept for one release.
using read_router [[deprecated("renamed pgpipe::async_read_router (docs/api-guide.md, Names)")]] = async_read_router;

}  // namespace pgpipe
