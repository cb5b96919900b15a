// read_router: routing of read-only async queries (include/pgpipe/read_router.hpp).
//
// The router is a query_target of its own: a read is handed to the chosen
// replica client's target wrapped in a completion that, when the replica
// turned out to be unreachable, marks it unhealthy and hands the same
// encoded query to the primary's read-only pool. Marked reads meant for the
// primary always go through that pool (read-only sessions, on one of the
// primary's event loops), so a marked write fails with 25006 there too. The
// user's completion travels unchanged, so the handler's executor and the
// exactly-once guarantee are the clients'.
// Health and lag live in the sans-IO replica_tracker under one mutex; probe
// answers arrive on the clients' loops and only take that mutex briefly.
#include <pgpipe/read_router.hpp>

#include "core/routing/probe_scheduler.hpp"
#include "core/routing/read_only_fallback.hpp"
#include "core/routing/replica_tracker.hpp"

#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/query.hpp>

#include <mutex>
#include <optional>
#include <stdexcept>

namespace pgpipe {
namespace detail {
namespace {

using clock = replica_tracker::clock;

// What probe answers and read failures update; shared with the callbacks,
// which may run after the router is gone (a client completes them with
// errc::closed while it shuts down).
struct routing_state {
  explicit routing_state(std::size_t replicas, const read_routing_params& p) : tracker(replicas, p) {}
  std::mutex mu;
  replica_tracker tracker;
};

class routing_target;

// Cancellation of a read sent to a replica. The caller's slot holds the
// router's hook (read_cancel_hook), not the replica client's: the read may
// move to the primary, and a slot can only be filled safely where the
// caller emits (its own thread, during initiation). The hook forwards each
// signal to the current attempt through a signal of the router's own, which
// the replica's request uses first and the primary's re-run after it.
struct read_cancel {
  // Recursive: emitting may complete an attempt inline on the same thread.
  std::recursive_mutex mu;
  boost::asio::cancellation_signal inner;
  // The latest type the caller emitted: a re-run started after it is
  // cancelled at once, as an attempt not yet sent would have been.
  std::optional<boost::asio::cancellation_type_t> requested;
};

// Owns the state: the attempts come and go, the caller's slot holds this
// until the read completes (the completion clears the slot).
struct read_cancel_hook {
  std::shared_ptr<read_cancel> st;
  void operator()(boost::asio::cancellation_type_t type) const {
    // A copy: emitting may complete the read inline, whose completion clears
    // the caller's slot and destroys this hook while it runs.
    const std::shared_ptr<read_cancel> s = st;
    std::lock_guard lk(s->mu);
    s->requested = type;
    s->inner.emit(type);
  }
};

// Wraps the caller's completion for a read sent to a replica.
class replica_read final : public completion<result> {
 public:
  replica_read(std::shared_ptr<routing_target> owner, std::size_t replica, query_spec retry,
               std::unique_ptr<completion<result>> done, std::shared_ptr<read_cancel> cancel)
      : owner_(std::move(owner)),
        replica_(replica),
        retry_(std::move(retry)),
        done_(std::move(done)),
        cancel_(std::move(cancel)) {}
  void complete(const boost::asio::any_io_executor& fallback, bool must_post, std::error_code ec,
                result value) override;

 private:
  std::shared_ptr<routing_target> owner_;
  std::size_t replica_;
  query_spec retry_;
  std::unique_ptr<completion<result>> done_;
  std::shared_ptr<read_cancel> cancel_;  // null when the caller's slot was not connected
};

class routing_target final : public query_target, public std::enable_shared_from_this<routing_target> {
 public:
  // `primary` is the primary's read-only pool's target.
  routing_target(std::shared_ptr<routing_state> st, std::shared_ptr<query_target> primary,
                 std::vector<std::shared_ptr<query_target>> replicas)
      : st_(std::move(st)), primary_(std::move(primary)), replicas_(std::move(replicas)) {}

