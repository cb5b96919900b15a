// listener_core against a reference model (listener_core_model.hpp), step by
// step, under random events: callers subscribing and unsubscribing, connects
// that succeed or fail, losses, notifications from other sessions, reads
// paced by backpressure, receives. After every step the core's phase,
// connect time, command in flight, answers to callers, buffer and channels
// must be the model's. A fake server executes what the core sends, so on
// top of the comparison the test checks what a caller relies on:
//  - a gap is queued only while every channel the callers were told is
//    listened (and still want) is listened on the server;
//  - notifications arrive in the order they were sent, none twice;
//  - none sent on such a channel is lost without a gap after it;
//  - once the connection settles, the server listens to exactly the
//    channels the callers want;
//  - a caller's command that waited acquire_timeout with no connection is
//    answered with the last connect error (the model's expiry).
//
// A caller's LISTEN the server refuses comes at any moment: while
// disconnected, queued behind others, in flight at a loss. It must be
// answered with the server's error and never block the re-LISTEN of the
// others (the settle check: the listener ends up listening to exactly what
// the callers want).
//
// Reproduce or extend from the environment:
//   PGPIPE_LISTEN_MODEL_SEED=n    run only seed n (the failure message names it)
//   PGPIPE_LISTEN_MODEL_SEEDS=k   run seeds 1..k (default 32)
//   PGPIPE_LISTEN_MODEL_STEPS=m   steps per seed (default 3000)
#include "listener_core_model.hpp"

#include "core/listen/listener_core.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using pgpipe::notification;
using pgpipe::detail::after_command;
using pgpipe::detail::command_id;
using pgpipe::detail::listen_clock;
using pgpipe::detail::listen_command;
using pgpipe::detail::listener_core;
using pgpipe::detail::listener_phase;
using pgpipe::test::listen_model::expected_ack;
using pgpipe::test::listen_model::model;

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

const std::vector<std::string> good_channels = {"a", "b", "c", "d"};
const std::string refused_channel = "bad";

// What the fake server's connection carries to the core, in order.
struct wire_item {
  bool answer = false;  // else a notification
  bool accepted = true;
  notification n;
};

struct sent_notification {
  std::uint64_t seq;
  std::string channel;
  std::uint64_t step;
  bool must_arrive_or_gap;  // promised() when sent
};

class comparison {
 public:
  explicit comparison(std::uint64_t seed)
      : seed_(seed), rng_(seed), settings_(make_settings(seed)), core_(settings_, now_),
        model_(settings_.backoff_initial, settings_.backoff_max, settings_.max_buffered, settings_.acquire_timeout,
               now_) {}

  void run(std::uint64_t steps) {
    pump();
    for (step_ = 0; step_ < steps && !::testing::Test::HasFailure(); ++step_) {
      const unsigned ev = rng_() % 100;
      if (ev < 4) {
        subscribe(good_channels[rng_() % good_channels.size()]);
      } else if (ev < 6) {
        unsubscribe(good_channels[rng_() % good_channels.size()]);
      } else if (ev < 7) {
        refused_subscribe();
      } else if (ev < 17) {
        advance();
      } else if (ev < 27) {
        connect_outcome(rng_() % 10 < 7);
      } else if (ev < 57) {
        read_one();
      } else if (ev < 80) {
        notify(good_channels[rng_() % good_channels.size()]);
      } else if (ev < 82) {
        lose();
      } else {
        receive();
      }
      pump();
      compare("step");
    }
    if (::testing::Test::HasFailure()) return;
    if (seed_ % 2 == 1) {
      // Closed with work pending: every caller still waiting hears errc::closed.
      close_and_compare();
      return;
    }
    settle();
    if (::testing::Test::HasFailure()) return;
    check_delivery();
    EXPECT_EQ(server_channels_, core_.channels()) << where("settled");
    close_and_compare();
  }

  std::size_t gaps() const { return gaps_; }
  std::size_t delivered() const { return delivered_.size(); }
  std::size_t expired() const { return expired_; }

 private:
  static std::error_code connect_error() { return pgpipe::make_error_code(pgpipe::errc::server_unreachable); }

