// pool_params::before_connect and pool_params::load_balance_hosts through
// both drivers, on real servers (docs/service.md, "Connecting"):
//  - before_connect supplies the password of each connect: after the role's
//    password changes (an expiring token), new connections use the new one;
//  - its exception fails the query as a connect error naming it, without a
//    password, within acquire_timeout;
//  - load_balance::random spreads a pool's connections over two servers.
#include "support/cluster_fixture.hpp"
#include "support/driver_adapter.hpp"
#include "support/kit.hpp"
#include "support/wait.hpp"

#include <pgpipe/async_client.hpp>
#include <pgpipe/blocking_pool.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

namespace {

using namespace std::chrono_literals;
using pgpipe::test::outcome;

template <class Driver>
class connect_hooks : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    unsetenv("PGPASSWORD");
    setenv("PGPASSFILE", "/nonexistent/pgpipe-test-pgpass", 1);
  }
};
TYPED_TEST_SUITE(connect_hooks, pgpipe::test::drivers, pgpipe::test::driver_names);

// A token that changes, as a cloud provider's does: the role's password is
// rotated on the server and in the provider, old connections are ended, and
// the pool's new connections log in with the new one.
TYPED_TEST(connect_hooks, before_connect_supplies_each_connects_password) {
  auto& pg = pgpipe::test::shared_cluster();
  const std::string role = std::string("hook_") + TypeParam::name;
  pg.exec("drop role if exists " + role);
  pg.exec("create role " + role + " login password 'token-one'");
  std::mutex mu;
  std::string token = "token-one";
  std::atomic<int> calls{0};
  auto p = pgpipe::test::fault_params(
      "host=127.0.0.1 port=" + std::to_string(pg.port()) + " user=" + role + " dbname=postgres", 2);
  p.acquire_timeout = 5s;
  p.before_connect = [&](const std::string& conninfo) {
    ++calls;
    std::lock_guard lk(mu);
    return conninfo + " password='" + token + "'";
  };
  {
    TypeParam d(p);
    outcome o = d.run("select current_user::text");
    ASSERT_FALSE(o.ec) << o.text;
    EXPECT_EQ(o.first, role);
    const int first_calls = calls.load();
    EXPECT_GE(first_calls, 1);

    pg.exec("alter role " + role + " password 'token-two'");
    {
      std::lock_guard lk(mu);
      token = "token-two";
    }
    pg.exec("select pg_terminate_backend(pid) from pg_stat_activity where usename = '" + role + "'");
    // The next queries may meet the ended connections first; then the pool
    // opens new ones, which must log in with the new token.
    std::string last;
    const bool back = pgpipe::test::wait_until(
        [&] {
          outcome again = d.run("select current_user::text");
          last = again.text;
          return !again.ec && again.first == role;
        },
        20s, 50ms);
    EXPECT_TRUE(back) << "no query succeeded after the token changed: " << last;
    EXPECT_GT(calls.load(), first_calls) << "the new connection did not ask before_connect";
    pgpipe::test::expect_no_secret(d.log() + last, {"token-one", "token-two"}, "log and errors");
  }
  pg.exec("drop role " + role);
}

TYPED_TEST(connect_hooks, a_before_connect_that_throws_fails_the_query_with_its_message) {
  auto& pg = pgpipe::test::shared_cluster();
  auto p = pgpipe::test::fault_params(pg.conninfo_without_password(), 1);
  p.acquire_timeout = 1s;
  p.before_connect = [](const std::string&) -> std::string {
    throw std::runtime_error("token service unavailable");
  };
  TypeParam d(p);
  outcome o = d.run("select 1");
  EXPECT_EQ(o.ec, pgpipe::make_error_code(pgpipe::errc::connect_failed)) << o.text;
  EXPECT_NE(o.text.find("before_connect failed: token service unavailable"), std::string::npos) << o.text;
}

// The password is "closed", a word of libpq's "server closed the connection
// unexpectedly", and only before_connect knows it (the pool's conninfo has
// none): the error of a connection the server ended mid-statement, and every
// log line, must still be without it.
TYPED_TEST(connect_hooks, a_lost_connections_error_is_scrubbed_of_before_connects_password) {
  auto& pg = pgpipe::test::shared_cluster();
  const std::string secret = "closed";
  const std::string role = std::string("hook_lost_") + TypeParam::name;
  pg.exec("drop role if exists " + role);
  pg.exec("create role " + role + " login password '" + secret + "'");
  auto p = pgpipe::test::fault_params(
      "host=127.0.0.1 port=" + std::to_string(pg.port()) + " user=" + role + " dbname=postgres", 1);
  p.before_connect = [secret](const std::string& conninfo) { return conninfo + " password=" + secret; };
  std::string seen;
  {
    TypeParam d(p);
    // The backend ends its own session: FATAL, then libpq's words on the loss.
    outcome o = d.run("select pg_terminate_backend(pg_backend_pid())");
    EXPECT_EQ(o.ec, pgpipe::errc_condition::connection_lost) << o.text;
    seen = o.text + "\n" + d.log();
  }
  pgpipe::test::expect_no_secret(seen, {secret}, "the lost connection's error and log");
  pg.exec("drop role " + role);
}

