// slot_table: the pool's connections and what is due on them, sans-IO.
//
// Holds each slot's state and load, the index that finds the least-loaded
// grantable slot, the timer sets (max_lifetime, health check, idle timeout)
// kept in step with every slot, and the one reservation an exclusive waiter
// may hold. It decides nothing about when to connect or whom to serve:
// pool_core does, and calls it. The open, close and check actions a call
// causes are appended, in order, to the action list given at construction.
// Not thread-safe (pool_core's caller serializes).
//
// A slot is grantable while idle or busy, not reserved; connecting, checking
// and draining slots take no work. Capacity per slot: a shared grant takes 1
// unit, an exclusive grant takes all capacity units (so needs load 0).
//
// A slot may belong to a group (the driver's event loop); slots in a group
// have a second least-loaded index per group, so that a request preferring
// its own group finds that group's least-loaded slot in O(log n). Slots
// without a group cost nothing more.
#pragma once

#include "core/pool/pool_types.hpp"

#include <pgpipe/pool_params.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

namespace pgpipe::detail {

class slot_table {
 public:
  struct slot {
    slot_id id = 0;
    slot_state state = slot_state::connecting;
    std::size_t load = 0;    // capacity units in use (an exclusive grant takes all of them)
    std::size_t grants = 0;  // outstanding grants, to ignore releases that do not match one
    bool indexed = false;    // present in the least-loaded index
    bool reserved = false;   // held for the exclusive waiter at the head
    bool retire = false;     // close when the running health check answers
    bool probe = false;      // opened while connects were failing (counts for back-off growth)
    slot_group group = no_slot_group;
    time_point expires_at = time_point::max();
    time_point idle_since{};     // load last reached 0 (idle_timeout)
    time_point last_activity{};  // last grant/release/check (health_check_interval)
    // This slot's entries in the timer sets (nullopt: absent).
    std::optional<time_point> life_key;
    std::optional<time_point> check_key;
    std::optional<time_point> idle_key;
  };

  /// Reads max_lifetime, health_check_interval and idle_timeout from params
  /// (0: off). `actions` must outlive the table.
  slot_table(const pool_params& params, std::size_t capacity_per_slot, std::vector<pool_action>& actions);
  slot_table(const slot_table&) = delete;
  slot_table& operator=(const slot_table&) = delete;

  // ---- counts -------------------------------------------------------------

  std::size_t capacity() const noexcept { return capacity_; }
  /// Units a grant of `kind` takes: 1, or the whole slot.
  std::size_t units(request_kind kind) const noexcept {
    return kind == request_kind::exclusive ? capacity_ : 1;
  }
  /// Slots in every state (what counts against max_size).
  std::size_t size() const noexcept { return slots_.size(); }
  bool empty() const noexcept { return slots_.empty(); }
  std::size_t count(slot_state s) const noexcept { return counts_[static_cast<std::size_t>(s)]; }
  /// Connected and in service (idle, busy, checking): can take work now or
  /// after its check.
  std::size_t usable() const noexcept {
    return count(slot_state::idle) + count(slot_state::busy) + count(slot_state::checking);
  }
  /// Grants outstanding on slots still in the table.
  std::size_t grants_out() const noexcept { return grants_out_; }
  /// Connections closed (remove() with count_disconnect).
  std::uint64_t disconnects() const noexcept { return disconnects_; }

  slot* find(slot_id id) {
    auto it = slots_.find(id);
    return it == slots_.end() ? nullptr : &it->second;
  }
  const slot* find(slot_id id) const {
    auto it = slots_.find(id);
    return it == slots_.end() ? nullptr : &it->second;
  }

  // ---- life cycle ---------------------------------------------------------

