// pgpipe::blocking_listener against a real server: the scenarios both
// listeners share (tests/support/listener_scenarios.hpp: order over 10,000
// notifications on 3 channels, a terminated backend giving a gap then
// delivery, the largest payload and a Unicode channel, a refused LISTEN),
// then what is the blocking listener's own: close() waking a blocked
// receive(), receive() returning on time while the server is unreachable,
// and parameter validation.
#include <pgpipe/blocking_listener.hpp>
#include <pgpipe/error.hpp>

#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"
#include "support/listener_scenarios.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using pgpipe::test::app_conninfo;
using pgpipe::test::params_for;

namespace {

template <class F>
std::error_code code_of(F&& f) {
  try {
    f();
  } catch (const pgpipe::error& e) {
    return e.code();
  }
  return {};
}

// The scenarios' adapter: a subscribe error fails the test; receive waits 60 s at most.
struct blocking_listener_adapter {
  explicit blocking_listener_adapter(const std::string& app) : l(params_for(app_conninfo(app), 1)) {}
  explicit blocking_listener_adapter(pgpipe::pool_params p) : l(std::move(p)) {}

  void subscribe(const std::string& channel) {
    try {
      l.subscribe(channel);
    } catch (const pgpipe::error& e) {
      FAIL() << "subscribe " << channel << ": " << e.what();
    }
  }
  std::error_code try_subscribe(const std::string& channel) {
    return code_of([&] { l.subscribe(channel); });
  }
  std::future<std::error_code> subscribe_later(const std::string& channel) {
    return std::async(std::launch::async, [this, channel] { return try_subscribe(channel); });
  }
  void unsubscribe(const std::string& channel) {
    try {
      l.unsubscribe(channel);
    } catch (const pgpipe::error& e) {
      FAIL() << "unsubscribe " << channel << ": " << e.what();
    }
  }
  pgpipe::notification receive() {
    auto n = l.receive(60s);
    if (!n) throw std::runtime_error("no notification within 60 s");
    return *n;
  }

  pgpipe::blocking_listener l;
};

// Collects what a listener logs, from its own thread.
struct log_sink {
  pgpipe::logger_fn fn() {
    return [this](pgpipe::log_level, std::string_view line) {
      std::lock_guard lock(mu);
      lines.emplace_back(line);
    };
  }
  std::string all() {
    std::lock_guard lock(mu);
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  }
  std::mutex mu;
  std::vector<std::string> lines;
};

}  // namespace

TEST(blocking_listener, ten_thousand_notifications_over_three_channels_arrive_in_order) {
  blocking_listener_adapter a("blisten_order");
  pgpipe::test::ten_thousand_in_order(a);
}

TEST(blocking_listener, a_terminated_backend_gives_a_gap_then_delivery_resumes) {
  blocking_listener_adapter a("blisten_gap");
  pgpipe::test::gap_then_resume(a, "blisten_gap");
}

TEST(blocking_listener, the_largest_payload_and_a_unicode_channel_name_work) {
  blocking_listener_adapter a("blisten_big");
  pgpipe::test::largest_payload_and_unicode_channel(a);
}

TEST(blocking_listener, close_from_another_thread_wakes_a_blocked_receive) {
  blocking_listener_adapter a("blisten_close");
  a.subscribe("lt_quiet");
  EXPECT_FALSE(a.l.receive(0ms).has_value());  // nothing buffered: returns at once
  std::promise<void> waiting;
  auto receiving = std::async(std::launch::async, [&] {
    waiting.set_value();
    return code_of([&] { a.l.receive(90s); });
  });
  waiting.get_future().wait();
  a.l.close();
  // Woken by close(), not by its 90 s timeout (which only turns a regression
  // into a failure rather than a hang).
  ASSERT_EQ(receiving.wait_for(60s), std::future_status::ready);
  EXPECT_EQ(receiving.get(), pgpipe::errc::closed);
  EXPECT_EQ(code_of([&] { a.l.receive(0ms); }), pgpipe::errc::closed);
  EXPECT_EQ(code_of([&] { a.l.subscribe("x"); }), pgpipe::errc::closed);
  a.l.close();  // idempotent
}

