// The async pool's waiter maps (async/pool/waiter_map.hpp), driven the way
// client_impl drives them: a real pool_core on a fake clock, pool_core's
// grant and fail actions taking requests out of the map, and the caller's
// cancellation withdrawing them. Pins: a waiter granted, timed out, failed by
// close or cancelled is answered exactly once, whatever the order in which
// its grant, failure and cancellation arrive.
#include "async/pool/waiter_map.hpp"
#include "core/pool/connect_error.hpp"
#include "unit/core/pool/pool_core_harness.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

namespace {

using namespace std::chrono_literals;
using pgpipe::errc;
using pgpipe::pool_params;
using pgpipe::detail::pool_action;
using pgpipe::detail::pool_core;
using pgpipe::detail::request_kind;
using pgpipe::detail::request_outcome;
using pgpipe::detail::slot_id;
using pgpipe::detail::time_point;
using pgpipe::detail::waiter_id;
using pgpipe::detail::waiter_map;

// A caller's request: what it was told, and how many times.
struct fake_request {
  waiter_id waiter = 0;
  int answers = 0;
  bool granted = false;
  slot_id slot = 0;
  std::error_code ec;
  void answer(std::error_code e) {
    ++answers;
    ec = e;
  }
};

pool_params params(std::size_t max_size) {
  pool_params p = pgpipe::test::pool_harness::base_params();
  p.max_size = max_size;
  return p;
}

// client_impl's side of the pool for one kind of request: requests in, and
// pool_core's actions carried out on the map (pool_actions' grant and fail
// steps). Opens succeed when the test says so; closes are counted.
class glue {
 public:
  explicit glue(std::size_t max_size) : core(params(max_size), 1) {}

  time_point now{std::chrono::seconds(1000)};
  pool_core core;
  waiter_map<fake_request> waiting;
  std::vector<slot_id> opening;
  std::vector<slot_id> busy;  // one grant each (capacity 1)
  std::size_t closes = 0;

  std::shared_ptr<fake_request> submit(std::chrono::milliseconds timeout = 1000ms) {
    auto r = std::make_shared<fake_request>();
    const request_outcome out = core.request(now, request_kind::exclusive, now + timeout);
    switch (out.what) {
      case request_outcome::kind::granted:
        grant(*r, out.slot);
        break;
      case request_outcome::kind::queued:
        waiting.add(out.waiter, r);
        break;
      case request_outcome::kind::rejected:
        r->answer(out.ec);
        break;
    }
    collect();
    return r;
  }

  void cancel(fake_request& r) {
    if (waiting.withdraw(core, r)) r.answer(make_error_code(errc::cancelled));
    collect();
  }

  void open_all() {
    auto slots = std::move(opening);
    opening.clear();
    for (slot_id s : slots) {
      core.on_open_succeeded(now, s);
      collect();
    }
  }

  void release(slot_id s) {
    std::erase(busy, s);
    core.release(now, s, request_kind::exclusive);
    collect();
  }

  void tick(std::chrono::milliseconds by) {
    now += by;
    core.on_tick(now);
    collect();
  }

  void close() {
    core.close(now);
    collect();
  }

 private:
  void grant(fake_request& r, slot_id s) {
    r.granted = true;
    r.slot = s;
    r.answer({});
    busy.push_back(s);
  }

