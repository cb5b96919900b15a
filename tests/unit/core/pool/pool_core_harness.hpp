// The fake driver and fake clock of pool_core's unit tests: applies
// pool_core's actions the way a driver would and records them, so tests can
// answer opens and checks on command. Shared by every pool_core_*_test.cpp.
#pragma once

#include "core/pool/connect_error.hpp"
#include "core/pool/pool_core.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <vector>

namespace pgpipe::test::pool_harness {

using namespace std::chrono_literals;
using pgpipe::errc;
using pgpipe::pool_params;
using pgpipe::detail::pool_action;
using pgpipe::detail::pool_core;
using pgpipe::detail::request_kind;
using pgpipe::detail::request_outcome;
using pgpipe::detail::slot_id;
using pgpipe::detail::slot_state;
using pgpipe::detail::time_point;
using pgpipe::detail::waiter_id;

constexpr auto shared = request_kind::shared;
constexpr auto exclusive = request_kind::exclusive;

inline pool_params base_params() {
  pool_params p;
  p.max_size = 4;
  p.min_size = 0;
  p.max_queued = 100;
  p.acquire_timeout = 1000ms;
  p.max_lifetime = 0ms;
  p.idle_timeout = 0ms;
  p.health_check_interval = 0ms;
  p.connect_backoff_initial = 50ms;
  p.connect_backoff_max = 400ms;
  return p;
}

// Applies pool_core's actions the way a driver would, recording them so tests
// can answer opens and checks on command and see which waiter got what.
class harness {
 public:
  explicit harness(pool_params p, std::size_t capacity = 1) : pool(p, capacity) {}

  time_point now{std::chrono::seconds(1000)};
  pool_core pool;

  std::vector<slot_id> pending_opens;   // open actions not yet answered
  std::vector<slot_id> pending_checks;  // check actions not yet answered
  std::vector<slot_id> closed;          // close actions, in order
  std::vector<slot_id> opened_ever;     // every open action, in order
  std::map<waiter_id, slot_id> granted;
  std::map<waiter_id, std::error_code> failed;
  std::vector<waiter_id> grant_order;
  std::vector<waiter_id> fail_order;

  void pump() {
    for (const pool_action& a : pool.take_actions()) {
      switch (a.what) {
        case pool_action::kind::open:
          pending_opens.push_back(a.slot);
          opened_ever.push_back(a.slot);
          break;
        case pool_action::kind::close:
          closed.push_back(a.slot);
          std::erase(pending_checks, a.slot);  // the driver abandons a check or connect
          std::erase(pending_opens, a.slot);   // on a connection it closes

          break;
        case pool_action::kind::check:
          pending_checks.push_back(a.slot);
          break;
        case pool_action::kind::grant:
          EXPECT_FALSE(granted.contains(a.waiter) || failed.contains(a.waiter)) << "waiter " << a.waiter << " completed twice";
          // The grant names a live slot that now carries the work.
          EXPECT_EQ(pool.state_of(a.slot), slot_state::busy) << "grant of waiter " << a.waiter;
          granted[a.waiter] = a.slot;
          grant_order.push_back(a.waiter);
          break;
        case pool_action::kind::fail:
          EXPECT_FALSE(granted.contains(a.waiter) || failed.contains(a.waiter)) << "waiter " << a.waiter << " completed twice";
          failed[a.waiter] = a.ec;
          fail_order.push_back(a.waiter);
          break;
      }
    }
  }

  void start() { pool.start(now); pump(); }
  request_outcome req(request_kind k = shared, std::chrono::milliseconds timeout = 1000ms) {
    auto r = pool.request(now, k, now + timeout);
    pump();
    return r;
  }
  void release(slot_id s, request_kind k = shared) { pool.release(now, s, k); pump(); }
  void succeed_open(slot_id s) {
    std::erase(pending_opens, s);
    pool.on_open_succeeded(now, s);
    pump();
  }
  // Fails an open with `ec`, classified as the drivers do when no more is
  // known about it than its code.
  void fail_open(slot_id s, std::error_code ec) {
    fail_open(s, ec, pgpipe::detail::kind_of_connect_error(ec, false));
  }
  void fail_open(slot_id s, std::error_code ec, pgpipe::detail::connect_failure_kind kind) {
    std::erase(pending_opens, s);
    pool.on_open_failed(now, s, ec, kind);
    pump();
  }
  // Answers every pending open with success.
  void succeed_all_opens() {
    while (!pending_opens.empty()) succeed_open(pending_opens.front());
  }
  void check_done(slot_id s, bool ok) {
    std::erase(pending_checks, s);
    pool.on_check_done(now, s, ok);
    pump();
  }
  void broken(slot_id s) { pool.on_broken(now, s); pump(); }
  void tick() { pool.on_tick(now); pump(); }
  void advance(std::chrono::milliseconds d) { now += d; tick(); }
  // Runs the timer as a driver does: tick at next_timer() until `until`.
  void run_until(time_point until) {
    for (;;) {
      auto t = pool.next_timer();
      if (!t || *t > until) break;
      ASSERT_GE(*t, now - 1h) << "timer far in the past";
      now = std::max(now, *t);
      tick();
    }
    now = until;
    tick();
  }

  // Opens n connected slots and returns their ids.
  std::vector<slot_id> warm(std::size_t n) {
    pool_params unused;
    (void)unused;
    std::vector<slot_id> ids;
    std::vector<request_outcome> outs;
    for (std::size_t i = 0; i < n; ++i) outs.push_back(req(exclusive));
    succeed_all_opens();
    for (auto& [w, s] : granted) ids.push_back(s);
    for (auto& o : outs)
      if (o.what == request_outcome::kind::granted) ids.push_back(o.slot);
    for (slot_id s : ids) release(s, exclusive);
    granted.clear();
    grant_order.clear();
    std::sort(ids.begin(), ids.end());
    return ids;
  }
};

// The slot waiter `w` was granted, 0 while it has none.
inline slot_id granted_slot(const harness& h, waiter_id w) {
  auto it = h.granted.find(w);
  return it == h.granted.end() ? 0 : it->second;
}

}  // namespace pgpipe::test::pool_harness