  static listener_core::settings make_settings(std::uint64_t seed) {
    std::mt19937_64 r(seed * 7919);
    listener_core::settings s;
    s.backoff_initial = std::chrono::milliseconds(1 + r() % 100);
    s.backoff_max = s.backoff_initial + std::chrono::milliseconds(r() % 1000);
    s.max_buffered = 1 + r() % 6;
    s.acquire_timeout = std::chrono::milliseconds(100 + r() % 3000);
    return s;
  }

  std::string where(const std::string& what) const {
    std::ostringstream s;
    s << what << " at seed " << seed_ << ", step " << step_
      << " (reproduce: PGPIPE_LISTEN_MODEL_SEED=" << seed_ << " build/tests/unit_listener_core_model_test)";
    return s.str();
  }

  // ---- events ---------------------------------------------------------------

  void subscribe(const std::string& channel) {
    const command_id got = core_.subscribe(channel, now_);
    EXPECT_EQ(got, model_.subscribe(channel, now_)) << where("subscribe id");
    asked_[got] = {listen_command::kind::listen, channel};
  }

  void unsubscribe(const std::string& channel) {
    const command_id got = core_.unsubscribe(channel, now_);
    EXPECT_EQ(got, model_.unsubscribe(channel, now_)) << where("unsubscribe id");
    asked_[got] = {listen_command::kind::unlisten, channel};
  }

  void refused_subscribe() { subscribe(refused_channel); }

  void advance() { now_ += std::chrono::milliseconds(rng_() % 300); }

  void connect_outcome(bool ok) {
    if (core_.phase() != listener_phase::connecting) return;
    if (ok) {
      server_up_ = true;
      server_channels_.clear();
      wire_.clear();
      reconnects_.emplace_back(step_, core_.channels().empty());
      core_.on_connected();
      model_.connected();
    } else {
      core_.on_connect_failed(now_, connect_error(), {});
      model_.connect_failed(now_, connect_error());
    }
  }

  void read_one() {
    if (!server_up_ || wire_.empty()) return;
    EXPECT_EQ(core_.wants_read(), model_.reads()) << where("wants_read");
    if (!core_.wants_read()) return;
    wire_item item = wire_.front();
    wire_.pop_front();
    if (!item.answer) {
      core_.on_notification(item.n);
      model_.notified(item.n);
      return;
    }
    const auto ec = item.accepted ? std::error_code{} : pgpipe::make_sqlstate("42601");
    bool gap_queued = false;
    const bool must_reconnect = model_.answered(now_, item.accepted, gap_queued);
    const after_command next = core_.on_command_done(now_, ec, {});
    EXPECT_EQ(next == after_command::reconnect, must_reconnect) << where("answer");
    if (gap_queued) {
      ++gaps_;
      gap_steps_.push_back(step_);
      // The gap says "listened again": every channel a caller was told is
      // listened, and still wants, must be.
      for (const auto& c : told_listened_) {
        if (!promised(c)) continue;
        EXPECT_EQ(server_channels_.count(c), 1u) << where("gap while \"" + c + "\" is not listened");
      }
    }
    if (next == after_command::reconnect) drop_connection();
  }

  void notify(const std::string& channel) {
    const std::uint64_t seq = ++seq_;
    sent_.push_back({seq, channel, step_, promised(channel)});
    if (server_up_ && server_channels_.count(channel) != 0) {
      wire_item item;
      item.n.channel = channel;
      item.n.payload = std::to_string(seq);
      wire_.push_back(item);
    }
  }

  void lose() {
    if (core_.phase() != listener_phase::ready) return;
    // What libpq parsed before the loss is still handed over (the drivers
    // collect notifications first): a random prefix of the notifications.
    const std::size_t keep = rng_() % (wire_.size() + 1);
    for (std::size_t i = 0; i < keep && !wire_.empty() && !wire_.front().answer; ++i) {
      core_.on_notification(wire_.front().n);
      model_.notified(wire_.front().n);
      wire_.pop_front();
    }
    core_.on_lost(now_);
    model_.lost(now_);
    drop_connection();
  }

  void receive() {
    const bool has = core_.has_notification();
    const auto expected = model_.pop();
    ASSERT_EQ(has, expected.has_value()) << where("has_notification");
    if (!has) return;
    const notification got = core_.pop();
    EXPECT_EQ(got.gap, expected->gap) << where("pop gap");
    EXPECT_EQ(got.channel, expected->channel) << where("pop channel");
    EXPECT_EQ(got.payload, expected->payload) << where("pop payload");
    if (got.gap) return;
    const std::uint64_t seq = std::stoull(got.payload);
    EXPECT_GT(seq, last_seq_) << where("notifications out of order or twice");
    last_seq_ = seq;
    delivered_.insert(seq);
  }

