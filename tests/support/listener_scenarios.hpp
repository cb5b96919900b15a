// LISTEN/NOTIFY scenarios both listeners must pass (pgpipe::async_listener and
// pgpipe::blocking_listener), written once and run by each driver's suite
// (tests/integration/async_listener_test.cpp, blocking_listener_test.cpp)
// through a small adapter L:
//   L(pgpipe::pool_params);                  a listener with these parameters
//   void subscribe(const std::string&);      waited for; fails the test on error
//   std::error_code try_subscribe(const std::string&);  waited for; the error, if any
//   std::future<std::error_code> subscribe_later(const std::string&);  not waited for
//   void unsubscribe(const std::string&);    the same
//   pgpipe::notification receive();          the next one; throws after 60 s
#pragma once

#include <pgpipe/error.hpp>
#include <pgpipe/notification.hpp>

#include "support/cluster_fixture.hpp"
#include "support/fake_listeners.hpp"
#include "support/kit.hpp"

#include <gtest/gtest.h>

#include <libpq-fe.h>

#include <chrono>
#include <future>
#include <string>
#include <system_error>

namespace pgpipe::test {

/// Another session, sending NOTIFYs with plain libpq.
class notify_sender {
 public:
  notify_sender() : c_(PQconnectdb(shared_cluster().conninfo().c_str())) {}
  ~notify_sender() { PQfinish(c_); }
  notify_sender(const notify_sender&) = delete;
  notify_sender& operator=(const notify_sender&) = delete;
  void exec(const std::string& sql) {
    PGresult* r = PQexec(c_, sql.c_str());
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    std::string err = ok ? "" : PQresultErrorMessage(r);
    PQclear(r);
    ASSERT_TRUE(ok) << sql << ": " << err;
  }
  /// Notifies payloads first..last (as text) on channel "lt_ch<i % 3>", in one transaction.
  void notify_range(int first, int last) {
    exec("do $$ begin for i in " + std::to_string(first) + ".." + std::to_string(last) +
         " loop perform pg_notify('lt_ch' || (i % 3), i::text); end loop; end $$");
  }
  int pid() const { return PQbackendPID(c_); }

