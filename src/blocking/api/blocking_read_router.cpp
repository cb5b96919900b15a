// blocking_read_router (include/pgpipe/blocking_read_router.hpp): the pools,
// the sans-IO replica_tracker under one mutex, and a probe thread that runs
// the probes itself, one statement per borrowed connection.
#include <pgpipe/blocking_read_router.hpp>

#include "core/routing/probe_scheduler.hpp"
#include "core/routing/read_only_fallback.hpp"
#include "core/routing/replica_tracker.hpp"

#include <mutex>
#include <stdexcept>

namespace pgpipe {
namespace detail {
namespace {

using clock = replica_tracker::clock;

// One probe statement on a connection borrowed for it alone. Any failure
// (no connection within the timeout, the server's error) is "no answer".
std::optional<pqxx::result> probe_row(blocking_pool& pool, const char* sql, std::chrono::milliseconds timeout) {
  try {
    blocking_lease lease = pool.acquire(timeout);
    pqxx::nontransaction tx{*lease};
    pqxx::result r = tx.exec(sql);
    if (r.size() != 1) return std::nullopt;
    return r;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

struct blocking_read_router_impl {
  blocking_read_router_impl(std::unique_ptr<blocking_pool> p, std::vector<std::unique_ptr<blocking_pool>> r,
                            read_routing_params params)
      : routing(std::move(params)),
        tracker(r.size(), routing),
        primary(std::move(p)),
        primary_read_only(std::make_unique<blocking_pool>(primary_read_only_params(primary->params(), routing))),
        replicas(std::move(r)) {}

  void probe() {
    const auto timeout = routing.probe_timeout;
    auto sent = clock::now();
    std::optional<std::int64_t> lsn;
    if (auto row = probe_row(*primary, primary_probe_sql, timeout)) {
      try {
        lsn = (*row)[0][0].as<std::int64_t>();
      } catch (const std::exception&) {
      }
    }
    {
      std::lock_guard lk(mu);
      if (lsn && *lsn >= 0) {
        tracker.primary_probed(sent, static_cast<std::uint64_t>(*lsn));
      } else {
        tracker.primary_probe_failed();
      }
    }
    for (std::size_t i = 0; i < replicas.size(); ++i) {
      sent = clock::now();
      std::optional<std::pair<bool, std::int64_t>> answer;
      if (auto row = probe_row(*replicas[i], replica_probe_sql, timeout)) {
        try {
          answer.emplace((*row)[0][0].as<bool>(), (*row)[0][1].as<std::int64_t>());
        } catch (const std::exception&) {
        }
      }
      std::lock_guard lk(mu);
      if (answer && answer->second >= 0) {
        tracker.replica_probed(i, sent, clock::now(), answer->first, static_cast<std::uint64_t>(answer->second));
      } else {
        tracker.replica_probe_failed(i);
      }
    }
  }

  read_routing_params routing;
  mutable std::mutex mu;
  replica_tracker tracker;
  std::unique_ptr<blocking_pool> primary;
  // Marked reads on the primary run here: read-only sessions, so a marked
  // write fails with 25006 as on a standby.
  std::unique_ptr<blocking_pool> primary_read_only;
  std::vector<std::unique_ptr<blocking_pool>> replicas;
  // Last: stopped (joined) first, before the pools it uses go away.
  std::unique_ptr<probe_scheduler> probes;
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
  m.probes = std::make_unique<detail::probe_scheduler>(m.routing.probe_interval, [&m] { m.probe(); });
}

blocking_read_router::~blocking_read_router() { impl_->probes->stop(); }

blocking_pool& blocking_read_router::primary() noexcept { return *impl_->primary; }

blocking_pool& blocking_read_router::primary_read_only() noexcept { return *impl_->primary_read_only; }

blocking_pool& blocking_read_router::replica(std::size_t i) { return *impl_->replicas.at(i); }

std::size_t blocking_read_router::replica_count() const noexcept { return impl_->replicas.size(); }

std::optional<std::size_t> blocking_read_router::route_read() {
  std::lock_guard lk(impl_->mu);
  return impl_->tracker.route_read(detail::clock::now());
}

bool blocking_read_router::rerun_on_primary(std::size_t i, const std::error_code& ec) {
  if (!detail::server_unreachable(ec)) return false;
  std::lock_guard lk(impl_->mu);
  detail::read_failures f;
  (void)impl_->tracker.reroute({detail::read_route::to::replica, i}, detail::clock::now(), f);
  return true;
}

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
