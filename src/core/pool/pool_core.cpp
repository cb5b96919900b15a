// pool_core: the sans-IO pool shared by both drivers. See pool_core.hpp for the
// contract.
//
// It composes three pieces, each with its own contract and tests:
// waiter_queue (queued requests, FIFO and deadlines), slot_table (connections,
// their load and timers: max_lifetime, idle_timeout, health checks) and
// growth_policy (when to connect, pacing, back-off). What is decided here is
// who gets served and what a caller is told.
//
// Policy decisions (each has a unit test in tests/unit/core/pool/):
//  - Grants: a shared request takes the least-loaded grantable slot (idle
//    ones first); an exclusive one needs load 0 and takes all capacity units.
//    Waiters are FIFO across kinds, except that shared waiters behind an
//    exclusive one may use busy slots (which it cannot use anyway). The
//    exclusive waiter at the head reserves the least-loaded slot: no new
//    shared grants there, so it gets the slot when its load drains.
//  - Group preference: a request granted at once may prefer the slots of a
//    group (the async driver's loop the caller runs on): the group's
//    least-loaded slot when it has room and, for shared work, at most twice
//    the least-loaded slot's load plus one. Callers all on one loop then
//    still spread over every connection, with a bounded skew, while evenly
//    spread callers stay on their own loop's connections. Only at once:
//    waiters are granted in FIFO order wherever capacity frees.
//  - Growth: a request served on a busy slot, or not served, asks the growth
//    policy for one more connect; every event lets the policy open what
//    queued demand and min_size want. A closed pool opens nothing.
//  - Errors: a waiter whose deadline passes gets the last connect error when
//    connects are failing and no slot is usable ("server down"), otherwise
//    errc::pool_timeout ("pool exhausted"). A permanent connect error
//    (kind_of_connect_error: authentication, no such database or role, bad
//    conninfo, a host name that does not exist) fails all queued waiters at
//    once when no slot is usable: waiting out acquire_timeout could only end
//    in the same error. Requests arriving afterwards are
//    still queued, not rejected: the next attempt (after the back-off) may
//    succeed once the configuration is fixed; if it fails permanently too they
//    fail at once with its error. So a request waits at most about one
//    back-off plus one connect attempt, never until its deadline, and the
//    error names the cause.
#include "core/pool/pool_core.hpp"

#include "core/pool/growth_policy.hpp"
#include "core/pool/slot_table.hpp"
#include "core/pool/waiter_queue.hpp"

#include <pgpipe/error.hpp>

#include <utility>

namespace pgpipe::detail {

struct pool_core::impl {
  using slot = slot_table::slot;

  pool_params params;
  std::vector<pool_action> actions;  // before slots: the table appends to it
  slot_table slots;
  waiter_queue waiters;
  growth_policy growth;
  bool closed = false;

  std::uint64_t connects = 0;
  std::uint64_t err_pool_timeout = 0;
  std::uint64_t err_queue_full = 0;
  std::uint64_t err_connect = 0;

  impl(const pool_params& p, std::size_t cap) : params(p), slots(params, cap, actions), growth(params, cap) {}

  pool_shape shape() const noexcept {
    return {slots.size(), slots.usable(), slots.count(slot_state::connecting),
            waiters.waiting(request_kind::shared), waiters.waiting(request_kind::exclusive)};
  }

  // ---- waiters ------------------------------------------------------------

  // Forgets a waiter (granted, failed, cancelled), with the reservation held
  // for it. Returns its record.
  waiter_queue::waiter erase_waiter(waiter_id id) {
    const waiter_queue::waiter w = waiters.erase(id);
    if (slots.reserved_for() == id) slots.unreserve();
    return w;
  }

  void grant_waiter(waiter_id id, slot& s, time_point now) {
    const waiter_queue::waiter w = erase_waiter(id);
    if (s.reserved) slots.unreserve();
    slots.grant(s, w.kind, now);
    actions.push_back({pool_action::kind::grant, s.id, id, {}});
  }

  void fail_waiter(waiter_id id, std::error_code ec) {
    erase_waiter(id);
    actions.push_back({pool_action::kind::fail, 0, id, ec});
  }

  // Fails every queued waiter, oldest first.
  void fail_all(std::error_code ec) {
    for (waiter_id id : waiters.ids_oldest_first()) fail_waiter(id, ec);
    waiters.clear();
  }

  // What a waiter whose deadline passed is told: the connect error when the
  // server is the problem (nothing usable, connects failing), pool_timeout
  // when the pool is merely exhausted.
  std::error_code expiry_error() {
    if (growth.failing() && slots.usable() == 0 && growth.last_error()) return growth.last_error();
    ++err_pool_timeout;
    return make_error_code(errc::pool_timeout);
  }

