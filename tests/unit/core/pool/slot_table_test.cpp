// slot_table on its own: slot life cycle, least-loaded grants, the
// reservation, and the lifetime / health-check / idle timers. Time is a fake
// clock (time_points the test makes); nothing sleeps.
#include "core/pool/slot_table.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <vector>

namespace {

using namespace std::chrono_literals;
using pgpipe::pool_params;
using pgpipe::detail::pool_action;
using pgpipe::detail::request_kind;
using pgpipe::detail::slot_id;
using pgpipe::detail::slot_state;
using pgpipe::detail::slot_table;
using pgpipe::detail::time_point;

constexpr auto shared = request_kind::shared;
constexpr auto exclusive = request_kind::exclusive;
const time_point t0{std::chrono::seconds(1000)};

pool_params timers_off() {
  pool_params p;
  p.max_lifetime = 0ms;
  p.idle_timeout = 0ms;
  p.health_check_interval = 0ms;
  return p;
}

// A table and the actions it queued, with helpers to bring slots up.
struct fixture {
  explicit fixture(pool_params p = timers_off(), std::size_t capacity = 1) : table(p, capacity, actions) {}

  std::vector<pool_action> actions;
  slot_table table;

  slot_id connected(time_point now = t0) {
    const slot_id id = table.open(false);
    table.connected(*table.find(id), now);
    return id;
  }
  // Actions of one kind queued since the last call, slot ids in order.
  std::vector<slot_id> take(pool_action::kind what) {
    std::vector<slot_id> out;
    std::vector<pool_action> rest;
    for (const pool_action& a : actions) (a.what == what ? out.push_back(a.slot) : rest.push_back(a));
    actions.swap(rest);
    return out;
  }
  slot_state state(slot_id id) const { return table.find(id)->state; }
};

// ---- life cycle ---------------------------------------------------------------

TEST(slot_table, open_queues_an_open_action_for_a_connecting_slot) {
  fixture f;
  const slot_id a = f.table.open(false);
  const slot_id b = f.table.open(true);
  EXPECT_EQ(a, 1u);
  EXPECT_GT(b, a);
  EXPECT_EQ(f.take(pool_action::kind::open), (std::vector<slot_id>{a, b}));
  EXPECT_EQ(f.state(a), slot_state::connecting);
  EXPECT_TRUE(f.table.find(b)->probe);
  EXPECT_EQ(f.table.count(slot_state::connecting), 2u);
  EXPECT_EQ(f.table.usable(), 0u) << "a connecting slot takes no work";
  EXPECT_EQ(f.table.size(), 2u);
  EXPECT_EQ(f.table.pick(shared, t0), nullptr);
}

TEST(slot_table, a_connected_slot_is_idle_and_grantable) {
  fixture f;
  const slot_id a = f.connected();
  EXPECT_EQ(f.state(a), slot_state::idle);
  EXPECT_EQ(f.table.usable(), 1u);
  slot_table::slot* s = f.table.pick(shared, t0);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->id, a);
}

TEST(slot_table, remove_forgets_the_slot_its_grants_and_optionally_closes) {
  fixture f(timers_off(), 4);
  const slot_id a = f.connected();
  const slot_id b = f.connected();
  f.table.grant(*f.table.find(a), shared, t0);
  f.table.grant(*f.table.find(a), shared, t0);
  EXPECT_EQ(f.table.grants_out(), 2u);
  f.table.remove(a, true, true);
  EXPECT_EQ(f.table.find(a), nullptr);
  EXPECT_EQ(f.table.grants_out(), 0u);
  EXPECT_EQ(f.table.disconnects(), 1u);
  EXPECT_EQ(f.take(pool_action::kind::close), std::vector<slot_id>{a});
  f.table.remove(b, false, false);  // a failed connect: nothing to close, no disconnect
  EXPECT_TRUE(f.take(pool_action::kind::close).empty());
  EXPECT_EQ(f.table.disconnects(), 1u);
  EXPECT_TRUE(f.table.empty());
  f.table.remove(b, true, true);  // unknown id: no-op
  EXPECT_TRUE(f.take(pool_action::kind::close).empty());
}

// ---- grants -------------------------------------------------------------------

