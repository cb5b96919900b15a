// pool_core: the sans-IO pool shared by both drivers. See pool_core.hpp for the
// contract.
//
// Policy decisions (each has a unit test in tests/unit/pool_core_test.cpp):
//  - Grants: a shared request takes the least-loaded grantable slot (idle
//    ones first); an exclusive one needs load 0 and takes all capacity units.
//    Waiters are FIFO across kinds, except that shared waiters behind an
//    exclusive one may use busy slots (which it cannot use anyway). The
//    exclusive waiter at the head reserves the least-loaded slot: no new
//    shared grants there, so it gets the slot when its load drains.
//  - Growth: a request that finds no idle slot opens one more connection
//    (one growth connect in flight at a time), even when it was granted on a
//    busy slot, so the pool grows toward max_size under load (HikariCP-like).
//    Queued waiters open as many connects as they need (exclusive waiters one
//    each, shared ones one per capacity_per_slot). min_size is kept.
//    open + opening + draining + checking slots never exceed max_size.
//  - Paced growth (pool_params::growth_connects, growth_interval): while a
//    slot is usable, connects beyond the min_size deficit (on-demand growth,
//    queued demand) start only while fewer than growth_connects are
//    connecting and growth_interval has passed since the last paced start;
//    queued demand that the pace holds back is retried from next_timer. The
//    min_size deficit, and everything while no slot is usable (startup,
//    recovery), is opened at once: nothing is serving that pacing could
//    protect; so is what queued callers need when the first connect after an
//    outage succeeds. Back-off mode (one probe at a time) takes precedence.
//  - Connect failures: back-off starts at connect_backoff_initial, doubles on
//    each failed retry (attempts already in flight when the outage began do
//    not double it), caps at connect_backoff_max, resets on any success.
//    While failing, at most one attempt is in flight (no storm against a
//    down server), started from on_tick/next_timer once the back-off elapsed.
//  - Errors: a waiter whose deadline passes gets the last connect error when
//    connects are failing and no slot is usable ("server down"), otherwise
//    errc::pool_timeout ("pool exhausted"). A permanent connect error
//    (auth_failed, bad_conninfo, SQLSTATE class 28, 3D000) fails all queued
//    waiters at once when no slot is usable. Requests arriving afterwards are
//    still queued, not rejected: the next attempt (after the back-off) may
//    succeed once the configuration is fixed; if it fails permanently too they
//    fail at once with its error. So a request waits at most about one
//    back-off plus one connect attempt, never until its deadline, and the
//    error names the cause.
//  - max_lifetime: expiry is opened_at + max_lifetime minus a jitter of up to
//    2.5% (uniform, per slot), so connections opened together do not all
//    rotate in the same instant. An expired slot takes no new work (draining),
//    closes when its load reaches 0, and is replaced when demand or min_size
//    need it. Checked on tick and lazily when the slot would be granted.
//  - idle_timeout closes the longest-idle slots first, down to min_size.
//    Health checks: an idle slot unused for health_check_interval is checked
//    (state checking, not grantable); also lazily before being handed out.
//
// Data structures, chosen so that request/release stay cheap with ~10k queued
// waiters and a few hundred slots:
//  - slots: std::map by id (ids grow, so map order is age order).
//  - by_load: ordered (load, id) index of the grantable slots (idle or busy,
//    not draining, not checking, not reserved). The least-loaded slot is
//    begin(); an idle one has load 0, so "idle first" falls out of the order.
//  - waiters: hash map id -> {kind, deadline}; two FIFO deques (shared and
//    exclusive) hold ids with lazy deletion (a cancelled or expired id stays
//    in its deque until it reaches the front or a compaction drops it); a
//    (deadline, id) set gives expiry in deadline order. Ids grow, so comparing
//    the two queue fronts gives global FIFO order.
//  - timer sets: (due time, slot id) for lifetime expiry, health checks and
//    idle timeout, kept in step with each slot by refresh_timers(), so that
//    next_timer() is O(1) and on_tick() touches only what is due.
#include "core/pool/pool_core.hpp"

#include <pgpipe/error.hpp>

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

