// slot_table: see slot_table.hpp for the contract.
//
// Policy:
//  - max_lifetime: expiry is opened_at + max_lifetime minus a jitter of up to
//    2.5% (uniform, per slot), so connections opened together do not all
//    rotate in the same instant. An expired slot takes no new work (draining),
//    closes when its load reaches 0, and is replaced when demand or min_size
//    need it (pool_core's growth policy). Checked on tick and lazily when the
//    slot would be granted or is released.
//  - idle_timeout closes the longest-idle slots first, down to the number
//    pool_core keeps (min_size).
//  - Health checks: an idle slot unused for health_check_interval is checked
//    (state checking, not grantable); also lazily before being handed out.
//
// Data structures, chosen so that grant and release stay cheap with a few
// hundred slots:
//  - slots: std::map by id (ids grow, so map order is age order).
//  - by_load: ordered (load, id) index of the grantable slots (idle or busy,
//    not draining, not checking, not reserved). The least-loaded slot is
//    begin(); an idle one has load 0, so "idle first" falls out of the order.
//  - by_group_load: the same index for the slots that have a group, ordered
//    by (group, load, id), so a group's least-loaded slot is one lower_bound.
//  - timer sets: (due time, slot id) for lifetime expiry, health checks and
//    idle timeout, kept in step with each slot by refresh_timers(), so that
//    next_due() is O(1) and the *_due() calls touch only what is due.
#include "core/pool/slot_table.hpp"

#include <algorithm>

