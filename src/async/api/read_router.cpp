// async_read_router: routing of read-only async queries (include/pgpipe/async_read_router.hpp).
//
// The router is a query_target of its own: a read is handed to the chosen
// server's target (a replica client, or the primary's read-only pool)
// wrapped in a completion that, when that server turned out to be
// unreachable, asks the tracker where the read runs next (reroute: another
// replica, or the primary, each at most once) and hands the same encoded
// query there. The primary's read-only pool has read-only sessions, on one
// of the primary's event loops, so a marked write fails with 25006 there too.
// The user's completion travels unchanged, so the handler's executor and the
// exactly-once guarantee are the clients'.
// Health and lag live in the sans-IO replica_tracker under one mutex; the
// probes (pq/router_probes: a connection and a thread per server, never
// the clients' connections or loops) only take that mutex briefly.
#include <pgpipe/async_read_router.hpp>

#include "core/routing/read_only_fallback.hpp"
#include "core/routing/replica_tracker.hpp"
#include "pq/router_probes.hpp"

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

// What read failures update; shared with the completions, which may run
// after the router is gone (a client completes them with errc::closed while
// it shuts down).
struct routing_state {
  explicit routing_state(std::size_t replicas, const read_routing_params& p) : tracker(replicas, p) {}
  std::mutex mu;
  replica_tracker tracker;
};

class routing_target;

// Cancellation of a marked read. The caller's slot holds the router's hook
// (read_cancel_hook), not a client's: the read may move to another server,
// and a slot can only be filled safely where the caller emits (its own
// thread, during initiation). The hook forwards each signal to the current
// attempt through a signal of the router's own, which each attempt in turn
// uses.
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

// One marked read between its attempts: where the current one runs, the
// servers that failed it, the query to re-run, the caller's completion.
struct read_in_flight {
  read_route route;
  read_failures failed;
  query_spec retry;
  std::unique_ptr<completion<result>> done;
  std::shared_ptr<read_cancel> cancel;  // null when the caller's slot was not connected
};

// Wraps the caller's completion for one attempt.
class routed_read final : public completion<result> {
 public:
  routed_read(std::shared_ptr<routing_target> owner, read_in_flight read)
      : owner_(std::move(owner)), read_(std::move(read)) {}
  void complete(const boost::asio::any_io_executor& fallback, bool must_post, std::error_code ec,
                result value) override;
  // Decides where the re-run goes (the pool asks before it records the
  // attempt, so the observer learns that one follows).
  bool reruns(const std::error_code& ec) override;

 private:
  std::shared_ptr<routing_target> owner_;
  read_in_flight read_;
  rerun_route next_;  // decided by the attempt's first question
};

class routing_target final : public query_target, public std::enable_shared_from_this<routing_target> {
 public:
  // `primary` is the primary's read-only pool's target.
  routing_target(std::shared_ptr<routing_state> st, std::shared_ptr<query_target> primary,
                 std::vector<std::shared_ptr<query_target>> replicas)
      : st_(std::move(st)), primary_(std::move(primary)), replicas_(std::move(replicas)) {}

  void submit_query(query_spec spec, std::unique_ptr<completion<result>> done,
                    boost::asio::cancellation_slot slot) override {
    // The pools time a re-run from the caller's call.
    spec.called = clock::now();
    read_in_flight read;
    {
      std::lock_guard lk(st_->mu);
      const std::optional<std::size_t> pick = st_->tracker.route_read(clock::now());
      read.route = pick ? read_route{read_route::to::replica, *pick} : read_route{read_route::to::primary, 0};
    }
    read.done = std::move(done);
    boost::asio::cancellation_slot inner;
    if (slot.is_connected()) {
      read.cancel = std::make_shared<read_cancel>();
      inner = read.cancel->inner.slot();
      // Before the submit: a completion that runs inline clears it as usual.
      slot.emplace<read_cancel_hook>(read_cancel_hook{read.cancel});
    }
    submit(std::move(spec), std::move(read), inner);
  }

  // The attempt found its server unreachable: the tracker says where the
  // read runs next (once per attempt: it counts the failure and the re-run).
  read_route next_route(read_in_flight& read) {
    std::lock_guard lk(st_->mu);
    return st_->tracker.reroute(read.route, clock::now(), read.failed);
  }

