// pgpipe::listener against a real server: order over many notifications and
// channels, a terminated backend (gap, then delivery resumes), the largest
// payload and a Unicode channel name.
#include <pgpipe/async_client.hpp>
#include <pgpipe/listener.hpp>

#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"

#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <libpq-fe.h>

#include <future>
#include <memory>
#include <string>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pgpipe::test::app_conninfo;
using pgpipe::test::params_for;
using pgpipe::test::shared_cluster;

namespace {

// Another session, sending NOTIFYs with plain libpq.
class sender {
 public:
  sender() : c_(PQconnectdb(shared_cluster().conninfo().c_str())) {}
  ~sender() { PQfinish(c_); }
  sender(const sender&) = delete;
  sender& operator=(const sender&) = delete;
  void exec(const std::string& sql) {
    PGresult* r = PQexec(c_, sql.c_str());
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    std::string err = ok ? "" : PQresultErrorMessage(r);
    PQclear(r);
    ASSERT_TRUE(ok) << sql << ": " << err;
  }
  // Notifies payloads first..last (as text) on channel "<prefix><i % 3>", in one transaction.
  void notify_range(int first, int last) {
    exec("do $$ begin for i in " + std::to_string(first) + ".." + std::to_string(last) +
         " loop perform pg_notify('lt_ch' || (i % 3), i::text); end loop; end $$");
  }
  int pid() const { return PQbackendPID(c_); }

 private:
  PGconn* c_;
};

pgpipe::notification receive(pgpipe::listener& l) {
  auto f = l.async_receive(asio::use_future);
  if (f.wait_for(60s) != std::future_status::ready) throw std::runtime_error("no notification within 60 s");
  auto [ec, n] = f.get();
  if (ec) throw std::system_error(ec);
  return n;
}

void subscribe(pgpipe::listener& l, const std::string& channel) {
  auto ec = l.async_subscribe(channel, asio::use_future).get();
  ASSERT_FALSE(ec) << ec.message();
}

}  // namespace

TEST(listener, ten_thousand_notifications_over_three_channels_arrive_in_order) {
  pgpipe::async_client client(params_for(app_conninfo("listener_order"), 1), 1);
  pgpipe::listener l(client, params_for(app_conninfo("listener_order"), 1));
  for (int c = 0; c < 3; ++c) subscribe(l, "lt_ch" + std::to_string(c));
  sender s;
  // 100 transactions of 100: notifications of one transaction arrive together, at commit.
  auto sending = std::async(std::launch::async, [&] {
    for (int t = 0; t < 100; ++t) s.notify_range(t * 100 + 1, t * 100 + 100);
  });
  for (int i = 1; i <= 10000; ++i) {
    pgpipe::notification n = receive(l);
    ASSERT_FALSE(n.gap);
    ASSERT_EQ(n.payload, std::to_string(i));
    ASSERT_EQ(n.channel, "lt_ch" + std::to_string(i % 3));
    ASSERT_EQ(n.sender_pid, s.pid());
  }
  sending.get();
}

TEST(listener, a_terminated_backend_gives_a_gap_then_delivery_resumes) {
  auto& pg = shared_cluster();
  const std::string app = "listener_gap";
  pgpipe::pool_params p = params_for(app_conninfo(app), 1);
  pgpipe::async_client client(p, 1);
  pgpipe::listener l(client, p);
  subscribe(l, "lt_ch0");
  subscribe(l, "lt_ch1");
  subscribe(l, "lt_ch2");
  sender s;
  s.notify_range(1, 30);
  for (int i = 1; i <= 30; ++i) ASSERT_EQ(receive(l).payload, std::to_string(i));

  // Mid-stream: notifications keep coming while the listener's backend dies.
  auto sending = std::async(std::launch::async, [&] {
    for (int t = 0; t < 20; ++t) s.notify_range(100 + t * 10, 109 + t * 10);
  });
  // The listener's backend is the one whose last statement was its LISTEN.
  EXPECT_EQ(pg.query_value("select count(pg_terminate_backend(pid)) from pg_stat_activity where application_name = '" +
                           app + "' and query like 'LISTEN%'"),
            "1");
  sending.get();
  // Whatever arrived before the loss comes first, in order; then the gap.
  int last = 99;
  for (;;) {
    pgpipe::notification n = receive(l);
    if (n.gap) break;
    const int v = std::stoi(n.payload);
    ASSERT_GT(v, last);
    last = v;
  }
  // After the gap the listener is subscribed again and delivery resumes in
  // order: sends that raced with the re-LISTEN may arrive (never one from
  // before a notification already seen), then every new one.
  s.notify_range(1000, 1029);
  int next = 1000;
  while (next <= 1029) {
    pgpipe::notification n = receive(l);
    ASSERT_FALSE(n.gap);
    const int v = std::stoi(n.payload);
    if (v < 1000) {
      ASSERT_GT(v, last);
      last = v;
      continue;
    }
    ASSERT_EQ(v, next);
    ++next;
  }
}

TEST(listener, the_largest_payload_and_a_unicode_channel_name_work) {
  pgpipe::async_client client(params_for(app_conninfo("listener_big"), 1), 1);
  pgpipe::listener l(client, params_for(app_conninfo("listener_big"), 1));
  const std::string channel = "заказы \"новые\" 注文";  // quotes inside: quoted as an identifier
  subscribe(l, channel);
  subscribe(l, "MixedCase");
  sender s;
  const std::string payload(7999, 'x');
  s.exec("select pg_notify('" + channel.substr(0, channel.find('"')) + "\"новые\" 注文', '" + payload + "')");
  pgpipe::notification n = receive(l);
  EXPECT_EQ(n.channel, channel);
  EXPECT_EQ(n.payload, payload);
  s.exec("notify \"MixedCase\", 'kept'");
  n = receive(l);
  EXPECT_EQ(n.channel, "MixedCase");
  EXPECT_EQ(n.payload, "kept");
  // Unsubscribed channels stay quiet; the next notification is from a subscribed one.
  ASSERT_FALSE(l.async_unsubscribe("MixedCase", asio::use_future).get());
  s.exec("notify \"MixedCase\", 'dropped'");
  s.exec("select pg_notify('" + channel.substr(0, channel.find('"')) + "\"новые\" 注文', 'after')");
  n = receive(l);
  EXPECT_EQ(n.payload, "after");
}

TEST(listener, close_fails_a_pending_receive) {
  pgpipe::async_client client(params_for(app_conninfo("listener_close"), 1), 1);
  pgpipe::listener l(client, params_for(app_conninfo("listener_close"), 1));
  subscribe(l, "lt_quiet");
  auto f = l.async_receive(asio::use_future);
  l.close();
  auto [ec, n] = f.get();
  EXPECT_EQ(ec, pgpipe::errc::closed);
  EXPECT_EQ(l.async_subscribe("x", asio::use_future).get(), pgpipe::errc::closed);
}