  // Grants queued waiters while capacity allows, in global FIFO order, except
  // that shared waiters behind an exclusive one may use busy slots (which the
  // exclusive one cannot use anyway). The exclusive waiter at the head
  // reserves the least-loaded slot so that shared traffic cannot keep it busy
  // forever.
  void dispatch(time_point now) {
    for (;;) {
      const waiter_id s = waiters.front(request_kind::shared);
      const waiter_id e = waiters.front(request_kind::exclusive);
      if (s == 0 && e == 0) break;
      const bool exclusive_first = e != 0 && (s == 0 || e < s);
      if (!exclusive_first) {
        if (slots.reserved()) slots.unreserve();
        if (slot* t = slots.pick(request_kind::shared, now)) {
          grant_waiter(s, *t, now);
          continue;
        }
        break;
      }
      slot* target = nullptr;
      if (const auto reserved = slots.reserved()) {
        slot& r = *slots.find(*reserved);
        if (slots.lifetime_due(r, now)) {
          slots.expire(r);  // drops the reservation; the next pass picks another slot
          continue;
        }
        if (r.load == 0) target = &r;
      }
      if (target == nullptr) target = slots.pick(request_kind::exclusive, now);
      if (target != nullptr) {
        grant_waiter(e, *target, now);
        continue;
      }
      slots.reserve_least_loaded(e);
      if (s != 0) {
        if (slot* t = slots.pick(request_kind::shared, now)) {
          grant_waiter(s, *t, now);
          continue;
        }
      }
      break;
    }
  }

  // ---- connects -----------------------------------------------------------

  // burst: open everything wanted, unpaced (the first success after an outage).
  void maybe_open(time_point now, bool burst = false) {
    if (closed) return;
    const std::size_t n = growth.open_now(now, shape(), burst);
    const bool probe = growth.failing();
    for (std::size_t i = 0; i < n; ++i) slots.open(probe);
  }

  void grow_on_demand(time_point now) {
    if (!closed && growth.open_on_demand(now, shape())) slots.open(false);
  }

