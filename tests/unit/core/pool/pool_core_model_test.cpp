// pool_core against a reference model (pool_core_model.hpp), step by step,
// under random load: every request's answer, every grant (waiter and slot),
// every failure (waiter and error code) must be the model's, in the same
// order. On top of the comparison:
//  - deadline accuracy: the driver ticks only when next_timer() says, as a
//    real driver does, and every waiter must expire exactly at its deadline
//    on the fake clock (never later, never earlier);
//  - no starvation: with every grant held at most `max_hold`, an exclusive
//    waiter that is the oldest of all waiters is granted within 2 * max_hold
//    (its reservation is made at the next event, and drains within one hold).
//
// Reproduce or extend from the environment:
//   PGPIPE_POOL_MODEL_SEED=n    run only seed n (the failure message names it)
//   PGPIPE_POOL_MODEL_SEEDS=k   run seeds 1..k (default 16)
//   PGPIPE_POOL_MODEL_STEPS=m   steps per seed (default 4000)
#include "pool_core_harness.hpp"
#include "pool_core_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

// The names every pool_core test uses (pool_core, pool_action, slot_id, ...).
using namespace pgpipe::test::pool_harness;
using pgpipe::test::pool_model::completion;
using pgpipe::test::pool_model::model;
using pgpipe::detail::connect_failure_kind;

constexpr auto max_hold = 400ms;

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

std::string describe(const std::vector<completion>& cs) {
  std::string out = "[";
  for (const auto& c : cs) out += (out.size() > 1 ? ", " : "") + to_string(c);
  return out + "]";
}

std::string describe(const request_outcome& r) {
  switch (r.what) {
    case request_outcome::kind::granted: return "granted on s" + std::to_string(r.slot);
    case request_outcome::kind::queued: return "queued as w" + std::to_string(r.waiter);
    case request_outcome::kind::rejected: return "rejected (" + r.ec.message() + ")";
  }
  return "?";
}

// One seed's run: drives pool_core like a driver (answering its opens,
// releasing grants when their hold ends, ticking at next_timer()) and the
// model with the same events, comparing after each.
class comparison {
 public:
  comparison(std::uint64_t seed, bool faults) : seed_(seed), rng_(seed), faults_(faults), params_(make_params(seed, faults)),
        capacity_(1 + seed % 3), pool_(params_, capacity_), model_(capacity_, params_.max_queued) {}

  void run(std::uint64_t steps) {
    pool_.start(now_);
    apply();
    if (!faults_) {  // steady: max_size slots, all connected, none ever lost
      while (!pending_opens_.empty()) answer_open(true);
    }
    for (step_ = 0; step_ < steps && !::testing::Test::HasFatalFailure(); ++step_) {
      const unsigned ev = rng_() % 100;
      if (ev < 40) {
        request();
      } else if (ev < 50) {
        cancel();
      } else if (faults_ && ev < 62 && !pending_opens_.empty()) {
        answer_open(rng_() % 3 != 0);
      } else if (faults_ && ev < 65 && !connected_.empty()) {
        broken();
      } else {
        advance(std::chrono::milliseconds(rng_() % 250));
      }
    }
    if (::testing::Test::HasFatalFailure()) return;
    // Wind down: close fails every waiter with errc::closed, in order.
    pool_.close(now_);
    model_.close();
    apply();
    compare("close");
    if (!faults_) {
      for (auto d : model_.exclusive_waits_at_head())
        EXPECT_LT(d, 2 * max_hold) << "an exclusive waiter at the head expired after "
                                   << std::chrono::duration_cast<std::chrono::milliseconds>(d).count()
                                   << " ms: starved";
    }
  }

  std::size_t grants() const { return grants_; }
  std::size_t timeouts() const { return timeouts_; }
  std::size_t exclusive_grants() const { return exclusive_grants_; }

 private:
  struct hold {
    slot_id slot;
    request_kind kind;
    time_point until;
  };

  static pool_params make_params(std::uint64_t seed, bool faults) {
    pool_params p;
    p.max_size = 1 + seed % 4;
    p.min_size = faults ? seed % (p.max_size + 1) : p.max_size;
    p.max_queued = 4 + seed % 12;
    p.acquire_timeout = 1000ms;
    // Off: the model leaves connection rotation and checks to pool_core's own tests.
    p.max_lifetime = 0ms;
    p.idle_timeout = 0ms;
    p.health_check_interval = 0ms;
    p.connect_backoff_initial = 20ms;
    p.connect_backoff_max = 160ms;
    return p;
  }