namespace pgpipe::detail {

namespace {

using std::chrono::milliseconds;

// Errors a retry cannot fix without someone changing the configuration or the
// server: failing queued waiters at once beats making them wait for a deadline.
bool is_permanent_connect_error(const std::error_code& ec) {
  if (ec == errc::auth_failed || ec == errc::bad_conninfo) return true;
  if (ec.category() == sqlstate_category()) {
    const std::string state = sqlstate_of(ec);
    // Class 28: invalid authorization specification; 3D000: invalid catalog name.
    return state.rfind("28", 0) == 0 || state == "3D000";
  }
  return false;
}

constexpr std::size_t state_index(slot_state s) noexcept { return static_cast<std::size_t>(s); }

}  // namespace

struct pool_core::impl {
  struct slot {
    slot_id id = 0;
    slot_state state = slot_state::connecting;
    std::size_t load = 0;    // capacity units in use (an exclusive grant takes all of them)
    std::size_t grants = 0;  // outstanding grants, to ignore releases that do not match one
    bool indexed = false;    // present in by_load
    bool reserved = false;   // held for the exclusive waiter at the head
    bool retire = false;     // close when the running health check answers
    bool probe = false;      // opened while connects were failing (counts for back-off growth)
    time_point expires_at = time_point::max();
    time_point idle_since{};     // load last reached 0 (idle_timeout)
    time_point last_activity{};  // last grant/release/check (health_check_interval)
    // This slot's entries in the timer sets (nullopt: absent).
    std::optional<time_point> life_key;
    std::optional<time_point> check_key;
    std::optional<time_point> idle_key;
  };
  using timer_set = std::set<std::pair<time_point, slot_id>>;
  struct waiter {
    request_kind kind;
    time_point deadline;
  };

  pool_params params;
  std::size_t capacity;

  std::map<slot_id, slot> slots;
  std::set<std::pair<std::size_t, slot_id>> by_load;
  std::array<std::size_t, 5> counts{};  // slots by state
  timer_set life_timers;   // in service (idle/busy/checking), not retiring: expires_at
  timer_set check_timers;  // idle, not reserved: last_activity + health_check_interval
  timer_set idle_timers;   // idle, not reserved: idle_since + idle_timeout
  std::optional<slot_id> reserved_slot;
  waiter_id reserved_for = 0;

  std::unordered_map<waiter_id, waiter> waiters;
  std::deque<waiter_id> shared_q;
  std::deque<waiter_id> excl_q;
  std::size_t shared_live = 0;
  std::size_t excl_live = 0;
  std::set<std::pair<time_point, waiter_id>> deadlines;

  std::vector<pool_action> actions;
  slot_id next_slot = 1;
  waiter_id next_waiter = 1;
  std::size_t grants_out = 0;

  bool closed = false;
  bool failing = false;  // the last connect attempt failed and none succeeded since
  milliseconds backoff{0};
  time_point retry_at{};
  time_point paced_at{};  // earliest start of the next paced connect
  std::error_code last_connect_error;

  std::uint64_t rng = 0x9e3779b97f4a7c15ULL;  // fixed seed: deterministic jitter in tests

  std::uint64_t connects = 0;
  std::uint64_t disconnects = 0;
  std::uint64_t err_pool_timeout = 0;
  std::uint64_t err_queue_full = 0;
  std::uint64_t err_connect = 0;

  impl(const pool_params& p, std::size_t cap) : params(p), capacity(cap) {}

  // ---- small helpers ------------------------------------------------------