TEST(slot_table, shared_grants_go_to_the_least_loaded_slot_idle_first) {
  fixture f(timers_off(), 3);
  const slot_id a = f.connected();
  const slot_id b = f.connected();
  f.table.grant(*f.table.pick(shared, t0), shared, t0);  // a: 1
  EXPECT_EQ(f.table.find(a)->load, 1u);
  EXPECT_EQ(f.state(a), slot_state::busy);
  EXPECT_EQ(f.table.pick(shared, t0)->id, b) << "the idle slot first";
  f.table.grant(*f.table.find(b), shared, t0);
  f.table.grant(*f.table.find(b), shared, t0);  // a: 1, b: 2
  EXPECT_EQ(f.table.pick(shared, t0)->id, a);
}

TEST(slot_table, a_full_slot_is_not_picked) {
  fixture f(timers_off(), 2);
  const slot_id a = f.connected();
  f.table.grant(*f.table.find(a), shared, t0);
  EXPECT_EQ(f.table.pick(shared, t0)->id, a) << "room for one more";
  f.table.grant(*f.table.find(a), shared, t0);
  EXPECT_EQ(f.table.pick(shared, t0), nullptr);
}

TEST(slot_table, exclusive_needs_load_zero_and_takes_every_unit) {
  fixture f(timers_off(), 4);
  const slot_id a = f.connected();
  f.table.grant(*f.table.find(a), shared, t0);
  EXPECT_EQ(f.table.pick(exclusive, t0), nullptr);
  ASSERT_TRUE(f.table.release(a, shared, t0));
  ASSERT_NE(f.table.pick(exclusive, t0), nullptr);
  f.table.grant(*f.table.find(a), exclusive, t0);
  EXPECT_EQ(f.table.find(a)->load, 4u);
  EXPECT_EQ(f.table.pick(shared, t0), nullptr);
  ASSERT_TRUE(f.table.release(a, exclusive, t0));
  EXPECT_EQ(f.table.find(a)->load, 0u);
  EXPECT_EQ(f.state(a), slot_state::idle);
}

TEST(slot_table, release_without_a_matching_grant_changes_nothing) {
  fixture f;
  const slot_id a = f.connected();
  EXPECT_FALSE(f.table.release(a, shared, t0)) << "no grant on it";
  EXPECT_FALSE(f.table.release(999, shared, t0)) << "unknown slot";
  const slot_id c = f.table.open(false);
  EXPECT_FALSE(f.table.release(c, shared, t0)) << "connecting";
  EXPECT_EQ(f.state(a), slot_state::idle);
}

TEST(slot_table, the_last_release_frees_the_slot_whatever_kind_it_names) {
  fixture f(timers_off(), 8);
  const slot_id a = f.connected();
  f.table.grant(*f.table.find(a), exclusive, t0);
  ASSERT_TRUE(f.table.release(a, shared, t0));  // the driver named the wrong kind
  EXPECT_EQ(f.table.find(a)->load, 0u);
  EXPECT_EQ(f.state(a), slot_state::idle);
  EXPECT_EQ(f.table.grants_out(), 0u);
}

// ---- reservation --------------------------------------------------------------

TEST(slot_table, a_reserved_slot_takes_no_new_grants_until_unreserved) {
  fixture f(timers_off(), 4);
  const slot_id a = f.connected();
  const slot_id b = f.connected();
  f.table.grant(*f.table.find(a), shared, t0);
  f.table.grant(*f.table.find(b), shared, t0);
  f.table.grant(*f.table.find(b), shared, t0);
  f.table.reserve_least_loaded(7);
  EXPECT_EQ(f.table.reserved(), a);
  EXPECT_EQ(f.table.reserved_for(), 7u);
  EXPECT_TRUE(f.table.find(a)->reserved);
  EXPECT_EQ(f.table.pick(shared, t0)->id, b) << "the reserved slot is skipped";
  f.table.reserve_least_loaded(8);
  EXPECT_EQ(f.table.reserved_for(), 7u) << "one reservation at a time";
  f.table.unreserve();
  EXPECT_FALSE(f.table.reserved().has_value());
  EXPECT_EQ(f.table.reserved_for(), 0u);
  EXPECT_EQ(f.table.pick(shared, t0)->id, a);
}