  void drop_connection() {
    server_up_ = false;
    server_channels_.clear();
    wire_.clear();
  }

  // ---- what a driver does after every event ---------------------------------

  void pump() {
    EXPECT_EQ(core_.next_deadline(), model_.next_deadline()) << where("next_deadline");
    core_.expire(now_);
    model_.expire(now_);
    if (core_.phase() == listener_phase::waiting && now_ >= core_.connect_at()) {
      core_.on_connect_started();
      model_.connect_started();
    }
    const listen_command* sent = core_.next_command();
    const auto expected = model_.next();
    ASSERT_EQ(sent != nullptr, expected.has_value()) << where("next_command");
    if (sent == nullptr) return;
    EXPECT_EQ(sent->what, expected->what) << where("command kind");
    EXPECT_EQ(sent->channels, expected->channels) << where("command channels");
    EXPECT_EQ(sent->id, expected->id) << where("command id");
    // The fake server runs it at once; its answer follows what it sent before.
    bool accepted = true;
    for (const auto& c : sent->channels)
      if (c == refused_channel && sent->what != listen_command::kind::unlisten) accepted = false;
    if (accepted) {
      for (const auto& c : sent->channels) {
        if (sent->what == listen_command::kind::unlisten) {
          server_channels_.erase(c);
        } else {
          server_channels_.insert(c);
        }
      }
    }
    wire_item answer;
    answer.answer = true;
    answer.accepted = accepted;
    wire_.push_back(answer);
  }