  std::uint64_t next_random() noexcept {  // splitmix64
    std::uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  std::size_t count(slot_state s) const noexcept { return counts[state_index(s)]; }
  // Connected and in service: can take work now or after its check.
  std::size_t usable() const noexcept {
    return count(slot_state::idle) + count(slot_state::busy) + count(slot_state::checking);
  }
  std::size_t units(request_kind k) const noexcept {
    return k == request_kind::exclusive ? capacity : 1;
  }

  static void update_timer(timer_set& set, std::optional<time_point>& key,
                           std::optional<time_point> want, slot_id id) {
    if (key == want) return;
    if (key) set.erase({*key, id});
    if (want) set.emplace(*want, id);
    key = want;
  }
  // Call after any change to a slot's state, reservation, retire flag or
  // timestamps: keeps its timer entries equal to what the policy says.
  void refresh_timers(slot& s) {
    const bool in_service = s.state == slot_state::idle || s.state == slot_state::busy ||
                            s.state == slot_state::checking;
    const bool idle = s.state == slot_state::idle && !s.reserved;
    std::optional<time_point> life, check, idle_at;
    if (params.max_lifetime.count() > 0 && in_service && !s.retire) life = s.expires_at;
    if (params.health_check_interval.count() > 0 && idle) check = s.last_activity + params.health_check_interval;
    if (params.idle_timeout.count() > 0 && idle) idle_at = s.idle_since + params.idle_timeout;
    update_timer(life_timers, s.life_key, life, s.id);
    update_timer(check_timers, s.check_key, check, s.id);
    update_timer(idle_timers, s.idle_key, idle_at, s.id);
  }
  void clear_timers(slot& s) {
    update_timer(life_timers, s.life_key, std::nullopt, s.id);
    update_timer(check_timers, s.check_key, std::nullopt, s.id);
    update_timer(idle_timers, s.idle_key, std::nullopt, s.id);
  }

  void set_state(slot& s, slot_state st) {
    --counts[state_index(s.state)];
    ++counts[state_index(st)];
    s.state = st;
    refresh_timers(s);
  }
  void index_add(slot& s) {
    if (!s.indexed) {
      by_load.emplace(s.load, s.id);
      s.indexed = true;
    }
  }
  void index_remove(slot& s) {
    if (s.indexed) {
      by_load.erase({s.load, s.id});
      s.indexed = false;
    }
  }
  void set_load(slot& s, std::size_t load) {
    if (s.indexed && load != s.load) {
      // Reuse the node: this runs on every grant and release.
      auto node = by_load.extract({s.load, s.id});
      node.value().first = load;
      by_load.insert(std::move(node));
    }
    s.load = load;
  }

  void unreserve() {
    if (!reserved_slot) return;
    auto it = slots.find(*reserved_slot);
    reserved_slot.reset();
    reserved_for = 0;
    if (it == slots.end()) return;
    slot& s = it->second;
    s.reserved = false;
    if (s.state == slot_state::idle || s.state == slot_state::busy) index_add(s);
    refresh_timers(s);
  }

  // Removes a slot from the pool. emit_close: the driver has a connection to
  // close (every state except a failed connect).
  void remove_slot(slot_id id, bool emit_close, bool count_disconnect) {
    auto it = slots.find(id);
    if (it == slots.end()) return;
    slot& s = it->second;
    index_remove(s);
    clear_timers(s);
    if (reserved_slot && *reserved_slot == id) {
      reserved_slot.reset();
      reserved_for = 0;
    }
    --counts[state_index(s.state)];
    grants_out -= s.grants;
    slots.erase(it);
    if (emit_close) actions.push_back({pool_action::kind::close, id, 0, {}});
    if (count_disconnect) ++disconnects;
  }

  void open_slot() {
    slot s;
    s.id = next_slot++;
    s.probe = failing;
    ++counts[state_index(slot_state::connecting)];
    slots.emplace(s.id, s);
    actions.push_back({pool_action::kind::open, s.id, 0, {}});
  }

  bool lifetime_due(const slot& s, time_point now) const noexcept {
    return params.max_lifetime.count() > 0 && !s.retire && now >= s.expires_at &&
           (s.state == slot_state::idle || s.state == slot_state::busy ||
            s.state == slot_state::checking);
  }
  bool check_due(const slot& s, time_point now) const noexcept {
    return params.health_check_interval.count() > 0 && s.state == slot_state::idle &&
           !s.reserved && now - s.last_activity >= params.health_check_interval;
  }

  // A slot past max_lifetime takes no new work: close it now if idle,
  // otherwise let its work finish (draining) or its check answer (retire).
  void expire_slot(slot& s) {
    if (s.reserved) unreserve();
    switch (s.state) {
      case slot_state::idle:
        remove_slot(s.id, true, true);
        break;
      case slot_state::busy:
        index_remove(s);
        set_state(s, slot_state::draining);
        break;
      case slot_state::checking:
        s.retire = true;
        refresh_timers(s);
        break;
      default:
        break;
    }
  }

  void start_check(slot& s) {
    index_remove(s);
    set_state(s, slot_state::checking);
    actions.push_back({pool_action::kind::check, s.id, 0, {}});
  }

  // The slot a `kind` request would get now, or null. Handles lazily the
  // least-loaded slot being past its lifetime or due for a health check, so a
  // driver that ticks late never hands out a stale connection.
  slot* pick(request_kind kind, time_point now) {
    while (!by_load.empty()) {
      const auto [load, id] = *by_load.begin();
      slot& s = slots.at(id);
      if (lifetime_due(s, now)) {
        expire_slot(s);
        continue;
      }
      if (load == 0 && check_due(s, now)) {
        start_check(s);
        continue;
      }
      if (kind == request_kind::exclusive) return load == 0 ? &s : nullptr;
      return load < capacity ? &s : nullptr;
    }
    return nullptr;
  }

  void grant_units(slot& s, request_kind kind, time_point now) {
    set_load(s, s.load + units(kind));
    ++s.grants;
    ++grants_out;
    s.last_activity = now;
    if (s.state == slot_state::idle) set_state(s, slot_state::busy);
    refresh_timers(s);
  }

  // ---- waiters ------------------------------------------------------------

  waiter_id front_live(std::deque<waiter_id>& q) {
    while (!q.empty() && !waiters.contains(q.front())) q.pop_front();
    return q.empty() ? 0 : q.front();
  }

  // Lazy deletion leaves dead ids in the deques; drop them once they
  // outnumber the live ones so memory stays proportional to max_queued.
  void maybe_compact(std::deque<waiter_id>& q, std::size_t live) {
    if (q.size() <= 2 * live + 64) return;
    std::deque<waiter_id> kept;
    for (waiter_id id : q)
      if (waiters.contains(id)) kept.push_back(id);
    q.swap(kept);
  }

  // Forgets a waiter (granted, failed, cancelled). Returns its record.
  waiter erase_waiter(waiter_id id) {
    auto it = waiters.find(id);
    waiter w = it->second;
    waiters.erase(it);
    deadlines.erase({w.deadline, id});
    if (w.kind == request_kind::shared) {
      --shared_live;
      if (!shared_q.empty() && shared_q.front() == id) shared_q.pop_front();
      maybe_compact(shared_q, shared_live);
    } else {
      --excl_live;
      if (!excl_q.empty() && excl_q.front() == id) excl_q.pop_front();
      maybe_compact(excl_q, excl_live);
    }
    if (reserved_for == id) unreserve();
    return w;
  }

  void grant_waiter(waiter_id id, slot& s, time_point now) {
    const waiter w = erase_waiter(id);
    if (s.reserved) unreserve();
    grant_units(s, w.kind, now);
    actions.push_back({pool_action::kind::grant, s.id, id, {}});
  }

  void fail_waiter(waiter_id id, std::error_code ec) {
    erase_waiter(id);
    actions.push_back({pool_action::kind::fail, 0, id, ec});
  }

  // Fails every queued waiter, oldest first.
  void fail_all(std::error_code ec) {
    std::vector<waiter_id> ids;
    ids.reserve(waiters.size());
    for (const auto& [id, w] : waiters) ids.push_back(id);
    std::sort(ids.begin(), ids.end());
    for (waiter_id id : ids) fail_waiter(id, ec);
    shared_q.clear();
    excl_q.clear();
  }

  // What a waiter whose deadline passed is told: the connect error when the
  // server is the problem (nothing usable, connects failing), pool_timeout
  // when the pool is merely exhausted.
  std::error_code expiry_error() {
    if (failing && usable() == 0 && last_connect_error) return last_connect_error;
    ++err_pool_timeout;
    return make_error_code(errc::pool_timeout);
  }

  void reserve_least_loaded(waiter_id for_waiter) {
    if (reserved_slot || by_load.empty()) return;
    slot& s = slots.at(by_load.begin()->second);
    index_remove(s);
    s.reserved = true;
    refresh_timers(s);
    reserved_slot = s.id;
    reserved_for = for_waiter;
  }

  // Grants queued waiters while capacity allows, in global FIFO order, except
  // that shared waiters behind an exclusive one may use busy slots (which the
  // exclusive one cannot use anyway). The exclusive waiter at the head
  // reserves the least-loaded slot so that shared traffic cannot keep it busy
  // forever.
  void dispatch(time_point now) {
    for (;;) {
      const waiter_id s = front_live(shared_q);
      const waiter_id e = front_live(excl_q);
      if (s == 0 && e == 0) break;
      const bool exclusive_first = e != 0 && (s == 0 || e < s);
      if (!exclusive_first) {
        if (reserved_slot) unreserve();
        if (slot* t = pick(request_kind::shared, now)) {
          grant_waiter(s, *t, now);
          continue;
        }
        break;
      }
      slot* target = nullptr;
      if (reserved_slot) {
        slot& r = slots.at(*reserved_slot);
        if (lifetime_due(r, now)) {
          expire_slot(r);  // drops the reservation; the next round picks another
          continue;
        }
        if (r.load == 0) target = &r;
      }
      if (target == nullptr) target = pick(request_kind::exclusive, now);
      if (target != nullptr) {
        grant_waiter(e, *target, now);
        continue;
      }
      reserve_least_loaded(e);
      if (s != 0) {
        if (slot* t = pick(request_kind::shared, now)) {
          grant_waiter(s, *t, now);
          continue;
        }
      }
      break;
    }
  }

  // ---- connects -----------------------------------------------------------

  // Connects wanted ignoring back-off: min_size deficit or queued demand,
  // whichever is larger, within max_size.
  std::size_t connects_wanted() const noexcept {
    if (closed) return 0;
    const std::size_t connecting = count(slot_state::connecting);
    const std::size_t demand = excl_live + (shared_live + capacity - 1) / capacity;
    const std::size_t want_demand = demand > connecting ? demand - connecting : 0;
    return std::min(std::max(min_deficit(), want_demand), room());
  }
  std::size_t room() const noexcept {
    return slots.size() < params.max_size ? params.max_size - slots.size() : 0;
  }
  std::size_t min_deficit() const noexcept {
    const std::size_t have = usable() + count(slot_state::connecting);
    return params.min_size > have ? params.min_size - have : 0;
  }
  // Of connects_wanted(), how many the pace does not apply to.
  std::size_t unpaced_wanted() const noexcept {
    const std::size_t want = connects_wanted();
    return usable() == 0 ? want : std::min(want, min_deficit());
  }
  // A paced connect could start now, pace permitting (usable() > 0).
  bool pace_allows(time_point now) const noexcept {
    return count(slot_state::connecting) < params.growth_connects && now >= paced_at;
  }
  void open_paced(time_point now) {
    open_slot();
    paced_at = now + params.growth_interval;
  }

  // burst: open everything wanted, unpaced (the first success after an outage).
  void maybe_open(time_point now, bool burst = false) {
    std::size_t want = connects_wanted();
    if (want == 0) return;
    if (failing) {
      // Back-off mode: one probe at a time, and only once the back-off elapsed.
      if (count(slot_state::connecting) > 0 || now < retry_at) return;
      open_slot();
      return;
    }
    const std::size_t unpaced = burst ? want : unpaced_wanted();
    for (std::size_t i = 0; i < unpaced; ++i) open_slot();
    for (want -= unpaced; want > 0 && pace_allows(now); --want) open_paced(now);
  }

  // A request was served on a busy slot (or could not be served): grow by
  // one, paced, so a burst does not open max_size connections in a
  // microsecond. With nothing usable, one growth connect at a time.
  void grow_on_demand(time_point now) {
    if (closed || failing || room() == 0) return;
    if (usable() == 0) {
      if (count(slot_state::connecting) == 0) open_slot();
      return;
    }
    if (pace_allows(now)) open_paced(now);
  }

  // Queued demand held back by the pace: when it may start (next_timer).
  std::optional<time_point> paced_timer() const noexcept {
    if (closed || failing || usable() == 0) return std::nullopt;
    if (count(slot_state::connecting) >= params.growth_connects) return std::nullopt;  // an answer comes first
    if (connects_wanted() <= unpaced_wanted()) return std::nullopt;
    return paced_at;
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

request_outcome pool_core::request(time_point now, request_kind kind, time_point deadline) {
  impl& p = *impl_;
  using k = request_outcome::kind;
  if (p.closed) return {k::rejected, 0, 0, make_error_code(errc::closed)};

  // Older waiters of the same kind come first. A shared request may skip
  // queued exclusive ones: they wait for a load-0 slot, which does not exist
  // while they are queued, so the busy slot it takes was never theirs.
  const bool older_waiting = kind == request_kind::shared ? p.shared_live > 0 : p.excl_live > 0;
  if (!older_waiting) {
    if (impl::slot* s = p.pick(kind, now)) {
      const bool was_idle = s->load == 0;
      p.grant_units(*s, kind, now);
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
  const waiter_id id = p.next_waiter++;
  p.waiters.emplace(id, impl::waiter{kind, deadline});
  p.deadlines.emplace(deadline, id);
  if (kind == request_kind::shared) {
    p.shared_q.push_back(id);
    ++p.shared_live;
  } else {
    p.excl_q.push_back(id);
    ++p.excl_live;
  }
  p.settle(now);
  // settle() may already have granted it (an earlier waiter left capacity).
  return {k::queued, 0, id, {}};
}

void pool_core::release(time_point now, slot_id slot, request_kind kind) {
  impl& p = *impl_;
  auto it = p.slots.find(slot);
  if (it == p.slots.end()) return;  // closed since (broken, drained): ignore
  impl::slot& s = it->second;
  if (s.grants == 0 || s.state == slot_state::connecting || s.state == slot_state::checking) return;
  --s.grants;
  --p.grants_out;
  const std::size_t u = p.units(kind);
  // No grant left means no load left, even if the driver released with the
  // other kind than it requested (a slot must never stay busy for ever).
  p.set_load(s, s.grants == 0 || s.load < u ? 0 : s.load - u);
  s.last_activity = now;
  if (s.load == 0) s.idle_since = now;
  if (s.state == slot_state::draining) {
    if (s.load == 0) p.remove_slot(slot, true, true);
  } else {
    p.set_state(s, s.load == 0 ? slot_state::idle : slot_state::busy);
    p.refresh_timers(s);  // idle_since/last_activity moved even if the state did not
    // Past max_lifetime: close it now if idle, else drain (no tick needed).
    if (p.lifetime_due(s, now)) p.expire_slot(s);
  }
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
  auto it = p.slots.find(slot);
  if (it == p.slots.end() || it->second.state != slot_state::connecting) return;
  impl::slot& s = it->second;
  ++p.connects;
  // The first success after an outage: callers have waited through it, so
  // what they need opens at once, as at startup, not at the growth pace.
  const bool recovered = p.failing;
  p.failing = false;
  p.backoff = milliseconds{0};
  p.last_connect_error.clear();
  if (p.closed) {
    p.remove_slot(slot, true, true);
    return;
  }
  p.set_state(s, slot_state::idle);
  if (p.params.max_lifetime.count() > 0) {
    // Up to 2.5% negative jitter so connections opened together do not all
    // rotate in the same instant.
    const auto span = p.params.max_lifetime.count() / 40;
    const auto jitter = span > 0 ? static_cast<long long>(p.next_random() % static_cast<std::uint64_t>(span + 1)) : 0;
    s.expires_at = now + p.params.max_lifetime - milliseconds{jitter};
  }
  s.idle_since = now;
  s.last_activity = now;
  p.index_add(s);
  p.refresh_timers(s);
  p.settle(now, recovered);
}

void pool_core::on_open_failed(time_point now, slot_id slot, std::error_code ec) {
  impl& p = *impl_;
  auto it = p.slots.find(slot);
  if (it == p.slots.end() || it->second.state != slot_state::connecting) return;
  const bool probe = it->second.probe;
  p.remove_slot(slot, false, false);  // nothing was established: the driver disposes of the attempt
  ++p.err_connect;
  p.last_connect_error = ec ? ec : make_error_code(errc::connect_failed);
  if (!p.failing) {
    p.failing = true;
    p.backoff = p.params.connect_backoff_initial;
  } else if (probe) {
    // Only a probe failing doubles the back-off: attempts already in flight
    // when the failures began are the same outage, not a further one.
    p.backoff = std::min(p.backoff * 2, p.params.connect_backoff_max);
  }
  p.retry_at = now + p.backoff;
  if (p.closed) return;
  if (is_permanent_connect_error(p.last_connect_error) && p.usable() == 0)
    p.fail_all(p.last_connect_error);
  p.settle(now);
}

void pool_core::on_broken(time_point now, slot_id slot) {
  impl& p = *impl_;
  auto it = p.slots.find(slot);
  if (it == p.slots.end()) return;
  const bool was_connected = it->second.state != slot_state::connecting;
  p.remove_slot(slot, true, was_connected);
  p.settle(now);
}

void pool_core::on_check_done(time_point now, slot_id slot, bool healthy) {
  impl& p = *impl_;
  auto it = p.slots.find(slot);
  if (it == p.slots.end() || it->second.state != slot_state::checking) return;
  impl::slot& s = it->second;
  if (!healthy || p.closed || s.retire ||
      (p.params.max_lifetime.count() > 0 && now >= s.expires_at)) {
    p.remove_slot(slot, true, true);
  } else {
    s.last_activity = now;
    p.set_state(s, slot_state::idle);
    p.index_add(s);
  }
  p.settle(now);
}

void pool_core::on_tick(time_point now) {
  impl& p = *impl_;
  // Waiters first, in deadline order.
  while (!p.deadlines.empty() && p.deadlines.begin()->first <= now) {
    const waiter_id id = p.deadlines.begin()->second;
    p.fail_waiter(id, p.expiry_error());
  }
  if (!p.closed) {
    // max_lifetime: each expire_slot() takes the slot out of life_timers.
    while (!p.life_timers.empty() && p.life_timers.begin()->first <= now)
      p.expire_slot(p.slots.at(p.life_timers.begin()->second));
    // idle_timeout, longest idle first, never below min_size.
    while (p.usable() > p.params.min_size && !p.idle_timers.empty() &&
           p.idle_timers.begin()->first <= now)
      p.remove_slot(p.idle_timers.begin()->second, true, true);
    // Health checks on idle connections unused for health_check_interval.
    while (!p.check_timers.empty() && p.check_timers.begin()->first <= now)
      p.start_check(p.slots.at(p.check_timers.begin()->second));
  }
  p.settle(now);
}

std::optional<time_point> pool_core::next_timer() const {
  const impl& p = *impl_;
  std::optional<time_point> t;
  auto consider = [&t](time_point x) {
    if (!t || x < *t) t = x;
  };
  if (!p.deadlines.empty()) consider(p.deadlines.begin()->first);
  if (p.closed) return t;
  if (p.failing && p.count(slot_state::connecting) == 0 && p.connects_wanted() > 0) consider(p.retry_at);
  if (auto paced = p.paced_timer()) consider(*paced);
  if (!p.life_timers.empty()) consider(p.life_timers.begin()->first);
  if (!p.check_timers.empty()) consider(p.check_timers.begin()->first);
  // Idle slots at or below min_size stay: their idle timers are not due.
  if (p.usable() > p.params.min_size && !p.idle_timers.empty()) consider(p.idle_timers.begin()->first);
  return t;
}

void pool_core::close(time_point now) {
  impl& p = *impl_;
  (void)now;
  if (p.closed) return;
  p.closed = true;
  p.fail_all(make_error_code(errc::closed));
  p.unreserve();
  for (auto it = p.slots.begin(); it != p.slots.end();) {
    impl::slot& s = it->second;
    ++it;
    switch (s.state) {
      case slot_state::idle:
        p.remove_slot(s.id, true, true);
        break;
      case slot_state::busy:
        p.index_remove(s);
        p.set_state(s, slot_state::draining);
        break;
      case slot_state::checking:
        s.retire = true;  // closed when the check answers
        p.refresh_timers(s);
        break;
      default:  // connecting: closed when the attempt answers; draining: when its load drops to 0
        break;
    }
  }
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
  out.connecting = p.count(slot_state::connecting);
  out.idle = p.count(slot_state::idle);
  out.busy = p.count(slot_state::busy);
  out.draining = p.count(slot_state::draining);
  out.checking = p.count(slot_state::checking);
  out.in_flight = p.grants_out;
  out.queued = p.waiters.size();
  out.connects = p.connects;
  out.disconnects = p.disconnects;
  out.errors.pool_timeout = p.err_pool_timeout;
  out.errors.queue_full = p.err_queue_full;
  out.errors.connect = p.err_connect;
}

std::chrono::milliseconds pool_core::current_backoff() const noexcept {
  return impl_->failing ? impl_->backoff : std::chrono::milliseconds{0};
}
std::size_t pool_core::slot_count() const noexcept { return impl_->slots.size(); }

std::optional<slot_state> pool_core::state_of(slot_id slot) const {
  auto it = impl_->slots.find(slot);
  if (it == impl_->slots.end()) return std::nullopt;
  return it->second.state;
}

std::size_t pool_core::load_of(slot_id slot) const {
  auto it = impl_->slots.find(slot);
  return it == impl_->slots.end() ? 0 : it->second.load;
}

}  // namespace pgpipe::detail