  std::string where() const {
    std::ostringstream s;
    s << "seed " << seed_ << ", step " << step_ << ", t=" << (now_ - start_) / 1ms
      << " ms (reproduce: PGPIPE_POOL_MODEL_SEED=" << seed_ << " build/tests/unit_pool_core_model_test)";
    return s.str();
  }
  // Carries out pool_core's queued actions as a driver would and records
  // grants and fails for the comparison.
  void apply() {
    for (const pool_action& a : pool_.take_actions()) {
      switch (a.what) {
        case pool_action::kind::open: pending_opens_.push_back(a.slot); break;
        case pool_action::kind::close:
          std::erase(connected_, a.slot);
          std::erase(pending_opens_, a.slot);
          break;
        case pool_action::kind::check: ADD_FAILURE() << "health check with health_check_interval 0; " << where(); break;
        case pool_action::kind::grant: actual_.push_back({true, a.waiter, a.slot, {}}); break;
        case pool_action::kind::fail: actual_.push_back({false, a.waiter, 0, a.ec}); break;
      }
    }
  }

  // The actions of the last event must be the model's, one for one.
  void compare(const char* event) {
    const auto expected = model_.take();
    ASSERT_EQ(describe(actual_), describe(expected)) << "after " << event << "; " << where();
    for (const auto& c : actual_) {
      if (c.granted) {
        ++grants_;
        const request_kind k = kind_of_.at(c.waiter);
        exclusive_grants_ += k == request_kind::exclusive;
        start_hold(c.slot, k);
      } else {
        timeouts_ += c.ec == errc::pool_timeout;
      }
    }
    actual_.clear();
    model_.note_head(now_);
    // Deadline accuracy: pool_core must wake the driver by the earliest deadline.
    if (auto d = model_.next_deadline()) {
      const auto t = pool_.next_timer();
      ASSERT_TRUE(t.has_value()) << "a waiter is queued but next_timer() is empty; " << where();
      ASSERT_LE(*t, *d) << "next_timer() is after a waiter's deadline; " << where();
    }
  }

  void start_hold(slot_id slot, request_kind k) {
    const auto d = std::chrono::milliseconds(rng_() % (max_hold.count() + 1));
    holds_.push_back({slot, k, now_ + d});
  }

  void request() {
    const auto k = rng_() % 3 == 0 ? request_kind::exclusive : request_kind::shared;
    // Some requests with deadline == now ("try"), the rest up to 1.5 s.
    const auto timeout = rng_() % 10 == 0 ? 0ms : std::chrono::milliseconds(rng_() % 1500);
    const auto real = pool_.request(now_, k, now_ + timeout);
    const auto expected = model_.request(now_, k, now_ + timeout);
    apply();
    ASSERT_EQ(describe(real), describe(expected)) << "request; " << where();
    ASSERT_EQ(real.ec, expected.ec) << where();
    if (real.what == request_outcome::kind::queued) kind_of_[real.waiter] = k;
    if (real.what == request_outcome::kind::granted) {
      ++grants_;
      exclusive_grants_ += k == request_kind::exclusive;
      start_hold(real.slot, k);
    }
    compare("request");
  }

  void cancel() {
    // Mostly a queued waiter; sometimes one that completed already.
    const auto q = model_.queued();
    waiter_id w = 0;
    if (!q.empty() && rng_() % 4 != 0) w = q[rng_() % q.size()];
    else if (!kind_of_.empty()) w = std::next(kind_of_.begin(), static_cast<long>(rng_() % kind_of_.size()))->first;
    if (w == 0) return;
    const bool real = pool_.cancel(w);
    ASSERT_EQ(real, model_.cancel(w)) << "cancel of w" << w << "; " << where();
    apply();
    compare("cancel");
  }

  void answer_open(bool ok) {
    const slot_id s = pending_opens_[rng_() % pending_opens_.size()];
    std::erase(pending_opens_, s);
    if (ok) {
      connected_.push_back(s);
      pool_.on_open_succeeded(now_, s);
      model_.open_succeeded(now_, s);
    } else {
      const bool permanent = rng_() % 2 == 0;
      const auto ec = permanent ? pgpipe::make_sqlstate("28P01") : make_error_code(errc::server_unreachable);
      pool_.on_open_failed(now_, s, ec,
                           permanent ? connect_failure_kind::permanent : connect_failure_kind::transient);
      model_.open_failed(now_, ec, permanent);
    }
    apply();
    compare(ok ? "open succeeded" : "open failed");
  }