  /// A new connecting slot; queues its open action. Ids grow from 1.
  slot_id open(bool probe);
  /// The connect of a connecting slot succeeded: it becomes idle and
  /// grantable, with its lifetime (minus jitter) counted from `now`.
  void connected(slot& s, time_point now);
  /// Removes a slot and its timers (and the reservation, when it held it).
  /// emit_close: queue a close action (the driver has a connection to close:
  /// every state but a failed connect). count_disconnect: count it in
  /// disconnects(). Its outstanding grants are forgotten. Unknown id: no-op.
  void remove(slot_id id, bool emit_close, bool count_disconnect);
  /// Past max_lifetime: an idle slot closes now, a busy one drains (closes
  /// when its load reaches 0), a checking one closes when its check answers.
  void expire(slot& s);
  /// Takes an idle slot out of service and queues its check action.
  void start_check(slot& s);
  /// The check of a checking slot answered. It returns to idle when healthy,
  /// not `closing` and not retired or past its lifetime; otherwise it closes.
  void check_done(slot& s, time_point now, bool healthy, bool closing);
  /// The pool closes: idle slots close, busy ones drain, checking ones close
  /// when their check answers, connecting ones when their connect answers.
  void close_all();

  // ---- grants -------------------------------------------------------------

  /// The slot a `kind` request would get now, or null: the least-loaded
  /// grantable slot if it has room (load 0 for an exclusive request). Expires
  /// or starts a check on the least-loaded slot first when it is due, so a
  /// driver that ticks late never hands out a stale connection.
  slot* pick(request_kind kind, time_point now);
  /// Puts `s` in `group` (no_slot_group: none).
  void set_group(slot& s, slot_group group) {
    const bool was_indexed = s.indexed;
    index_remove(s);
    s.group = group;
    if (was_indexed) index_add(s);
  }
  /// What a request preferring `group` gets instead of `least` (what pick()
  /// returned for it): `group`'s least-loaded grantable slot when it has
  /// room for `kind` and, for a shared request, carries at most twice
  /// `least`'s load plus one, so that callers gathered on one group still
  /// spread over the others' connections; else `least`. A slot whose
  /// lifetime or health check is due is left to pick() (it is not preferred).
  slot* prefer_group(slot& least, request_kind kind, slot_group group, time_point now);
  /// Puts a grant of `kind` on `s` (idle or busy). Inline: it runs on every
  /// grant.
  void grant(slot& s, request_kind kind, time_point now) {
    set_load(s, s.load + units(kind));
    ++s.grants;
    ++grants_out_;
    s.last_activity = now;
    if (s.state == slot_state::idle) set_state(s, slot_state::busy);
    refresh_timers(s);
  }
  /// Gives back `n` grants of `kind` on slot `id` (at most the grants it
  /// holds): the same end state as `n` single releases at `now`. Returns
  /// false, changing nothing, when the slot is gone or holds no grant. Once
  /// no grant is left the load is 0 whatever kind was given. A draining slot
  /// closes at load 0; one past its lifetime expires.
  bool release(slot_id id, request_kind kind, time_point now, std::size_t n = 1);

  bool lifetime_due(const slot& s, time_point now) const noexcept {
    return max_lifetime_.count() > 0 && !s.retire && now >= s.expires_at &&
           (s.state == slot_state::idle || s.state == slot_state::busy ||
            s.state == slot_state::checking);
  }

  // ---- reservation --------------------------------------------------------

  /// Reserves the least-loaded grantable slot for `for_waiter`: it takes no
  /// new grants (pick() skips it) until unreserve(). No-op when a slot is
  /// already reserved or none is grantable.
  void reserve_least_loaded(waiter_id for_waiter);
  /// Ends the reservation (if any); the slot is grantable again.
  void unreserve();
  std::optional<slot_id> reserved() const noexcept { return reserved_slot_; }
  /// The waiter the reservation is for; 0 when there is none.
  waiter_id reserved_for() const noexcept { return reserved_for_; }

  // ---- timers -------------------------------------------------------------

  /// Expires every slot whose lifetime is due at `now`.
  void expire_due(time_point now);
  /// Closes idle slots whose idle_timeout is due at `now`, longest idle
  /// first, while more than `keep` slots are usable.
  void close_idle_due(time_point now, std::size_t keep);
  /// Starts a check on every idle slot unused for health_check_interval.
  void start_due_checks(time_point now);
  /// The earliest lifetime, check or idle timer; idle timers count only while
  /// more than `keep` slots are usable (below that they never fire).
  std::optional<time_point> next_due(std::size_t keep) const;

 private:
  using timer_set = std::set<std::pair<time_point, slot_id>>;

