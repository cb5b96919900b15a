// pgpipe::async_listener against a real server: order over many notifications and
// channels, a terminated backend (gap, then delivery resumes), the largest
// payload, a Unicode channel name and a refused LISTEN (the scenarios both listeners share,
// tests/support/listener_scenarios.hpp), and close() failing a pending receive
// and every later one.
#include <pgpipe/async_client.hpp>
#include <pgpipe/async_listener.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"
#include "support/listener_scenarios.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <future>
#include <optional>
#include <string>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pgpipe::test::app_conninfo;
using pgpipe::test::params_for;

namespace {

// The scenarios' adapter: a client for the listener's executor, and waits on futures.
struct async_listener_adapter {
  explicit async_listener_adapter(const std::string& app)
      : client(params_for(app_conninfo(app), 1), {.loops = 1}), l(client, params_for(app_conninfo(app), 1)) {}
  explicit async_listener_adapter(pgpipe::pool_params p)
      : client(params_for(app_conninfo("listener_client"), 1), {.loops = 1}), l(client, std::move(p)) {}

  void subscribe(const std::string& channel) {
    auto ec = l.async_subscribe(channel, pgpipe::test::use_future_ec).get();
    ASSERT_FALSE(ec) << ec.message();
  }
  std::error_code try_subscribe(const std::string& channel) {
    return l.async_subscribe(channel, pgpipe::test::use_future_ec).get();
  }
  std::future<std::error_code> subscribe_later(const std::string& channel) {
    return l.async_subscribe(channel, pgpipe::test::use_future_ec);
  }
  void unsubscribe(const std::string& channel) {
    auto ec = l.async_unsubscribe(channel, pgpipe::test::use_future_ec).get();
    ASSERT_FALSE(ec) << ec.message();
  }
  pgpipe::notification receive() {
    auto f = l.async_receive(pgpipe::test::use_future_ec);
    if (f.wait_for(60s) != std::future_status::ready) throw std::runtime_error("no notification within 60 s");
    auto [ec, n] = f.get();
    if (ec) throw std::system_error(ec);
    return n;
  }

  pgpipe::async_client client;
  pgpipe::async_listener l;
};

}  // namespace

TEST(listener, ten_thousand_notifications_over_three_channels_arrive_in_order) {
  async_listener_adapter a("listener_order");
  pgpipe::test::ten_thousand_in_order(a);
}

TEST(listener, a_terminated_backend_gives_a_gap_then_delivery_resumes) {
  async_listener_adapter a("listener_gap");
  pgpipe::test::gap_then_resume(a, "listener_gap");
}

TEST(listener, the_largest_payload_and_a_unicode_channel_name_work) {
  async_listener_adapter a("listener_big");
  pgpipe::test::largest_payload_and_unicode_channel(a);
}

TEST(listener, a_refused_listen_names_its_sqlstate_and_is_not_kept) {
  async_listener_adapter a("listener_refused");
  pgpipe::test::refused_listen_is_not_kept(a, "listener_refused");
}

TEST(listener, a_silent_first_host_costs_one_connect_timeout_per_attempt) {
  pgpipe::test::a_silent_first_host_costs_one_connect_timeout<async_listener_adapter>("listener_silent_first");
}

TEST(listener, a_refused_listen_while_disconnected_blocks_nothing) {
  pgpipe::test::refused_listen_while_disconnected_blocks_nothing<async_listener_adapter>("listener_refused_offline");
}

TEST(listener, a_listener_that_cannot_connect_fails_subscribe_with_the_connect_error) {
  pgpipe::test::a_listener_that_cannot_connect_fails_subscribe_with_the_connect_error<async_listener_adapter>(
      "listener_wrong_password");
}

TEST(listener, close_fails_a_pending_receive) {
  async_listener_adapter a("listener_close");
  a.subscribe("lt_quiet");
  auto f = a.l.async_receive(pgpipe::test::use_future_ec);
  a.l.close();
  auto [ec, n] = f.get();
  EXPECT_EQ(ec, pgpipe::errc::closed);
  EXPECT_EQ(a.l.async_subscribe("x", pgpipe::test::use_future_ec).get(), pgpipe::errc::closed);
}

// listener.hpp: async_receive fails with errc::closed after close(), as
// blocking_listener::receive throws it: a receive started after close()
// must not wait forever for a connection that will never come back.
TEST(listener, a_receive_after_close_fails_with_closed) {
  async_listener_adapter a("listener_closed_receive");
  a.subscribe("lt_quiet");
  a.l.close();
  auto f = a.l.async_receive(pgpipe::test::use_future_ec);
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready) << "async_receive after close() never completed";
  auto [ec, n] = f.get();
  EXPECT_EQ(ec, pgpipe::errc::closed);
}

// listener.hpp: async_receive's cancellation slot. A receive cancelled
// through it (any type: nothing was taken from the buffer) completes at once
// with errc::cancelled; the listener goes on, and a notification sent
// afterwards reaches the next receive.
TEST(listener, a_receive_cancelled_through_its_slot_completes_at_once_and_loses_nothing) {
  async_listener_adapter a("listener_cancel");
  a.subscribe("lt_cancel");
  asio::io_context caller;  // the handler's executor, where the signal is emitted (Asio's rule)
  asio::cancellation_signal signal;
  std::optional<std::error_code> got;
  a.l.async_receive(asio::bind_cancellation_slot(
      signal.slot(), asio::bind_executor(caller, [&](std::error_code ec, pgpipe::notification) { got = ec; })));
  asio::post(caller, [&] { signal.emit(asio::cancellation_type::terminal); });
  // Bounded: without the slot the receive would wait for a notification that never comes.
  caller.run_for(30s);
  ASSERT_TRUE(got.has_value()) << "the cancelled receive never completed";
  EXPECT_EQ(*got, pgpipe::errc::cancelled);

  pgpipe::test::notify_sender s;
  s.exec("notify lt_cancel, 'after'");
  const pgpipe::notification n = a.receive();
  EXPECT_FALSE(n.gap);
  EXPECT_EQ(n.channel, "lt_cancel");
  EXPECT_EQ(n.payload, "after");
}

// The use the slot is for: a receive raced with a timer in a coroutine. The
// race ends only once both sides completed, so a receive that ignored its
// cancellation would keep it from ending; the notification that comes later
// reaches the next receive.
TEST(listener, a_receive_raced_with_a_timer_ends_with_the_timer_and_the_next_receive_gets_the_notification) {
  async_listener_adapter a("listener_race");
  a.subscribe("lt_race");
  asio::io_context caller;
  std::optional<std::size_t> winner;
  asio::co_spawn(
      caller,
      [&]() -> asio::awaitable<void> {
        using namespace asio::experimental::awaitable_operators;
        asio::steady_timer timer(caller, 50ms);
        auto r = co_await (a.l.async_receive(asio::as_tuple(asio::use_awaitable)) ||
                           timer.async_wait(asio::as_tuple(asio::use_awaitable)));
        winner = r.index();
      },
      asio::detached);
  caller.run_for(30s);
  ASSERT_TRUE(winner.has_value()) << "the race never ended: the losing receive was not cancelled";
  EXPECT_EQ(*winner, 1u) << "nothing was notified, so the timer wins";

  pgpipe::test::notify_sender s;
  s.exec("notify lt_race, 'later'");
  const pgpipe::notification n = a.receive();
  EXPECT_EQ(n.channel, "lt_race");
  EXPECT_EQ(n.payload, "later");
}
