// pgpipe::blocking_read_router: read routing to streaming replicas for the
// blocking driver, the counterpart of pgpipe::async_read_router.
//
// Holds one blocking_pool for the primary and one per replica. exec() with
// the pgpipe::read_only marker runs on a healthy replica within the lag
// bound (round-robin), else on the primary; exec() without it, transaction()
// and acquire() always use the primary. Reads on a replica may be stale by
// its lag (docs/scaling.md, "Read replicas").
//
//   std::vector<std::unique_ptr<pgpipe::blocking_pool>> replicas;
//   replicas.push_back(std::make_unique<pgpipe::blocking_pool>(replica_params));
//   pgpipe::blocking_read_router router(std::make_unique<pgpipe::blocking_pool>(primary_params),
//                                       std::move(replicas), {.max_lag = std::chrono::seconds(5)});
//   pgpipe::result r = router.exec(pgpipe::read_only, "select ... where id = $1", id);  // a replica
//   router.exec("update ...", id);                                                 // the primary
//
// Health and lag: every probe_interval, one short query on the primary and
// on each replica, each on a connection of the router's own to that server
// (not a pooled one) and from a thread of the router's own per server,
// bounded by probe_timeout on the client side (connecting included): a hung
// server costs its own probe that long, never the other servers' probes, a
// caller or the destructor. Connections: one more per server than the pools
// open, plus the read-only pool's on the primary.
#pragma once

#include <pgpipe/blocking_pool.hpp>
#include <pgpipe/detail/read_route.hpp>
#include <pgpipe/error.hpp>
#include <pgpipe/read_routing.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace pgpipe {

class blocking_read_router;

namespace detail {
struct blocking_read_router_impl;

/// One marked read through a blocking_read_router, across its attempts.
/// While it lives, a pool's exec on this thread asks it whether a failed
/// attempt runs again, so the pools count and time the caller's query once
/// and the observer learns each attempt's number (query_event::attempt,
/// query_event::rerun). Not for users.
class routed_blocking_read {
 public:
  explicit routed_blocking_read(blocking_read_router& router);
  ~routed_blocking_read();
  routed_blocking_read(const routed_blocking_read&) = delete;
  routed_blocking_read& operator=(const routed_blocking_read&) = delete;

  /// The pool the current attempt runs on.
  blocking_pool& pool() const;
  /// The current attempt failed with `ec`: true when the read runs again
  /// (pool() is then the next attempt's), false when the caller gets `ec`.
  bool next(const std::error_code& ec);
  /// Asked by the pool before it records a failed attempt; decides where the
  /// read runs next, once per attempt (no re-run when that decision fails).
  bool reruns(const std::error_code& ec) noexcept;
  std::uint32_t attempt() const noexcept { return attempt_; }
  std::chrono::steady_clock::time_point called() const noexcept { return called_; }
  /// The read in progress on the calling thread, or null.
  static routed_blocking_read* current() noexcept;

 private:
  blocking_read_router& router_;
  read_route where_;
  read_failures failed_;
  rerun_route next_;
  std::uint32_t attempt_ = 1;
  std::chrono::steady_clock::time_point called_;
  routed_blocking_read* outer_;
};
}  // namespace detail

/// Routes read-only blocking statements to replicas (see the file comment).
/// Thread-safe: any thread may call any member. Not movable (its probe thread
/// refers to it); hold it by unique_ptr to move it.
class blocking_read_router {
 public:
  /// Takes the pools (non-null; give replicas a short acquire_timeout: a read
  /// waiting on a dead replica's pool is re-run on the primary only when that
  /// wait fails; and set pool_params::read_only_sessions on any replica that
  /// may be promoted (Patroni, any failover): a promoted standby keeps its
  /// open sessions, marked reads reach them until the next probe, and only
  /// read-only sessions keep a marked write from committing there). Starts
  /// probing at once. Throws pgpipe::error(errc::bad_params) for invalid
  /// `params` or a null pool.
  blocking_read_router(std::unique_ptr<blocking_pool> primary, std::vector<std::unique_ptr<blocking_pool>> replicas,
                       read_routing_params params = {});
  /// Stops the probes (waiting for one in progress), then destroys the pools.
  ~blocking_read_router();
  blocking_read_router(const blocking_read_router&) = delete;
  blocking_read_router& operator=(const blocking_read_router&) = delete;

  /// An unmarked statement: always the primary (blocking_pool::exec).
  template <typename... Args>
  [[nodiscard]] result exec(std::string_view sql, Args&&... args) {
    return primary().exec(sql, std::forward<Args>(args)...);
  }
  /// A read-only statement: a healthy replica within max_lag, else the
  /// primary's read-only pool (read_routing_params::primary_read_only_pool_size).
  /// Same arguments, blocking and errors as blocking_pool::exec, and:
  /// a read that fails on a server because its connection was lost or could
  /// not be opened, or the server is shutting down (SQLSTATE 57P01-57P03;
  /// not class 08, which a live server sends), is run again elsewhere (after a replica: another healthy
  /// replica or the primary; after the primary: a replica that may serve
  /// it), each server at most once, and the caller sees the answer, or the
  /// last server's error when none is left (safe: a standby refuses writes,
  /// the read-only pool too, so nothing ran). A replica out of recovery
  /// (promoted) serves no marked reads. Reads may see data older than the
  /// primary's by the replica's lag. Marking a statement that writes is a
  /// caller's error, refused with SQLSTATE 25006 wherever it runs (a standby
  /// refuses it; the primary's read-only pool has read-only sessions).
  template <typename... Args>
  [[nodiscard]] result exec(read_only_t, std::string_view sql, Args&&... args) {
    detail::routed_blocking_read read(*this);
    for (;;) {
      try {
        return read.pool().exec(sql, args...);  // not forwarded: a re-run may need them again
      } catch (const pgpipe::error& e) {
        if (!read.next(e.code())) throw;
      }
    }
  }

  /// A transaction on the primary (blocking_pool::transaction).
  template <typename Fn>
  auto transaction(Fn&& fn) -> detail::transaction_result_t<Fn> {
    return primary().transaction(std::forward<Fn>(fn));
  }
  /// A lease on the primary (blocking_pool::acquire).
  blocking_lease acquire() { return primary().acquire(); }

  /// The primary's pool.
  blocking_pool& primary() noexcept;
  /// The primary's read-only pool, which serves marked reads on the primary.
  blocking_pool& primary_read_only() noexcept;
  /// Replica i's pool (0-based, in the order given); throws std::out_of_range.
  blocking_pool& replica(std::size_t i);
  /// Number of replicas given to the constructor.
  std::size_t replica_count() const noexcept;

  /// Routing decisions, each replica's health and lag, and every pool's
  /// stats. Thread-safe. Render with to_prometheus(read_routing_stats).
  read_routing_stats stats() const;

 private:
  friend class detail::routed_blocking_read;
  detail::read_route route_read();
  blocking_pool& pool_for(const detail::read_route& r);
  // When `ec` says the server of `failed` is unreachable: records it (a
  // replica is taken out until a later probe) and answers where the read
  // runs next; nowhere when the caller should see the error.
  detail::read_route reroute(const detail::read_route& failed, const std::error_code& ec, detail::read_failures& f);
  std::unique_ptr<detail::blocking_read_router_impl> impl_;
};

}  // namespace pgpipe