// A before_connect that does not return (a token service that hangs) fails
// that connect after connect_timeout, as a handshake that hangs does, and
// the caller hears why well before acquire_timeout would have told it
// nothing but "pool_timeout".
TYPED_TEST(connect_hooks, connect_timeout_bounds_a_before_connect_that_does_not_return) {
  auto& pg = pgpipe::test::shared_cluster();
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  auto p = pgpipe::test::fault_params(pg.conninfo_without_password(), 1);
  p.connect_timeout = 1s;
  p.acquire_timeout = 4s;
  p.before_connect = [released](const std::string&) -> std::string {
    released.wait();
    throw std::runtime_error("released at the end of the test");
  };
  TypeParam d(p);
  // Lets the hung calls go before the pool's end, whatever the outcome.
  struct releaser {
    std::shared_ptr<std::promise<void>> p;
    ~releaser() { p->set_value(); }
  } r{release};
  outcome o = d.run("select 1");
  EXPECT_EQ(o.ec, pgpipe::make_error_code(pgpipe::errc::connect_failed)) << o.text;
  EXPECT_NE(o.text.find("before_connect did not return within connect_timeout"), std::string::npos) << o.text;
}

// On a caller's io_context, a before_connect that itself needs that
// io_context (a token fetched through a client on the same loop) must not
// stall it: it runs where blocking is allowed, never on the loop.
TEST(connect_hooks_async, a_before_connect_waiting_on_the_clients_own_io_context_does_not_deadlock) {
  unsetenv("PGPASSWORD");
  setenv("PGPASSFILE", "/nonexistent/pgpipe-test-pgpass", 1);
  auto& pg = pgpipe::test::shared_cluster();
  pg.exec("drop role if exists hook_loop");
  pg.exec("create role hook_loop login password 'loop-token'");
  boost::asio::io_context io;
  auto p = pgpipe::test::fault_params(
      "host=127.0.0.1 port=" + std::to_string(pg.port()) + " user=hook_loop dbname=postgres", 1);
  p.acquire_timeout = 3s;
  std::atomic<bool> gave_up{false};
  p.before_connect = [&io, &gave_up](const std::string& conninfo) {
    auto ran = std::make_shared<std::promise<void>>();
    auto f = ran->get_future();
    boost::asio::post(io, [ran] { ran->set_value(); });
    if (f.wait_for(5s) != std::future_status::ready) {
      gave_up = true;
      throw std::runtime_error("the io_context did not run: before_connect blocks it");
    }
    return conninfo + " password=loop-token";
  };
  std::string got;
  {
    pgpipe::async_client client(p, io);
    client.async_query("select current_user::text", [&](std::error_code ec, pgpipe::result r) {
      got = ec ? "error: " + ec.message() + " " + r.diag().to_string() : r.value<std::string>();
      client.close();
    });
    io.run();
  }
  EXPECT_FALSE(gave_up.load()) << "before_connect ran on the io_context it waited for";
  EXPECT_EQ(got, "hook_loop");
  pg.exec("drop role hook_loop");
}

// Two servers with the same role: with load_balance::random the pool's
// connections land on both. A pool of 12 connections lands all on one with
// probability 2^-11; three pools in a row, never in practice.
TYPED_TEST(connect_hooks, random_load_balance_spreads_connections_over_the_hosts) {
  auto& a = pgpipe::test::shared_cluster();
  auto b = pgpipe::test::fresh_cluster();
  for (const auto* pg : {&a, b.get()}) {
    pg->exec("drop role if exists lb_user");
    pg->exec("create role lb_user login password 'lb-pass'");
  }
  const std::string app = std::string("lb_") + TypeParam::name;
  const std::string conninfo = "host=127.0.0.1,127.0.0.1 port=" + std::to_string(a.port()) + "," +
                               std::to_string(b->port()) +
                               " user=lb_user password=lb-pass dbname=postgres application_name=" + app;
  constexpr std::size_t size = 12;
  int on_a = 0, on_b = 0;
  for (int pool = 0; pool < 3 && (on_a == 0 || on_b == 0); ++pool) {
    auto p = pgpipe::test::fault_params(conninfo, size);
    p.load_balance_hosts = pgpipe::load_balance::random;
    p.min_size = size;  // opened eagerly, each by its own connect
    TypeParam d(p);
    ASSERT_FALSE(d.run("select 1").ec);
    const bool all_open = pgpipe::test::wait_until(
        [&] {
          on_a = pgpipe::test::server_connections(a, app);
          on_b = pgpipe::test::server_connections(*b, app);
          return static_cast<std::size_t>(on_a + on_b) == size;
        },
        20s, 20ms);
    ASSERT_TRUE(all_open) << "the pool did not open min_size connections: " << on_a << " + " << on_b;
  }
  EXPECT_GT(on_a, 0) << "no connection on the first host";
  EXPECT_GT(on_b, 0) << "no connection on the second host";
  a.exec("drop role if exists lb_user");
}

}  // namespace