namespace pgpipe::detail {

using std::chrono::milliseconds;

slot_table::slot_table(const pool_params& params, std::size_t capacity_per_slot,
                       std::vector<pool_action>& actions)
    : max_lifetime_(params.max_lifetime),
      health_check_interval_(params.health_check_interval),
      idle_timeout_(params.idle_timeout),
      capacity_(capacity_per_slot),
      actions_(actions) {}

slot_id slot_table::open(bool probe) {
  slot s;
  s.id = next_slot_++;
  s.probe = probe;
  ++counts_[index_of(slot_state::connecting)];
  slots_.emplace(s.id, s);
  actions_.push_back({pool_action::kind::open, s.id, 0, {}});
  return s.id;
}

void slot_table::connected(slot& s, time_point now) {
  set_state(s, slot_state::idle);
  if (max_lifetime_.count() > 0) {
    // Up to 2.5% negative jitter so connections opened together do not all
    // rotate in the same instant.
    const auto span = max_lifetime_.count() / 40;
    const auto jitter = span > 0 ? static_cast<long long>(next_random() % static_cast<std::uint64_t>(span + 1)) : 0;
    s.expires_at = now + max_lifetime_ - milliseconds{jitter};
  }
  s.idle_since = now;
  s.last_activity = now;
  index_add(s);
  refresh_timers(s);
}

void slot_table::remove(slot_id id, bool emit_close, bool count_disconnect) {
  auto it = slots_.find(id);
  if (it == slots_.end()) return;
  slot& s = it->second;
  index_remove(s);
  clear_timers(s);
  if (reserved_slot_ && *reserved_slot_ == id) {
    reserved_slot_.reset();
    reserved_for_ = 0;
  }
  --counts_[index_of(s.state)];
  grants_out_ -= s.grants;
  slots_.erase(it);
  if (emit_close) actions_.push_back({pool_action::kind::close, id, 0, {}});
  if (count_disconnect) ++disconnects_;
}

// A slot past max_lifetime takes no new work: close it now if idle,
// otherwise let its work finish (draining) or its check answer (retire).
void slot_table::expire(slot& s) {
  if (s.reserved) unreserve();
  switch (s.state) {
    case slot_state::idle:
      remove(s.id, true, true);
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

void slot_table::start_check(slot& s) {
  index_remove(s);
  set_state(s, slot_state::checking);
  actions_.push_back({pool_action::kind::check, s.id, 0, {}});
}

void slot_table::check_done(slot& s, time_point now, bool healthy, bool closing) {
  if (!healthy || closing || s.retire || (max_lifetime_.count() > 0 && now >= s.expires_at)) {
    remove(s.id, true, true);
  } else {
    s.last_activity = now;
    set_state(s, slot_state::idle);
    index_add(s);
  }
}

void slot_table::close_all() {
  unreserve();
  for (auto it = slots_.begin(); it != slots_.end();) {
    slot& s = it->second;
    ++it;
    switch (s.state) {
      case slot_state::idle:
        remove(s.id, true, true);
        break;
      case slot_state::busy:
        index_remove(s);
        set_state(s, slot_state::draining);
        break;
      case slot_state::checking:
        s.retire = true;  // closed when the check answers
        refresh_timers(s);
        break;
      default:  // connecting: closed when the attempt answers; draining: when its load drops to 0
        break;
    }
  }
}

slot_table::slot* slot_table::pick(request_kind kind, time_point now) {
  while (!by_load_.empty()) {
    const auto [load, id] = *by_load_.begin();
    slot& s = slots_.at(id);
    if (lifetime_due(s, now)) {
      expire(s);
      continue;
    }
    if (load == 0 && check_due(s, now)) {
      start_check(s);
      continue;
    }
    if (kind == request_kind::exclusive) return load == 0 ? &s : nullptr;
    return load < capacity_ ? &s : nullptr;
  }
  return nullptr;
}

slot_table::slot* slot_table::prefer_group(slot& least, request_kind kind, slot_group group, time_point now) {
  if (group == no_slot_group || least.group == group) return &least;
  auto it = by_group_load_.lower_bound({group, 0, 0});
  if (it == by_group_load_.end() || std::get<0>(*it) != group) return &least;
  const auto [g, load, id] = *it;
  (void)g;
  const bool room = kind == request_kind::exclusive ? load == 0 : load < capacity_ && load <= 2 * least.load + 1;
  if (!room) return &least;
  slot& s = slots_.at(id);
  if (lifetime_due(s, now) || check_due(s, now)) return &least;
  return &s;
}

bool slot_table::release(slot_id id, request_kind kind, time_point now, std::size_t n) {
  auto it = slots_.find(id);
  if (it == slots_.end()) return false;  // closed since (broken, drained): ignore
  slot& s = it->second;
  if (n == 0 || s.grants == 0 || s.state == slot_state::connecting || s.state == slot_state::checking) return false;
  // Releases past the grants held would each have been ignored.
  const std::size_t k = std::min(n, s.grants);
  s.grants -= k;
  grants_out_ -= k;
  // k grants of u units: k <= grants <= load / u for a slot granted by
  // kind, so k * u cannot overflow what load holds.
  const std::size_t u = units(kind);
  const std::size_t freed = k > s.load / u ? s.load : k * u;
  // No grant left means no load left, even if the driver released with the
  // other kind than it requested (a slot must never stay busy for ever).
  set_load(s, s.grants == 0 ? 0 : s.load - freed);
  s.last_activity = now;
  if (s.load == 0) s.idle_since = now;
  if (s.state == slot_state::draining) {
    if (s.load == 0) remove(id, true, true);
  } else {
    set_state(s, s.load == 0 ? slot_state::idle : slot_state::busy);
    refresh_timers(s);  // idle_since/last_activity moved even if the state did not
    // Past max_lifetime: close it now if idle, else drain (no tick needed).
    if (lifetime_due(s, now)) expire(s);
  }
  return true;
}

void slot_table::reserve_least_loaded(waiter_id for_waiter) {
  if (reserved_slot_ || by_load_.empty()) return;
  slot& s = slots_.at(by_load_.begin()->second);
  index_remove(s);
  s.reserved = true;
  refresh_timers(s);
  reserved_slot_ = s.id;
  reserved_for_ = for_waiter;
}

void slot_table::unreserve() {
  if (!reserved_slot_) return;
  auto it = slots_.find(*reserved_slot_);
  reserved_slot_.reset();
  reserved_for_ = 0;
  if (it == slots_.end()) return;
  slot& s = it->second;
  s.reserved = false;
  if (s.state == slot_state::idle || s.state == slot_state::busy) index_add(s);
  refresh_timers(s);
}

void slot_table::expire_due(time_point now) {
  // Each expire() takes the slot out of life_timers_.
  while (!life_timers_.empty() && life_timers_.begin()->first <= now)
    expire(slots_.at(life_timers_.begin()->second));
}

void slot_table::close_idle_due(time_point now, std::size_t keep) {
  while (usable() > keep && !idle_timers_.empty() && idle_timers_.begin()->first <= now)
    remove(idle_timers_.begin()->second, true, true);
}

void slot_table::start_due_checks(time_point now) {
  while (!check_timers_.empty() && check_timers_.begin()->first <= now)
    start_check(slots_.at(check_timers_.begin()->second));
}

std::optional<time_point> slot_table::next_due(std::size_t keep) const {
  std::optional<time_point> t;
  auto consider = [&t](const timer_set& set) {
    if (!set.empty() && (!t || set.begin()->first < *t)) t = set.begin()->first;
  };
  consider(life_timers_);
  consider(check_timers_);
  // Idle slots at or below `keep` stay: their idle timers are not due.
  if (usable() > keep) consider(idle_timers_);
  return t;
}

}  // namespace pgpipe::detail