  void submit_query(query_spec spec, std::unique_ptr<completion<result>> done,
                    boost::asio::cancellation_slot slot) override {
    std::optional<std::size_t> pick;
    {
      std::lock_guard lk(st_->mu);
      pick = st_->tracker.route_read(clock::now());
    }
    if (!pick) {
      primary_->submit_query(std::move(spec), std::move(done), slot);
      return;
    }
    // The copy is what the primary re-runs if the replica fails (the replica
    // consumes the original).
    query_spec retry = spec;
    std::shared_ptr<read_cancel> cancel;
    boost::asio::cancellation_slot inner;
    if (slot.is_connected()) {
      cancel = std::make_shared<read_cancel>();
      inner = cancel->inner.slot();
      // Before the submit: a completion that runs inline clears it as usual.
      slot.emplace<read_cancel_hook>(read_cancel_hook{cancel});
    }
    replicas_[*pick]->submit_query(
        std::move(spec),
        std::make_unique<replica_read>(shared_from_this(), *pick, std::move(retry), std::move(done), cancel), inner);
  }

  // The replica failed the read in a way that says it is unreachable: stop
  // sending reads there and run this one on the primary instead.
  void rerun_on_primary(std::size_t replica, query_spec spec, std::unique_ptr<completion<result>> done,
                        const std::shared_ptr<read_cancel>& cancel) {
    {
      std::lock_guard lk(st_->mu);
      read_failures f;
      (void)st_->tracker.reroute({read_route::to::replica, replica}, clock::now(), f);
    }
    if (!cancel) {
      primary_->submit_query(std::move(spec), std::move(done), {});
      return;
    }
    // This runs on a loop thread while the caller may emit on its own: the
    // re-run's hook goes into the router's signal under the lock the
    // caller's hook takes, never into the caller's slot.
    std::lock_guard lk(cancel->mu);
    primary_->submit_query(std::move(spec), std::move(done), cancel->inner.slot());
    if (cancel->requested) cancel->inner.emit(*cancel->requested);
  }

 private:
  std::shared_ptr<routing_state> st_;
  std::shared_ptr<query_target> primary_;
  std::vector<std::shared_ptr<query_target>> replicas_;
};

void replica_read::complete(const boost::asio::any_io_executor& fallback, bool must_post, std::error_code ec,
                            result value) {
  if (server_unreachable(ec)) {
    owner_->rerun_on_primary(replica_, std::move(retry_), std::move(done_), cancel_);
    return;
  }
  done_->complete(fallback, must_post, ec, std::move(value));
}

}  // namespace

struct read_router_impl {
  read_router_impl(async_client p, std::vector<async_client> r, read_routing_params params)
      : routing(std::move(params)),
        st(std::make_shared<routing_state>(r.size(), routing)),
        primary(std::move(p)),
        primary_read_only(read_only_pool_for(primary, routing)),
        replicas(std::move(r)) {}

  // On the primary's first event loop (a client's loops are io_contexts,
  // its own or the caller's): no thread of its own. No watchdog either: the
  // primary's watches that loop already.
  static async_client read_only_pool_for(const async_client& primary, const read_routing_params& routing) {
    auto& io = static_cast<boost::asio::io_context&>(
        boost::asio::query(primary.get_executor(), boost::asio::execution::context));
    async_client_options o;
    o.blocked_loop_threshold = std::chrono::milliseconds{0};
    return async_client(primary_read_only_params(primary.params(), routing), io, o);
  }