  void settle(time_point now, bool burst = false) {
    dispatch(now);
    maybe_open(now, burst);
  }
};

// ---- pool_core --------------------------------------------------------------

pool_core::pool_core(const pool_params& params, std::size_t capacity_per_slot) {
  validate(params);
  if (capacity_per_slot == 0)
    throw error(make_error_code(errc::bad_params), "pool_core: capacity_per_slot (0) must be at least 1");
  impl_ = std::make_unique<impl>(params, capacity_per_slot);
}

pool_core::~pool_core() = default;
pool_core::pool_core(pool_core&&) noexcept = default;
pool_core& pool_core::operator=(pool_core&&) noexcept = default;

void pool_core::start(time_point now) { impl_->maybe_open(now); }

void pool_core::set_group(slot_id slot, slot_group group) {
  if (impl::slot* s = impl_->slots.find(slot)) impl_->slots.set_group(*s, group);
}

request_outcome pool_core::request(time_point now, request_kind kind, time_point deadline, slot_group prefer) {
  impl& p = *impl_;
  using k = request_outcome::kind;
  if (p.closed) return {k::rejected, 0, 0, make_error_code(errc::closed)};

  // Older waiters of the same kind come first. A shared request may skip
  // queued exclusive ones: they wait for a load-0 slot, which does not exist
  // while they are queued, so the busy slot it takes was never theirs.
  if (p.waiters.waiting(kind) == 0) {
    if (impl::slot* s = p.slots.pick(kind, now)) {
      // Growth answers "no idle slot left", not where the preference led.
      const bool was_idle = s->load == 0;
      s = p.slots.prefer_group(*s, kind, prefer, now);
      p.slots.grant(*s, kind, now);
      const slot_id id = s->id;
      if (!was_idle) p.grow_on_demand(now);
      p.maybe_open(now);  // pick() may have retired slots below min_size
      return {k::granted, id, 0, {}};
    }
  }
  if (deadline <= now) {
    // Nothing to wait for (acquire_timeout 0: "try"): answer now rather than
    // queue a waiter only to expire it on the next tick. Still grow, so a
    // later try finds a connection.
    p.grow_on_demand(now);
    p.maybe_open(now);
    return {k::rejected, 0, 0, p.expiry_error()};
  }
  if (p.waiters.size() >= p.params.max_queued) {
    ++p.err_queue_full;
    p.maybe_open(now);
    return {k::rejected, 0, 0, make_error_code(errc::queue_full)};
  }
  const waiter_id id = p.waiters.push(kind, deadline);
  p.settle(now);
  // settle() may already have granted it (an earlier waiter left capacity).
  return {k::queued, 0, id, {}};
}

void pool_core::release(time_point now, slot_id slot, request_kind kind, std::size_t grants) {
  impl& p = *impl_;
  // Waiters are served once, after the whole batch: dispatch hands out the
  // freed units in queue order, as it would one at a time.
  if (!p.slots.release(slot, kind, now, grants)) return;  // closed since, or no grant to give back
  p.settle(now);
}

bool pool_core::cancel(waiter_id waiter) {
  impl& p = *impl_;
  if (!p.waiters.contains(waiter)) return false;
  // erase_waiter also drops a reservation held for this waiter; the next
  // event re-reserves for the new head if it is exclusive.
  p.erase_waiter(waiter);
  return true;
}

void pool_core::on_open_succeeded(time_point now, slot_id slot) {
  impl& p = *impl_;
  impl::slot* s = p.slots.find(slot);
  if (s == nullptr || s->state != slot_state::connecting) return;
  ++p.connects;
  // The first success after an outage: callers have waited through it, so
  // what they need opens at once, as at startup, not at the growth pace.
  const bool recovered = p.growth.connect_succeeded();
  if (p.closed) {
    p.slots.remove(slot, true, true);
    return;
  }
  p.slots.connected(*s, now);
  p.settle(now, recovered);
}

void pool_core::on_open_failed(time_point now, slot_id slot, std::error_code ec, connect_failure_kind kind) {
  impl& p = *impl_;
  const impl::slot* s = p.slots.find(slot);
  if (s == nullptr || s->state != slot_state::connecting) return;
  const bool probe = s->probe;
  p.slots.remove(slot, false, false);  // nothing was established: the driver disposes of the attempt
  ++p.err_connect;
  p.growth.connect_failed(now, ec, probe);
  if (p.closed) return;
  if (kind == connect_failure_kind::permanent && p.slots.usable() == 0) p.fail_all(p.growth.last_error());
  p.settle(now);
}

void pool_core::on_broken(time_point now, slot_id slot) {
  impl& p = *impl_;
  const impl::slot* s = p.slots.find(slot);
  if (s == nullptr) return;
  const bool was_connected = s->state != slot_state::connecting;
  p.slots.remove(slot, true, was_connected);
  p.settle(now);
}

void pool_core::on_check_done(time_point now, slot_id slot, bool healthy) {
  impl& p = *impl_;
  impl::slot* s = p.slots.find(slot);
  if (s == nullptr || s->state != slot_state::checking) return;
  p.slots.check_done(*s, now, healthy, p.closed);
  p.settle(now);
}

void pool_core::on_tick(time_point now) {
  impl& p = *impl_;
  // Waiters first, in deadline order.
  for (auto d = p.waiters.earliest_deadline(); d && d->first <= now; d = p.waiters.earliest_deadline())
    p.fail_waiter(d->second, p.expiry_error());
  if (!p.closed) {
    p.slots.expire_due(now);
    // idle_timeout, longest idle first, never below min_size.
    p.slots.close_idle_due(now, p.params.min_size);
    // Health checks on idle connections unused for health_check_interval.
    p.slots.start_due_checks(now);
  }
  p.settle(now);
}

std::optional<time_point> pool_core::next_timer() const {
  const impl& p = *impl_;
  std::optional<time_point> t;
  auto consider = [&t](std::optional<time_point> x) {
    if (x && (!t || *x < *t)) t = x;
  };
  if (const auto d = p.waiters.earliest_deadline()) consider(d->first);
  if (p.closed) return t;
  consider(p.growth.next_timer(p.shape()));
  consider(p.slots.next_due(p.params.min_size));
  return t;
}

void pool_core::close(time_point now) {
  impl& p = *impl_;
  (void)now;
  if (p.closed) return;
  p.closed = true;
  p.fail_all(make_error_code(errc::closed));
  p.slots.close_all();
}

bool pool_core::is_closed() const noexcept { return impl_->closed; }
bool pool_core::is_drained() const noexcept { return impl_->closed && impl_->slots.empty(); }

std::vector<pool_action> pool_core::take_actions() {
  std::vector<pool_action> out;
  out.swap(impl_->actions);
  return out;
}

void pool_core::fill_stats(pool_stats& out) const {
  const impl& p = *impl_;
  out.connecting = p.slots.count(slot_state::connecting);
  out.idle = p.slots.count(slot_state::idle);
  out.busy = p.slots.count(slot_state::busy);
  out.draining = p.slots.count(slot_state::draining);
  out.checking = p.slots.count(slot_state::checking);
  out.in_flight = p.slots.grants_out();
  out.queued = p.waiters.size();
  out.connects = p.connects;
  out.disconnects = p.slots.disconnects();
  out.errors.pool_timeout = p.err_pool_timeout;
  out.errors.queue_full = p.err_queue_full;
  out.errors.connect = p.err_connect;
}

std::chrono::milliseconds pool_core::current_backoff() const noexcept { return impl_->growth.backoff(); }
std::size_t pool_core::slot_count() const noexcept { return impl_->slots.size(); }

std::optional<slot_state> pool_core::state_of(slot_id slot) const {
  const slot_table::slot* s = impl_->slots.find(slot);
  if (s == nullptr) return std::nullopt;
  return s->state;
}

std::size_t pool_core::load_of(slot_id slot) const {
  const slot_table::slot* s = impl_->slots.find(slot);
  return s == nullptr ? 0 : s->load;
}

}  // namespace pgpipe::detail