  // Runs the read again at `next`; nowhere left means the caller gets this error.
  void attempt_failed(read_in_flight read, read_route next, const boost::asio::any_io_executor& fallback,
                      bool must_post, std::error_code ec, result value) {
    read.route = next;
    if (read.route.where == read_route::to::nowhere) {
      read.done->complete(fallback, must_post, ec, std::move(value));
      return;
    }
    query_spec spec = read.retry;
    ++spec.attempt;
    if (!read.cancel) {
      submit(std::move(spec), std::move(read), {});
      return;
    }
    // This runs on a loop thread while the caller may emit on its own: the
    // re-run's hook goes into the router's signal under the lock the
    // caller's hook takes, never into the caller's slot.
    const std::shared_ptr<read_cancel> cancel = read.cancel;
    std::lock_guard lk(cancel->mu);
    submit(std::move(spec), std::move(read), cancel->inner.slot());
    if (cancel->requested) cancel->inner.emit(*cancel->requested);
  }

 private:
  // Hands one attempt to its server, keeping a copy of the query for a re-run
  // (the server's target consumes the original).
  void submit(query_spec spec, read_in_flight read, boost::asio::cancellation_slot slot) {
    read.retry = spec;
    const std::shared_ptr<query_target>& to =
        read.route.where == read_route::to::replica ? replicas_[read.route.replica] : primary_;
    to->submit_query(std::move(spec), std::make_unique<routed_read>(shared_from_this(), std::move(read)), slot);
  }

  std::shared_ptr<routing_state> st_;
  std::shared_ptr<query_target> primary_;
  std::vector<std::shared_ptr<query_target>> replicas_;
};

bool routed_read::reruns(const std::error_code& ec) {
  if (!server_unreachable(ec)) return false;
  return next_.decide([this] { return owner_->next_route(read_); }).where != read_route::to::nowhere;
}

void routed_read::complete(const boost::asio::any_io_executor& fallback, bool must_post, std::error_code ec,
                           result value) {
  if (server_unreachable(ec)) {
    const read_route next = next_.decide([this] { return owner_->next_route(read_); });
    owner_->attempt_failed(std::move(read_), next, fallback, must_post, ec, std::move(value));
    return;
  }
  read_.done->complete(fallback, must_post, ec, std::move(value));
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

  read_routing_params routing;
  std::shared_ptr<routing_state> st;
  async_client primary;
  // After the primary: destroyed before the client whose loop it runs on.
  async_client primary_read_only;
  std::vector<async_client> replicas;
  std::shared_ptr<query_target> primary_target;
  std::shared_ptr<query_target> read_target;
  // Last: stopped (joined) first, before the state it records into goes away.
  std::unique_ptr<router_probes> probes;
};

}  // namespace detail

async_read_router::async_read_router(async_client primary, std::vector<async_client> replicas, read_routing_params params) {
  validate(params);
  impl_ = std::make_unique<detail::read_router_impl>(std::move(primary), std::move(replicas), std::move(params));
  auto& m = *impl_;
  m.primary_target = m.primary.target();
  std::vector<std::shared_ptr<detail::query_target>> replica_targets;
  for (auto& r : m.replicas) replica_targets.push_back(r.target());
  m.read_target =
      std::make_shared<detail::routing_target>(m.st, m.primary_read_only.target(), std::move(replica_targets));
  std::vector<pool_params> replica_params;
  for (const auto& r : m.replicas) replica_params.push_back(r.params());
  m.probes =
      std::make_unique<detail::router_probes>(m.primary.params(), replica_params, m.routing, m.st->mu, m.st->tracker);
}

async_read_router::~async_read_router() {
  if (impl_) impl_->probes->stop();
}

async_read_router::async_read_router(async_read_router&&) noexcept = default;

async_read_router& async_read_router::operator=(async_read_router&& other) noexcept {
  if (this != &other) {
    if (impl_) impl_->probes->stop();
    impl_ = std::move(other.impl_);
  }
  return *this;
}

async_client& async_read_router::primary() {
  if (!impl_) throw std::logic_error("pgpipe::async_read_router: used after move");
  return impl_->primary;
}

async_client& async_read_router::replica(std::size_t i) {
  if (!impl_) throw std::logic_error("pgpipe::async_read_router: used after move");
  return impl_->replicas.at(i);
}

std::size_t async_read_router::replica_count() const noexcept { return impl_ ? impl_->replicas.size() : 0; }

read_routing_stats async_read_router::stats() const {
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

void async_read_router::close() {
  if (!impl_) return;
  impl_->probes->stop();
  impl_->primary_read_only.close();
  impl_->primary.close();
  for (auto& r : impl_->replicas) r.close();
}

std::shared_ptr<detail::query_target> async_read_router::primary_target() const noexcept {
  return impl_ ? impl_->primary_target : nullptr;
}

std::shared_ptr<detail::query_target> async_read_router::read_target() const noexcept {
  return impl_ ? impl_->read_target : nullptr;
}

}  // namespace pgpipe