  void collect() {
    for (const pool_action& a : core.take_actions()) {
      switch (a.what) {
        case pool_action::kind::open:
          opening.push_back(a.slot);
          break;
        case pool_action::kind::close:
          ++closes;
          std::erase(opening, a.slot);
          break;
        case pool_action::kind::check:
          core.on_check_done(now, a.slot, true);
          break;
        case pool_action::kind::grant:
          if (auto r = waiting.take(a.waiter)) {
            grant(*r, a.slot);
          } else {
            ADD_FAILURE() << "grant for waiter " << a.waiter << " that is not in the map";
          }
          break;
        case pool_action::kind::fail:
          if (auto r = waiting.take(a.waiter)) {
            r->answer(a.ec);
          } else {
            ADD_FAILURE() << "failure for waiter " << a.waiter << " that is not in the map";
          }
          break;
      }
    }
  }
};

TEST(waiter_map, a_granted_waiter_is_answered_once_and_a_late_cancel_finds_nothing) {
  glue g(1);
  auto first = g.submit();
  g.open_all();
  ASSERT_TRUE(first->granted);
  auto second = g.submit();
  EXPECT_EQ(second->answers, 0);
  EXPECT_NE(second->waiter, 0u);
  EXPECT_EQ(g.waiting.size(), 1u);

  g.release(first->slot);
  EXPECT_TRUE(second->granted);
  EXPECT_EQ(second->waiter, 0u) << "a granted request no longer names a waiter";
  EXPECT_EQ(g.waiting.size(), 0u);

  g.cancel(*second);  // the caller's cancellation arrives after the grant
  EXPECT_EQ(second->answers, 1);
  EXPECT_FALSE(second->ec) << second->ec.message();
}

TEST(waiter_map, a_timed_out_waiter_is_answered_once_and_a_late_cancel_finds_nothing) {
  glue g(1);
  auto holder = g.submit();
  g.open_all();
  auto waiter = g.submit(100ms);
  g.tick(100ms);
  EXPECT_EQ(waiter->answers, 1);
  EXPECT_EQ(waiter->ec, errc::pool_timeout);
  EXPECT_EQ(g.waiting.size(), 0u);

  g.cancel(*waiter);
  g.release(holder->slot);  // the freed capacity goes to no one
  EXPECT_EQ(waiter->answers, 1);
  EXPECT_FALSE(waiter->granted);
}

TEST(waiter_map, a_cancelled_waiter_is_answered_once_and_never_granted) {
  glue g(1);
  auto holder = g.submit();
  g.open_all();
  auto waiter = g.submit();
  auto behind = g.submit();
  g.cancel(*waiter);
  EXPECT_EQ(waiter->answers, 1);
  EXPECT_EQ(waiter->ec, errc::cancelled);
  EXPECT_EQ(waiter->waiter, 0u);

  g.cancel(*waiter);  // cancelled twice (terminal, then total): still once
  g.release(holder->slot);
  g.tick(2000ms);
  EXPECT_EQ(waiter->answers, 1);
  EXPECT_FALSE(waiter->granted);
  EXPECT_TRUE(behind->granted) << "the capacity goes to the next waiter";
  EXPECT_EQ(behind->answers, 1);
}

TEST(waiter_map, close_answers_every_waiter_once_with_closed) {
  glue g(1);
  auto holder = g.submit();
  g.open_all();
  std::vector<std::shared_ptr<fake_request>> queued;
  for (int i = 0; i < 5; ++i) queued.push_back(g.submit());
  g.close();
  for (const auto& r : queued) {
    EXPECT_EQ(r->answers, 1);
    EXPECT_EQ(r->ec, errc::closed);
    g.cancel(*r);
    EXPECT_EQ(r->answers, 1);
  }
  EXPECT_EQ(g.waiting.size(), 0u);
}

TEST(waiter_map, a_waiter_id_of_another_map_takes_nothing) {
  // client_impl keeps queries and acquires in two maps fed by one pool_core:
  // a grant is offered to the query map first, then to the acquire map.
  glue g(1);
  waiter_map<fake_request> other;
  auto holder = g.submit();
  g.open_all();
  auto waiter = g.submit();
  EXPECT_EQ(other.take(waiter->waiter), nullptr);
  EXPECT_FALSE(other.withdraw(g.core, *std::make_shared<fake_request>()));
  EXPECT_EQ(g.waiting.size(), 1u);
  g.release(holder->slot);
  EXPECT_TRUE(waiter->granted);
}

// Seeded random traffic (submit, cancel, release, time, a failing or
// succeeding connect) ended by close: every request is answered exactly
// once, and no request is left in the map.
TEST(waiter_map, random_traffic_answers_every_request_exactly_once) {
  for (std::uint32_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    glue g(3);
    std::vector<std::shared_ptr<fake_request>> all;
    auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
    for (int step = 0; step < 300; ++step) {
      switch (pick(6)) {
        case 0:
        case 1:
          all.push_back(g.submit(std::chrono::milliseconds(10 + pick(200))));
          break;
        case 2:
          if (!all.empty()) g.cancel(*all[pick(all.size())]);
          break;
        case 3:
          if (!g.busy.empty()) g.release(g.busy[pick(g.busy.size())]);
          break;
        case 4:
          g.tick(std::chrono::milliseconds(pick(80)));
          break;
        case 5:
          if (!g.opening.empty() && pick(4) == 0) {
            const slot_id s = g.opening.front();
            g.opening.erase(g.opening.begin());
            g.core.on_open_failed(g.now, s, make_error_code(errc::server_unreachable),
                                  pgpipe::detail::connect_failure_kind::transient);
            g.tick(0ms);
          } else {
            g.open_all();
          }
          break;
      }
    }
    g.close();
    g.open_all();  // connects still in flight answer after close
    for (const auto& r : all) EXPECT_EQ(r->answers, 1) << "granted " << r->granted << ", last " << r->ec.message();
    EXPECT_EQ(g.waiting.size(), 0u);
  }
}

}  // namespace