TEST(blocking_listener, receive_returns_on_time_while_the_server_is_unreachable) {
  pgpipe::pool_params p = pgpipe::test::fault_params(
      "host=127.0.0.1 port=" + std::to_string(pgpipe::test::refused_port()) + " user=u password=s3cret-listen", 1);
  p.query_timeout = 300ms;
  log_sink logs;
  pgpipe::blocking_listener l(p, logs.fn());
  // Bounds, not speed: each call must come back long before a hang would.
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(l.receive(200ms).has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  // A subscription that cannot be acknowledged is bounded by query_timeout.
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(code_of([&] { l.subscribe("later"); }), pgpipe::errc::query_timeout);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  l.close();
  const std::string log = logs.all();
  EXPECT_NE(log.find("connect failed"), std::string::npos) << log;
  pgpipe::test::expect_no_secret(log, {"s3cret-listen"}, "the listener's log");
}

TEST(blocking_listener, a_refused_listen_names_its_sqlstate_and_is_not_kept) {
  blocking_listener_adapter a("blisten_refused");
  pgpipe::test::refused_listen_is_not_kept(a, "blisten_refused");
}

TEST(blocking_listener, a_silent_first_host_costs_one_connect_timeout_per_attempt) {
  pgpipe::test::a_silent_first_host_costs_one_connect_timeout<blocking_listener_adapter>("blisten_silent_first");
}

TEST(blocking_listener, a_refused_listen_while_disconnected_blocks_nothing) {
  pgpipe::test::refused_listen_while_disconnected_blocks_nothing<blocking_listener_adapter>("blisten_refused_offline");
}

TEST(blocking_listener, a_listener_that_cannot_connect_fails_subscribe_with_the_connect_error) {
  pgpipe::test::a_listener_that_cannot_connect_fails_subscribe_with_the_connect_error<blocking_listener_adapter>(
      "blisten_wrong_password");
}

// The connect error a waiting subscribe is answered with names the cause
// (the server's words, the bound that ran out) and never the password.
TEST(blocking_listener, the_connect_error_a_subscriber_gets_names_the_cause_and_never_the_password) {
  pgpipe::pool_params p = pgpipe::test::fault_params(
      pgpipe::test::with_options(pgpipe::test::shared_cluster().conninfo(),
                                 "password=s3cret-expiry application_name=blisten_expiry_secret"),
      1);
  p.acquire_timeout = 500ms;
  p.query_timeout = 20s;
  log_sink logs;
  pgpipe::blocking_listener l(p, logs.fn());
  try {
    l.subscribe("lt_never");
    ADD_FAILURE() << "subscribed with a wrong password";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::errc_condition::auth_error) << e.what();
    const std::string what = e.what();
    EXPECT_NE(what.find("acquire_timeout"), std::string::npos) << what;
    EXPECT_NE(what.find("password authentication failed"), std::string::npos) << what;
    pgpipe::test::expect_no_secret(what, {"s3cret-expiry"}, "what()");
  }
  l.close();
  pgpipe::test::expect_no_secret(logs.all(), {"s3cret-expiry"}, "the listener's log");
}

TEST(blocking_listener, bad_params_are_refused_at_construction) {
  pgpipe::pool_params p = params_for(app_conninfo("blisten_params"), 1);
  p.connect_backoff_initial = 0ms;
  EXPECT_EQ(code_of([&] { pgpipe::blocking_listener l(p); }), pgpipe::errc::bad_params);
  p = params_for(app_conninfo("blisten_params"), 1);
  p.connect_timeout = 0ms;
  EXPECT_EQ(code_of([&] { pgpipe::blocking_listener l(p); }), pgpipe::errc::bad_params);
  // A conninfo libpq cannot parse: named as such, and its password never quoted.
  p = params_for("password=s3cret-params host='unterminated", 1);
  try {
    pgpipe::blocking_listener l(p);
    ADD_FAILURE() << "an unparseable conninfo was accepted";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::errc::bad_conninfo);
    pgpipe::test::expect_no_secret(e.what(), {"s3cret-params"}, "what()");
  }
}

TEST(blocking_listener, a_moved_from_listener_reports_closed) {
  pgpipe::blocking_listener a(params_for(app_conninfo("blisten_move"), 1));
  pgpipe::blocking_listener b(std::move(a));
  b.subscribe("lt_move");
  EXPECT_EQ(code_of([&] { a.receive(0ms); }), pgpipe::errc::closed);  // NOLINT(bugprone-use-after-move)
  EXPECT_FALSE(b.receive(0ms).has_value());
}