 private:
  PGconn* c_;
};

/// Terminates the backend of the listener tagged application_name `app`
/// (`and_where`: more of the condition); exactly one must match.
inline void terminate_listener_backend(const std::string& app, const std::string& and_where = "") {
  EXPECT_EQ(shared_cluster().query_value(
                "select count(pg_terminate_backend(pid)) from pg_stat_activity where application_name = '" + app +
                "'" + and_where),
            "1");
}

/// After a loss of a listener subscribed to "lt_ch1": the gap, then a
/// notification sent now on that channel.
template <class L>
void expect_gap_then_delivery_on_lt_ch1(L& l) {
  EXPECT_TRUE(l.receive().gap);
  notify_sender s;
  s.notify_range(1, 1);
  notification n = l.receive();
  EXPECT_FALSE(n.gap);
  EXPECT_EQ(n.channel, "lt_ch1");
  EXPECT_EQ(n.payload, "1");
}

/// 10,000 notifications over 3 channels from another session arrive in order.
template <class L>
void ten_thousand_in_order(L& l) {
  for (int c = 0; c < 3; ++c) l.subscribe("lt_ch" + std::to_string(c));
  notify_sender s;
  // 100 transactions of 100: notifications of one transaction arrive together, at commit.
  auto sending = std::async(std::launch::async, [&] {
    for (int t = 0; t < 100; ++t) s.notify_range(t * 100 + 1, t * 100 + 100);
  });
  for (int i = 1; i <= 10000; ++i) {
    notification n = l.receive();
    ASSERT_FALSE(n.gap);
    ASSERT_EQ(n.payload, std::to_string(i));
    ASSERT_EQ(n.channel, "lt_ch" + std::to_string(i % 3));
    ASSERT_EQ(n.sender_pid, s.pid());
  }
  sending.get();
}

/// The listener's backend (application_name `app`) terminated mid-stream: the
/// notifications read before come in order, then one gap, then delivery resumes.
template <class L>
void gap_then_resume(L& l, const std::string& app) {
  l.subscribe("lt_ch0");
  l.subscribe("lt_ch1");
  l.subscribe("lt_ch2");
  notify_sender s;
  s.notify_range(1, 30);
  for (int i = 1; i <= 30; ++i) ASSERT_EQ(l.receive().payload, std::to_string(i));

  // Mid-stream: notifications keep coming while the listener's backend dies.
  auto sending = std::async(std::launch::async, [&] {
    for (int t = 0; t < 20; ++t) s.notify_range(100 + t * 10, 109 + t * 10);
  });
  // The listener's backend is the one whose last statement was its LISTEN.
  terminate_listener_backend(app, " and query like 'LISTEN%'");
  sending.get();
  // Whatever arrived before the loss comes first, in order; then the gap.
  int last = 99;
  for (;;) {
    notification n = l.receive();
    if (n.gap) break;
    const int v = std::stoi(n.payload);
    ASSERT_GT(v, last);
    last = v;
  }
  // After the gap the listener is subscribed again (to every channel) and
  // delivery resumes in order: sends that raced with the re-LISTEN may
  // arrive (never one from before a notification already seen), then every
  // new one, on each of the three channels.
  s.notify_range(1000, 1029);
  int next = 1000;
  while (next <= 1029) {
    notification n = l.receive();
    ASSERT_FALSE(n.gap);
    const int v = std::stoi(n.payload);
    if (v < 1000) {
      ASSERT_GT(v, last);
      last = v;
      continue;
    }
    ASSERT_EQ(v, next);
    ASSERT_EQ(n.channel, "lt_ch" + std::to_string(v % 3));
    ++next;
  }
}

/// A 7,999-byte payload, a Unicode channel name with a quote in it, a
/// mixed-case name kept as given, and unsubscribe.
template <class L>
void largest_payload_and_unicode_channel(L& l) {
  const std::string channel = "заказы \"новые\" 注文";  // quotes inside: quoted as an identifier
  l.subscribe(channel);
  l.subscribe("MixedCase");
  notify_sender s;
  const std::string payload(7999, 'x');
  s.exec("select pg_notify('" + channel.substr(0, channel.find('"')) + "\"новые\" 注文', '" + payload + "')");
  notification n = l.receive();
  EXPECT_EQ(n.channel, channel);
  EXPECT_EQ(n.payload, payload);
  s.exec("notify \"MixedCase\", 'kept'");
  n = l.receive();
  EXPECT_EQ(n.channel, "MixedCase");
  EXPECT_EQ(n.payload, "kept");
  // Unsubscribed channels stay quiet; the next notification is from a subscribed one.
  l.unsubscribe("MixedCase");
  s.exec("notify \"MixedCase\", 'dropped'");
  s.exec("select pg_notify('" + channel.substr(0, channel.find('"')) + "\"новые\" 注文', 'after')");
  n = l.receive();
  EXPECT_EQ(n.payload, "after");
}

/// A LISTEN the server refuses reports its SQLSTATE and is not kept as a
/// subscription: after a loss the re-LISTEN (which would fail on it)
/// succeeds, the gap comes and delivery resumes.
template <class L>
void refused_listen_is_not_kept(L& l, const std::string& app) {
  // A zero-length quoted identifier is a syntax error on the server.
  const std::error_code ec = l.try_subscribe("");
  EXPECT_EQ(sqlstate_of(ec), "42601") << ec.message();
  l.subscribe("lt_ch1");
  terminate_listener_backend(app, " and query like 'LISTEN%'");
  expect_gap_then_delivery_on_lt_ch1(l);
}

/// A LISTEN the server refuses (an empty name), asked while the listener is
/// disconnected (its role may not log in for a moment), is answered with the
/// server's error once a connection is back, and blocks nothing: the channel
/// subscribed before is listened again, the gap comes and delivery resumes.
template <class L>
void refused_listen_while_disconnected_blocks_nothing(const std::string& app) {
  using namespace std::chrono_literals;
  auto& pg = shared_cluster();
  limited_role role(pg, "lt_refused_offline", "lt-refused-pw");
  L l(params_for(role.conninfo(app), 1));
  l.subscribe("lt_ch1");
  pg.exec("alter role lt_refused_offline nologin");
  terminate_listener_backend(app);
  std::future<std::error_code> refused = l.subscribe_later("");
  pg.exec("alter role lt_refused_offline login");
  ASSERT_EQ(refused.wait_for(30s), std::future_status::ready)
      << "the refused LISTEN was never answered (every re-LISTEN refused?)";
  const std::error_code ec = refused.get();
  EXPECT_EQ(sqlstate_of(ec), "42601") << ec.message();
  expect_gap_then_delivery_on_lt_ch1(l);
}

/// A listener that can never connect (a wrong password) answers a
/// subscription with the connect error once acquire_timeout has passed,
/// instead of keeping it waiting forever.
template <class L>
void a_listener_that_cannot_connect_fails_subscribe_with_the_connect_error(const std::string& app) {
  using namespace std::chrono_literals;
  pool_params p =
      fault_params(with_options(shared_cluster().conninfo(), "password=s3cret-wrong application_name=" + app), 1);
  p.acquire_timeout = 1s;
  p.query_timeout = 20s;  // the blocking listener's own bound: far beyond acquire_timeout
  L l(p);
  std::future<std::error_code> f = l.subscribe_later("lt_never");
  ASSERT_EQ(f.wait_for(20s), std::future_status::ready) << "subscribe still pending long after acquire_timeout";
  const std::error_code ec = f.get();
  EXPECT_EQ(ec, errc_condition::auth_error) << ec.message();  // 28P01, as the server said
}

/// `host=<silent>,<the fixture>`: the first host completes TCP and never
/// answers. Each host gets its own connect_timeout, so the listener passes
/// the silent one after one timeout and connects to the next, every attempt;
/// with one deadline for the whole string it would never get past it.
template <class L>
void a_silent_first_host_costs_one_connect_timeout(const std::string& app) {
  using namespace std::chrono_literals;
  auto& pg = shared_cluster();
  silent_listener silent;
  pool_params p = fault_params(with_options(pg.conninfo(), "host=127.0.0.1,127.0.0.1 port=" +
                                                               std::to_string(silent.port()) + "," +
                                                               std::to_string(pg.port()) + " application_name=" + app),
                               1);  // connect_timeout 2 s, acquire_timeout 10 s
  L l(p);
  std::future<std::error_code> f = l.subscribe_later("lt_walk");
  ASSERT_EQ(f.wait_for(30s), std::future_status::ready) << "never connected past the silent host";
  const std::error_code ec = f.get();
  ASSERT_FALSE(ec) << ec.message();
  notify_sender s;
  s.exec("notify lt_walk, 'walked'");
  notification n = l.receive();
  EXPECT_EQ(n.channel, "lt_walk");
  EXPECT_EQ(n.payload, "walked");
  // A loss makes it walk again: past the silent host, listening again, gap.
  terminate_listener_backend(app);
  EXPECT_TRUE(l.receive().gap);
  s.exec("notify lt_walk, 'again'");
  EXPECT_EQ(l.receive().payload, "again");
}

}  // namespace pgpipe::test