  void compare(const std::string& what) {
    EXPECT_EQ(core_.phase(), model_.phase()) << where(what + ": phase");
    if (core_.phase() == listener_phase::waiting) {
      EXPECT_EQ(core_.connect_at(), model_.connect_at()) << where(what + ": connect_at");
    }
    EXPECT_EQ(core_.in_flight(), model_.in_flight()) << where(what + ": in flight");
    EXPECT_EQ(core_.wants_read(), model_.reads()) << where(what + ": wants_read");
    EXPECT_EQ(core_.full(), model_.buffered() >= settings_.max_buffered) << where(what + ": full");
    EXPECT_EQ(core_.has_notification(), model_.buffered() != 0) << where(what + ": buffered");
    EXPECT_EQ(core_.channels(), model_.channels()) << where(what + ": channels");
    EXPECT_EQ(core_.gap_pending(), model_.gap_owed()) << where(what + ": gap pending");
    const auto got = core_.take_acks();
    const auto expected = model_.take_acks();
    ASSERT_EQ(got.size(), expected.size()) << where(what + ": acks");
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].id, expected[i].id) << where(what + ": ack order");
      switch (expected[i].what) {
        case expected_ack::verdict::accepted: EXPECT_FALSE(got[i].ec) << where(what + ": ack"); break;
        case expected_ack::verdict::refused:
          EXPECT_EQ(got[i].ec, pgpipe::make_sqlstate("42601")) << where(what + ": ack");
          break;
        case expected_ack::verdict::closed: EXPECT_EQ(got[i].ec, pgpipe::errc::closed) << where(what + ": ack"); break;
        case expected_ack::verdict::expired:
          EXPECT_EQ(got[i].ec, expected[i].ec) << where(what + ": expired ack");
          ++expired_;
          break;
      }
      told(got[i].id, !got[i].ec);
    }
  }

  // The callers were told `channel` is listened, and want nothing else of
  // it yet (no command for it waits for its answer).
  bool promised(const std::string& channel) const {
    if (told_listened_.count(channel) == 0 || core_.channels().count(channel) == 0) return false;
    return std::none_of(asked_.begin(), asked_.end(), [&](const auto& a) { return a.second.second == channel; });
  }

  // A caller learnt the answer to `id`: what it may now rely on.
  void told(command_id id, bool accepted) {
    auto it = asked_.find(id);
    if (it == asked_.end()) return;
    const auto [what, channel] = it->second;
    asked_.erase(it);
    if (what == listen_command::kind::listen && accepted) {
      told_listened_.insert(channel);
    } else {
      told_listened_.erase(channel);
    }
  }

  // ---- the end --------------------------------------------------------------

  // Connects and answers until nothing is pending, then takes every notification.
  void settle() {
    for (int round = 0; round < 1000; ++round) {
      if (core_.phase() == listener_phase::waiting) now_ = std::max(now_, core_.connect_at());
      pump();
      connect_outcome(true);
      pump();
      while (!wire_.empty() && core_.wants_read() && !::testing::Test::HasFailure()) {
        read_one();
        pump();
      }
      while (core_.has_notification() && !::testing::Test::HasFailure()) receive();
      compare("settle");
      if (::testing::Test::HasFailure()) return;
      if (core_.phase() == listener_phase::ready && !core_.in_flight() && model_.idle() && wire_.empty()) return;
    }
    ADD_FAILURE() << where("the listener never settled");
  }

  void check_delivery() {
    for (const auto& n : sent_) {
      if (!n.must_arrive_or_gap || delivered_.count(n.seq) != 0) continue;
      const bool gap_after = std::any_of(gap_steps_.begin(), gap_steps_.end(), [&](auto s) { return s >= n.step; });
      // With nothing subscribed at a reconnect there is no gap: a caller who
      // gave up every channel cannot miss anything on them.
      auto next = std::find_if(reconnects_.begin(), reconnects_.end(), [&](const auto& r) { return r.first >= n.step; });
      const bool given_up = next != reconnects_.end() && next->second;
      EXPECT_TRUE(gap_after || given_up)
          << where("notification " + std::to_string(n.seq) + " on \"" + n.channel + "\" (step " +
                   std::to_string(n.step) + ") lost with no gap after it");
    }
  }

  void close_and_compare() {
    core_.close();
    model_.close();
    compare("close");
    subscribe("a");  // refused at once
    compare("after close");
    EXPECT_FALSE(core_.has_notification()) << where("close keeps nothing buffered");
  }

  const std::uint64_t seed_;
  std::mt19937_64 rng_;
  listen_clock::time_point now_{std::chrono::hours(1)};
  const listener_core::settings settings_;
  listener_core core_;
  model model_;
  std::uint64_t step_ = 0;

  // The fake server and its connection.
  bool server_up_ = false;
  std::set<std::string> server_channels_;
  std::deque<wire_item> wire_;

  // What callers asked and were told.
  std::map<command_id, std::pair<listen_command::kind, std::string>> asked_;
  std::set<std::string> told_listened_;

  // Notifications sent and delivered.
  std::uint64_t seq_ = 0;
  std::uint64_t last_seq_ = 0;
  std::vector<sent_notification> sent_;
  std::set<std::uint64_t> delivered_;
  std::vector<std::uint64_t> gap_steps_;
  std::vector<std::pair<std::uint64_t, bool>> reconnects_;  // step, and whether no channel was to be listened again
  std::size_t gaps_ = 0;
  std::size_t expired_ = 0;
};

std::vector<std::uint64_t> seeds() {
  if (const auto one = env_or("PGPIPE_LISTEN_MODEL_SEED", 0); one != 0) return {one};
  std::vector<std::uint64_t> out;
  for (std::uint64_t s = 1; s <= env_or("PGPIPE_LISTEN_MODEL_SEEDS", 32); ++s) out.push_back(s);
  return out;
}

TEST(listener_core_model, matches_the_model_step_by_step_under_random_events) {
  const auto steps = env_or("PGPIPE_LISTEN_MODEL_STEPS", 3000);
  std::size_t gaps = 0;
  std::size_t delivered = 0;
  std::size_t expired = 0;
  for (const auto seed : seeds()) {
    SCOPED_TRACE("PGPIPE_LISTEN_MODEL_SEED=" + std::to_string(seed));
    comparison c(seed);
    c.run(steps);
    if (::testing::Test::HasFailure()) return;
    gaps += c.gaps();
    delivered += c.delivered();
    expired += c.expired();
  }
  // The run must have exercised what it checks.
  EXPECT_GT(gaps, 0u);
  EXPECT_GT(delivered, 0u);
  EXPECT_GT(expired, 0u);
  std::printf(
      "listener model: %zu gaps, %zu notifications delivered, %zu commands expired over %zu seed(s) x %llu steps\n",
      gaps, delivered, expired, seeds().size(), static_cast<unsigned long long>(steps));
}

}  // namespace
