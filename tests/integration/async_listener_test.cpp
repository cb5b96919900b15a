// pgpipe::listener against a real server: order over many notifications and
// channels, a terminated backend (gap, then delivery resumes), the largest
// payload, a Unicode channel name and a refused LISTEN (the scenarios both listeners share,
// tests/support/listener_scenarios.hpp), and close() failing a pending receive
// and every later one.
#include <pgpipe/async_client.hpp>
#include <pgpipe/listener.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"
#include "support/listener_scenarios.hpp"

#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <future>
#include <string>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pgpipe::test::app_conninfo;
using pgpipe::test::params_for;

namespace {

// The scenarios' adapter: a client for the listener's executor, and waits on futures.
struct async_listener_adapter {
  explicit async_listener_adapter(const std::string& app)
      : client(params_for(app_conninfo(app), 1), 1), l(client, params_for(app_conninfo(app), 1)) {}

  void subscribe(const std::string& channel) {
    auto ec = l.async_subscribe(channel, pgpipe::test::use_future_ec).get();
    ASSERT_FALSE(ec) << ec.message();
  }
  std::error_code try_subscribe(const std::string& channel) {
    return l.async_subscribe(channel, pgpipe::test::use_future_ec).get();
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
  pgpipe::listener l;
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