  static std::size_t index_of(slot_state s) noexcept { return static_cast<std::size_t>(s); }
  bool check_due(const slot& s, time_point now) const noexcept {
    return health_check_interval_.count() > 0 && s.state == slot_state::idle && !s.reserved &&
           now - s.last_activity >= health_check_interval_;
  }
  static void update_timer(timer_set& set, std::optional<time_point>& key, std::optional<time_point> want,
                           slot_id id) {
    if (key == want) return;
    if (key) set.erase({*key, id});
    if (want) set.emplace(*want, id);
    key = want;
  }
  // Inline, as set_state(): they run on every grant and release.
  // Call after any change to a slot's state, reservation, retire flag or
  // timestamps: keeps its timer entries equal to what the policy says.
  void refresh_timers(slot& s) {
    const bool in_service =
        s.state == slot_state::idle || s.state == slot_state::busy || s.state == slot_state::checking;
    const bool idle = s.state == slot_state::idle && !s.reserved;
    std::optional<time_point> life, check, idle_at;
    if (max_lifetime_.count() > 0 && in_service && !s.retire) life = s.expires_at;
    if (health_check_interval_.count() > 0 && idle) check = s.last_activity + health_check_interval_;
    if (idle_timeout_.count() > 0 && idle) idle_at = s.idle_since + idle_timeout_;
    update_timer(life_timers_, s.life_key, life, s.id);
    update_timer(check_timers_, s.check_key, check, s.id);
    update_timer(idle_timers_, s.idle_key, idle_at, s.id);
  }

  void clear_timers(slot& s) {
    update_timer(life_timers_, s.life_key, std::nullopt, s.id);
    update_timer(check_timers_, s.check_key, std::nullopt, s.id);
    update_timer(idle_timers_, s.idle_key, std::nullopt, s.id);
  }
  void set_state(slot& s, slot_state st) {
    --counts_[index_of(s.state)];
    ++counts_[index_of(st)];
    s.state = st;
    refresh_timers(s);
  }
  void index_add(slot& s) {
    if (!s.indexed) {
      by_load_.emplace(s.load, s.id);
      if (s.group != no_slot_group) by_group_load_.emplace(s.group, s.load, s.id);
      s.indexed = true;
    }
  }
  void index_remove(slot& s) {
    if (s.indexed) {
      by_load_.erase({s.load, s.id});
      if (s.group != no_slot_group) by_group_load_.erase({s.group, s.load, s.id});
      s.indexed = false;
    }
  }
  void set_load(slot& s, std::size_t load) {
    if (s.indexed && load != s.load) {
      // Reuse the nodes: this runs on every grant and release.
      auto node = by_load_.extract({s.load, s.id});
      node.value().first = load;
      by_load_.insert(std::move(node));
      if (s.group != no_slot_group) {
        auto g = by_group_load_.extract({s.group, s.load, s.id});
        std::get<1>(g.value()) = load;
        by_group_load_.insert(std::move(g));
      }
    }
    s.load = load;
  }
  std::uint64_t next_random() noexcept {  // splitmix64
    std::uint64_t z = (rng_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  std::chrono::milliseconds max_lifetime_;
  std::chrono::milliseconds health_check_interval_;
  std::chrono::milliseconds idle_timeout_;
  std::size_t capacity_;
  std::vector<pool_action>& actions_;

  std::map<slot_id, slot> slots_;
  std::set<std::pair<std::size_t, slot_id>> by_load_;  // grantable slots, least-loaded first
  // The grantable slots that have a group, by group, least-loaded first.
  std::set<std::tuple<slot_group, std::size_t, slot_id>> by_group_load_;
  std::array<std::size_t, 5> counts_{};                // slots by state
  timer_set life_timers_;   // in service (idle/busy/checking), not retiring: expires_at
  timer_set check_timers_;  // idle, not reserved: last_activity + health_check_interval
  timer_set idle_timers_;   // idle, not reserved: idle_since + idle_timeout
  std::optional<slot_id> reserved_slot_;
  waiter_id reserved_for_ = 0;
  slot_id next_slot_ = 1;
  std::size_t grants_out_ = 0;
  std::uint64_t disconnects_ = 0;
  std::uint64_t rng_ = 0x9e3779b97f4a7c15ULL;  // fixed seed: deterministic jitter in tests
};

}  // namespace pgpipe::detail