  void broken() {
    const slot_id s = connected_[rng_() % connected_.size()];
    std::erase(connected_, s);
    pool_.on_broken(now_, s);
    model_.broken(now_, s);
    apply();
    compare("broken");
  }

  // Moves the clock to `now + d` the way a driver does: wake at each hold's
  // end (release) and at next_timer() (tick), nowhere else.
  void advance(std::chrono::milliseconds d) {
    const time_point target = now_ + d;
    for (;;) {
      std::optional<time_point> next = pool_.next_timer();
      for (const auto& h : holds_)
        if (!next || h.until < *next) next = h.until;
      if (!next || *next > target) break;
      ASSERT_GE(*next, now_) << "a timer in the past; " << where();
      now_ = *next;
      step_at(now_);
      if (::testing::Test::HasFatalFailure()) return;
    }
    now_ = target;
    step_at(now_);
  }

  // At one instant: the releases due (in grant order), then the tick.
  void step_at(time_point t) {
    for (std::size_t i = 0; i < holds_.size();) {
      if (holds_[i].until > t) {
        ++i;
        continue;
      }
      const hold h = holds_[i];
      holds_.erase(holds_.begin() + static_cast<long>(i));
      pool_.release(t, h.slot, h.kind);
      model_.release(t, h.slot, h.kind);
      apply();
      compare("release");
      if (::testing::Test::HasFatalFailure()) return;
    }
    pool_.on_tick(t);
    const auto late = model_.tick(t);
    apply();
    ASSERT_TRUE(late.empty()) << late.size() << " waiter(s) expired after their deadline, first w" << late.front()
                              << "; " << where();
    compare("tick");
  }

  std::uint64_t seed_;
  std::mt19937_64 rng_;
  bool faults_;
  pool_params params_;
  std::size_t capacity_;
  pool_core pool_;
  model model_;
  time_point start_{std::chrono::seconds(1000)};
  time_point now_ = start_;
  std::uint64_t step_ = 0;
  std::vector<slot_id> pending_opens_;
  std::vector<slot_id> connected_;
  std::vector<hold> holds_;
  std::vector<completion> actual_;
  std::map<waiter_id, request_kind> kind_of_;
  std::size_t grants_ = 0;
  std::size_t timeouts_ = 0;
  std::size_t exclusive_grants_ = 0;
};

std::vector<std::uint64_t> seeds() {
  if (const auto one = env_or("PGPIPE_POOL_MODEL_SEED", 0)) return {one};
  std::vector<std::uint64_t> out;
  for (std::uint64_t s = 1; s <= env_or("PGPIPE_POOL_MODEL_SEEDS", 16); ++s) out.push_back(s);
  return out;
}

void run_all(bool faults) {
  const auto steps = env_or("PGPIPE_POOL_MODEL_STEPS", 4000);
  std::size_t grants = 0, timeouts = 0, exclusive = 0;
  for (const auto seed : seeds()) {
    SCOPED_TRACE("PGPIPE_POOL_MODEL_SEED=" + std::to_string(seed));
    comparison c(seed, faults);
    c.run(steps);
    if (::testing::Test::HasFatalFailure()) return;
    grants += c.grants();
    timeouts += c.timeouts();
    exclusive += c.exclusive_grants();
  }
  // The comparison only means something if the load reached every path.
  EXPECT_GT(grants, 0u);
  EXPECT_GT(timeouts, 0u) << "no waiter ever timed out: the load is too light to test deadlines";
  EXPECT_GT(exclusive, 0u);
  std::printf("pool model: %zu grants (%zu exclusive), %zu timeouts over %zu seed(s) x %llu steps\n", grants,
              exclusive, timeouts, seeds().size(), static_cast<unsigned long long>(steps));
}

}  // namespace

// Connected slots only, none lost: grants, FIFO, timeouts, exclusive
// reservations, and the starvation bound.
TEST(pool_core_model, steady_pool_matches_the_model_step_by_step) { run_all(false); }

// Connects failing (transient and permanent), connections breaking: error
// codes (the connect error versus pool_timeout, permanent failures at once).
TEST(pool_core_model, pool_with_failing_connects_matches_the_model_step_by_step) { run_all(true); }