TEST(slot_table, removing_the_reserved_slot_ends_the_reservation) {
  fixture f;
  const slot_id a = f.connected();
  f.table.reserve_least_loaded(3);
  ASSERT_EQ(f.table.reserved(), a);
  f.table.remove(a, true, true);
  EXPECT_FALSE(f.table.reserved().has_value());
  EXPECT_EQ(f.table.reserved_for(), 0u);
}

// ---- lifetime -----------------------------------------------------------------

pool_params lifetime(std::chrono::milliseconds d) {
  auto p = timers_off();
  p.max_lifetime = d;
  return p;
}

TEST(slot_table, lifetime_ends_within_its_jitter_and_spreads_slots_opened_together) {
  fixture f(lifetime(40'000ms));
  std::set<time_point> expiries;
  for (int i = 0; i < 8; ++i) {
    const slot_table::slot& s = *f.table.find(f.connected());
    EXPECT_LE(s.expires_at, t0 + 40'000ms);
    EXPECT_GE(s.expires_at, t0 + 39'000ms) << "at most 2.5% early";
    expiries.insert(s.expires_at);
  }
  EXPECT_GT(expiries.size(), 4u) << "slots opened together do not all rotate at once";
  EXPECT_EQ(f.table.next_due(0), *expiries.begin());
}

TEST(slot_table, an_expired_idle_slot_closes_and_a_busy_one_drains_until_released) {
  fixture f(lifetime(1'000ms));
  const slot_id idle = f.connected();
  const slot_id busy = f.connected();
  f.table.grant(*f.table.find(busy), shared, t0);
  f.table.expire_due(t0 + 1'000ms);
  EXPECT_EQ(f.table.find(idle), nullptr);
  EXPECT_EQ(f.take(pool_action::kind::close), std::vector<slot_id>{idle});
  EXPECT_EQ(f.state(busy), slot_state::draining);
  EXPECT_EQ(f.table.usable(), 0u) << "a draining slot takes no new work";
  EXPECT_EQ(f.table.pick(shared, t0 + 1'000ms), nullptr);
  ASSERT_TRUE(f.table.release(busy, shared, t0 + 1'100ms));
  EXPECT_EQ(f.table.find(busy), nullptr);
  EXPECT_EQ(f.take(pool_action::kind::close), std::vector<slot_id>{busy});
  EXPECT_EQ(f.table.disconnects(), 2u);
}

TEST(slot_table, a_slot_past_its_lifetime_is_never_picked_even_without_a_tick) {
  fixture f(lifetime(1'000ms));
  const slot_id a = f.connected();
  EXPECT_EQ(f.table.pick(shared, t0 + 2'000ms), nullptr);
  EXPECT_EQ(f.table.find(a), nullptr);
  EXPECT_EQ(f.take(pool_action::kind::close), std::vector<slot_id>{a});
}

TEST(slot_table, a_release_past_the_lifetime_expires_the_slot_at_once) {
  fixture f(lifetime(1'000ms), 2);
  const slot_id a = f.connected();
  f.table.grant(*f.table.find(a), shared, t0);
  f.table.grant(*f.table.find(a), shared, t0);
  ASSERT_TRUE(f.table.release(a, shared, t0 + 2'000ms));
  EXPECT_EQ(f.state(a), slot_state::draining) << "one grant still runs";
  ASSERT_TRUE(f.table.release(a, shared, t0 + 2'000ms));
  EXPECT_EQ(f.table.find(a), nullptr);
}

// ---- health checks ------------------------------------------------------------

pool_params checked(std::chrono::milliseconds d) {
  auto p = timers_off();
  p.health_check_interval = d;
  return p;
}

TEST(slot_table, an_idle_slot_unused_for_the_interval_is_checked) {
  fixture f(checked(500ms));
  const slot_id a = f.connected();
  EXPECT_EQ(f.table.next_due(0), t0 + 500ms);
  f.table.start_due_checks(t0 + 499ms);
  EXPECT_TRUE(f.take(pool_action::kind::check).empty());
  f.table.start_due_checks(t0 + 500ms);
  EXPECT_EQ(f.take(pool_action::kind::check), std::vector<slot_id>{a});
  EXPECT_EQ(f.state(a), slot_state::checking);
  EXPECT_EQ(f.table.usable(), 1u) << "in service, after its check";
  EXPECT_EQ(f.table.pick(shared, t0 + 500ms), nullptr) << "a checking slot takes no work";
  f.table.check_done(*f.table.find(a), t0 + 510ms, true, false);
  EXPECT_EQ(f.state(a), slot_state::idle);
  EXPECT_EQ(f.table.next_due(0), t0 + 1'010ms) << "the interval counts from the check";
}

TEST(slot_table, a_failed_check_closes_the_slot) {
  fixture f(checked(500ms));
  const slot_id a = f.connected();
  f.table.start_due_checks(t0 + 500ms);
  f.take(pool_action::kind::check);
  f.table.check_done(*f.table.find(a), t0 + 510ms, false, false);
  EXPECT_EQ(f.table.find(a), nullptr);
  EXPECT_EQ(f.take(pool_action::kind::close), std::vector<slot_id>{a});
}

TEST(slot_table, a_stale_idle_slot_is_checked_instead_of_handed_out) {
  fixture f(checked(500ms));
  const slot_id a = f.connected();
  EXPECT_EQ(f.table.pick(shared, t0 + 600ms), nullptr);
  EXPECT_EQ(f.take(pool_action::kind::check), std::vector<slot_id>{a});
}

TEST(slot_table, a_slot_that_expires_during_its_check_closes_when_it_answers) {
  auto p = checked(500ms);
  p.max_lifetime = 1'000ms;
  fixture f(p);
  const slot_id a = f.connected();
  f.table.start_due_checks(t0 + 500ms);
  f.table.expire_due(t0 + 1'000ms);
  EXPECT_EQ(f.state(a), slot_state::checking) << "the check is still running";
  f.table.check_done(*f.table.find(a), t0 + 1'010ms, true, false);
  EXPECT_EQ(f.table.find(a), nullptr);
}

// ---- idle timeout -------------------------------------------------------------

TEST(slot_table, idle_timeout_closes_longest_idle_first_down_to_keep) {
  auto p = timers_off();
  p.idle_timeout = 1'000ms;
  fixture f(p);
  const slot_id a = f.connected(t0);
  const slot_id b = f.connected(t0 + 100ms);
  const slot_id c = f.connected(t0 + 200ms);
  EXPECT_EQ(f.table.next_due(1), t0 + 1'000ms);
  f.table.close_idle_due(t0 + 5'000ms, 1);
  EXPECT_EQ(f.take(pool_action::kind::close), (std::vector<slot_id>{a, b}));
  EXPECT_NE(f.table.find(c), nullptr);
  EXPECT_FALSE(f.table.next_due(1).has_value()) << "a slot kept by `keep` sets no timer";
}

TEST(slot_table, a_slot_in_use_is_not_closed_for_idleness) {
  auto p = timers_off();
  p.idle_timeout = 1'000ms;
  fixture f(p);
  const slot_id a = f.connected();
  f.table.grant(*f.table.find(a), shared, t0);
  f.table.close_idle_due(t0 + 5'000ms, 0);
  EXPECT_EQ(f.state(a), slot_state::busy);
  ASSERT_TRUE(f.table.release(a, shared, t0 + 5'000ms));
  EXPECT_EQ(f.table.next_due(0), t0 + 6'000ms) << "idle time counts from the release";
}

// ---- close --------------------------------------------------------------------

TEST(slot_table, close_all_closes_idle_drains_busy_and_retires_checking) {
  fixture f(checked(500ms));
  const slot_id idle = f.connected();
  const slot_id busy = f.connected();
  const slot_id checking = f.connected();
  const slot_id connecting = f.table.open(false);
  f.table.grant(*f.table.find(busy), shared, t0);
  f.table.start_check(*f.table.find(checking));
  f.table.reserve_least_loaded(1);
  f.table.close_all();
  EXPECT_FALSE(f.table.reserved().has_value());
  EXPECT_EQ(f.table.find(idle), nullptr);
  EXPECT_EQ(f.take(pool_action::kind::close), std::vector<slot_id>{idle});
  EXPECT_EQ(f.state(busy), slot_state::draining);
  EXPECT_EQ(f.state(connecting), slot_state::connecting) << "closed when its connect answers";
  EXPECT_TRUE(f.table.find(checking)->retire);
  f.table.check_done(*f.table.find(checking), t0 + 10ms, true, false);
  EXPECT_EQ(f.table.find(checking), nullptr) << "a healthy answer does not bring it back";
}

}  // namespace
