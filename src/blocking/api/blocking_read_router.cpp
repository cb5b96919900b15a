// blocking_read_router (include/pgpipe/blocking_read_router.hpp): the pools,
// the sans-IO replica_tracker under one mutex, and the probes
// (pq/router_probes: a connection and a thread per server, each probe
// bounded by probe_timeout, so a hung server holds no pool connection, no
// caller and no destructor).
#include <pgpipe/blocking_read_router.hpp>

#include "core/routing/read_only_fallback.hpp"
#include "core/routing/replica_tracker.hpp"
#include "pq/router_probes.hpp"

#include <mutex>
#include <stdexcept>

namespace pgpipe {
namespace detail {

using clock = replica_tracker::clock;

struct blocking_read_router_impl {
  blocking_read_router_impl(std::unique_ptr<blocking_pool> p, std::vector<std::unique_ptr<blocking_pool>> r,
                            read_routing_params params)
      : routing(std::move(params)),
        tracker(r.size(), routing),
        primary(std::move(p)),
        primary_read_only(std::make_unique<blocking_pool>(primary_read_only_params(primary->params(), routing))),
        replicas(std::move(r)) {}

  read_routing_params routing;
  mutable std::mutex mu;
  replica_tracker tracker;
  std::unique_ptr<blocking_pool> primary;
  // Marked reads on the primary run here: read-only sessions, so a marked
  // write fails with 25006 as on a standby.
  std::unique_ptr<blocking_pool> primary_read_only;
  std::vector<std::unique_ptr<blocking_pool>> replicas;
  // Last: stopped (joined) first, before the tracker it records into goes away.
  std::unique_ptr<router_probes> probes;
};

}  // namespace detail

blocking_read_router::blocking_read_router(std::unique_ptr<blocking_pool> primary,
                                           std::vector<std::unique_ptr<blocking_pool>> replicas,
                                           read_routing_params params) {
  validate(params);
  auto reject = [](const std::string& m) { throw error(make_error_code(errc::bad_params), m); };
  if (!primary) reject("blocking_read_router: the primary's pool is null");
  for (std::size_t i = 0; i < replicas.size(); ++i)
    if (!replicas[i]) reject("blocking_read_router: replica " + std::to_string(i) + "'s pool is null");
  impl_ = std::make_unique<detail::blocking_read_router_impl>(std::move(primary), std::move(replicas),
                                                              std::move(params));
  auto& m = *impl_;
  std::vector<pool_params> replica_params;
  for (const auto& r : m.replicas) replica_params.push_back(r->params());
  m.probes = std::make_unique<detail::router_probes>(m.primary->params(), replica_params, m.routing, m.mu, m.tracker);
}

blocking_read_router::~blocking_read_router() { impl_->probes->stop(); }

blocking_pool& blocking_read_router::primary() noexcept { return *impl_->primary; }

blocking_pool& blocking_read_router::primary_read_only() noexcept { return *impl_->primary_read_only; }

blocking_pool& blocking_read_router::replica(std::size_t i) { return *impl_->replicas.at(i); }

std::size_t blocking_read_router::replica_count() const noexcept { return impl_->replicas.size(); }

detail::read_route blocking_read_router::route_read() {
  std::lock_guard lk(impl_->mu);
  const std::optional<std::size_t> i = impl_->tracker.route_read(detail::clock::now());
  return i ? detail::read_route{detail::read_route::to::replica, *i} : detail::read_route{};
}

blocking_pool& blocking_read_router::pool_for(const detail::read_route& r) {
  return r.where == detail::read_route::to::replica ? *impl_->replicas.at(r.replica) : *impl_->primary_read_only;
}

detail::read_route blocking_read_router::reroute(const detail::read_route& failed, const std::error_code& ec,
                                                 detail::read_failures& f) {
  if (!detail::server_unreachable(ec)) return {detail::read_route::to::nowhere, 0};
  std::lock_guard lk(impl_->mu);
  return impl_->tracker.reroute(failed, detail::clock::now(), f);
}

namespace detail {

namespace {
thread_local routed_blocking_read* current_read = nullptr;
}  // namespace

routed_blocking_read::routed_blocking_read(blocking_read_router& router)
    : router_(router), where_(router.route_read()), called_(clock::now()), outer_(current_read) {
  current_read = this;
}

routed_blocking_read::~routed_blocking_read() { current_read = outer_; }

routed_blocking_read* routed_blocking_read::current() noexcept { return current_read; }

blocking_pool& routed_blocking_read::pool() const { return router_.pool_for(where_); }

namespace {
// Where the read runs after a failed attempt. Only the router's lock can
// throw here: the read then ends with its own error, as a read with nowhere
// left to go does.
template <class Reroute>
read_route reroute_or_nowhere(Reroute&& reroute) noexcept {
  try {
    return reroute();
  } catch (...) {
    return read_route{read_route::to::nowhere, 0};
  }
}
}  // namespace

bool routed_blocking_read::reruns(const std::error_code& ec) noexcept {
  return next_.decide([&] { return reroute_or_nowhere([&] { return router_.reroute(where_, ec, failed_); }); })
             .where != read_route::to::nowhere;
}

bool routed_blocking_read::next(const std::error_code& ec) {
  // reruns(ec) decided it already when the pool asked; else it is decided here.
  where_ = next_.decide([&] { return reroute_or_nowhere([&] { return router_.reroute(where_, ec, failed_); }); });
  next_.reset();
  const bool again = where_.where != read_route::to::nowhere;
  if (again) ++attempt_;
  return again;
}

}  // namespace detail

read_routing_stats blocking_read_router::stats() const {
  read_routing_stats s;
  {
    std::lock_guard lk(impl_->mu);
    s = impl_->tracker.snapshot(detail::clock::now());
  }
  s.primary = impl_->primary->stats();
  s.primary_read_only = impl_->primary_read_only->stats();
  for (std::size_t i = 0; i < impl_->replicas.size(); ++i) s.replicas[i].pool = impl_->replicas[i]->stats();
  return s;
}

}  // namespace pgpipe