  void probe() {
    query_options opts;
    opts.timeout = routing.probe_timeout;
    const auto sent = clock::now();
    bool go;
    {
      std::lock_guard lk(st->mu);
      go = true;
    }
    if (go) {
      primary.async_query(opts, primary_probe_sql, [st = st, sent](std::error_code ec, result r) {
        std::int64_t lsn = -1;
        if (!ec && r.size() == 1 && r.columns() == 1) lsn = r[0][0].get<std::int64_t>(ec);
        std::lock_guard lk(st->mu);
        if (ec || lsn < 0) {
          st->tracker.primary_probe_failed();
        } else {
          st->tracker.primary_probed(sent, static_cast<std::uint64_t>(lsn));
        }
      });
    }
    for (std::size_t i = 0; i < replicas.size(); ++i) {
      {
        std::lock_guard lk(st->mu);
        go = true;
      }
      if (!go) continue;  // the previous probe is still out (bounded by its timeout)
      replicas[i].async_query(opts, replica_probe_sql, [st = st, sent, i](std::error_code ec, result r) {
        bool in_recovery = false;
        std::int64_t lsn = -1;
        if (!ec && r.size() == 1 && r.columns() == 2) {
          in_recovery = r[0][0].get<bool>(ec);
          if (!ec) lsn = r[0][1].get<std::int64_t>(ec);
        }
        std::lock_guard lk(st->mu);
        if (ec || lsn < 0) {
          st->tracker.replica_probe_failed(i);
        } else {
          st->tracker.replica_probed(i, sent, clock::now(), in_recovery, static_cast<std::uint64_t>(lsn));
        }
      });
    }
  }

  read_routing_params routing;
  std::shared_ptr<routing_state> st;
  async_client primary;
  // After the primary: destroyed before the client whose loop it runs on.
  async_client primary_read_only;
  std::vector<async_client> replicas;
  std::shared_ptr<query_target> primary_target;
  std::shared_ptr<query_target> read_target;
  // Last: stopped (joined) first, before the clients it calls go away.
  std::unique_ptr<probe_scheduler> probes;
};

}  // namespace detail

read_router::read_router(async_client primary, std::vector<async_client> replicas, read_routing_params params) {
  validate(params);
  impl_ = std::make_unique<detail::read_router_impl>(std::move(primary), std::move(replicas), std::move(params));
  auto& m = *impl_;
  m.primary_target = m.primary.target();
  std::vector<std::shared_ptr<detail::query_target>> replica_targets;
  for (auto& r : m.replicas) replica_targets.push_back(r.target());
  m.read_target =
      std::make_shared<detail::routing_target>(m.st, m.primary_read_only.target(), std::move(replica_targets));
  m.probes = std::make_unique<detail::probe_scheduler>(m.routing.probe_interval, [&m] { m.probe(); });
}

read_router::~read_router() {
  if (impl_) impl_->probes->stop();
}

read_router::read_router(read_router&&) noexcept = default;

read_router& read_router::operator=(read_router&& other) noexcept {
  if (this != &other) {
    if (impl_) impl_->probes->stop();
    impl_ = std::move(other.impl_);
  }
  return *this;
}

async_client& read_router::primary() {
  if (!impl_) throw std::logic_error("pgpipe::read_router: used after move");
  return impl_->primary;
}

async_client& read_router::replica(std::size_t i) {
  if (!impl_) throw std::logic_error("pgpipe::read_router: used after move");
  return impl_->replicas.at(i);
}

std::size_t read_router::replica_count() const noexcept { return impl_ ? impl_->replicas.size() : 0; }

read_routing_stats read_router::stats() const {
  if (!impl_) return {};
  read_routing_stats s;
  {
    std::lock_guard lk(impl_->st->mu);
    s = impl_->st->tracker.snapshot(detail::clock::now());
  }
  s.primary = impl_->primary.stats();
  s.primary_read_only = impl_->primary_read_only.stats();
  for (std::size_t i = 0; i < impl_->replicas.size(); ++i) s.replicas[i].pool = impl_->replicas[i].stats();
  return s;
}

void read_router::close() {
  if (!impl_) return;
  impl_->probes->stop();
  impl_->primary_read_only.close();
  impl_->primary.close();
  for (auto& r : impl_->replicas) r.close();
}

std::shared_ptr<detail::query_target> read_router::primary_target() const noexcept {
  return impl_ ? impl_->primary_target : nullptr;
}

std::shared_ptr<detail::query_target> read_router::read_target() const noexcept {
  return impl_ ? impl_->read_target : nullptr;
}

}  // namespace pgpipe
