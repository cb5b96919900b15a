// The routers' probe connection (src/pq/probe_session.*) on its own, against
// the fixture's server and loopback listeners that never answer: a probe
// answers within its deadline or fails by it, a hung first host costs one
// probe and the next starts one host further, a probe after a failure never
// waits behind the earlier one, and the owner's wake descriptor ends a wait
// at once. The routers' behaviour built on it is in
// scaleout_routing_faults_test.
#include "pq/probe_session.hpp"

#include "support/cluster_fixture.hpp"
#include "support/fake_listeners.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <stdexcept>
#include <string>

namespace {

using namespace std::chrono_literals;
using pgpipe::detail::probe_session;
using pgpipe::test::silent_listener;
using steady = std::chrono::steady_clock;

std::string two_hosts(const pgpipe::devcluster::cluster& pg, int first, int second) {
  return "host=127.0.0.1,127.0.0.1 port=" + std::to_string(first) + "," + std::to_string(second) +
         " user=" + pg.user() + " password=" + pg.password() + " dbname=postgres";
}

class scaleout_probe_session : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    unsetenv("PGPASSWORD");
    setenv("PGPASSFILE", "/nonexistent/pgpipe-test-pgpass", 1);
  }
};

TEST_F(scaleout_probe_session, answers_one_row_and_keeps_its_connection) {
  auto& pg = pgpipe::test::shared_cluster();
  probe_session s(pg.conninfo(), {}, -1);
  const auto a = s.run("select 1, 'x', null::text", steady::now() + 5s);
  ASSERT_TRUE(a) << s.why();
  EXPECT_EQ(*a, (std::vector<std::string>{"1", "x", ""}));
  const std::string pid = s.run("select pg_backend_pid()", steady::now() + 5s).value().at(0);
  EXPECT_EQ(s.run("select pg_backend_pid()", steady::now() + 5s).value().at(0), pid) << "reconnected for no reason";
  EXPECT_EQ(pg.query_value("select application_name from pg_stat_activity where pid = " + pid), "pgpipe-probe");
  // A statement error is no answer, but the session stays.
  EXPECT_FALSE(s.run("select 1/0", steady::now() + 5s));
  EXPECT_NE(s.why().find("division by zero"), std::string::npos) << s.why();
  EXPECT_EQ(s.run("select pg_backend_pid()", steady::now() + 5s).value().at(0), pid);
}

TEST_F(scaleout_probe_session, a_hung_first_host_costs_one_probe_then_the_next_host_answers) {
  auto& pg = pgpipe::test::shared_cluster();
  silent_listener silent;
  probe_session s(two_hosts(pg, silent.port(), pg.port()), {}, -1);
  const auto t0 = steady::now();
  EXPECT_FALSE(s.run("select 1", t0 + 500ms));
  const auto took = steady::now() - t0;
  EXPECT_GE(took, 450ms);
  EXPECT_LT(took, 3s) << "the deadline did not bound the connect";
  EXPECT_NE(s.why().find(std::to_string(silent.port())), std::string::npos) << s.why();
  EXPECT_EQ(s.why().find(pg.password()), std::string::npos) << s.why();
  // One host further: the real server, at once.
  const auto a = s.run("select current_setting('port')", steady::now() + 5s);
  ASSERT_TRUE(a) << s.why();
  EXPECT_EQ(a->at(0), std::to_string(pg.port()));
}

TEST_F(scaleout_probe_session, a_timed_out_probe_drops_its_connection_so_the_next_does_not_wait_behind_it) {
  auto& pg = pgpipe::test::shared_cluster();
  probe_session s(pg.conninfo(), {}, -1);
  const std::string pid = s.run("select pg_backend_pid()", steady::now() + 5s).value().at(0);
  EXPECT_FALSE(s.run("select pg_sleep(30)", steady::now() + 300ms));
  const auto t0 = steady::now();
  const auto a = s.run("select pg_backend_pid()", t0 + 5s);
  ASSERT_TRUE(a) << s.why();
  EXPECT_NE(a->at(0), pid) << "the probe after a timeout ran on the same connection";
  EXPECT_LT(steady::now() - t0, 4s);
  // The abandoned backend goes away (the server notices the closed socket
  // when its sleep ends; terminate it so the shared cluster stays clean).
  pg.exec("select pg_terminate_backend(" + pid + ")");
}

TEST_F(scaleout_probe_session, the_wake_descriptor_ends_a_wait_at_once) {
  silent_listener silent;
  const int wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(wake, 0);
  probe_session s("host=127.0.0.1 port=" + std::to_string(silent.port()) + " user=u dbname=d", {}, wake);
  auto probe = std::async(std::launch::async, [&] { return s.run("select 1", steady::now() + 60s); });
  EXPECT_EQ(probe.wait_for(300ms), std::future_status::timeout) << "the silent host answered?";
  const auto t0 = steady::now();
  const std::uint64_t one = 1;
  ASSERT_EQ(::write(wake, &one, sizeof one), static_cast<ssize_t>(sizeof one));
  ASSERT_EQ(probe.wait_for(5s), std::future_status::ready) << "the wake descriptor did not end the wait";
  EXPECT_FALSE(probe.get());
  EXPECT_LT(steady::now() - t0, 2s);
  ::close(wake);
}

// The pool's connect hooks run before each connect: the password comes from
// before_connect (and is scrubbed like conninfo's), and a callback that
// throws fails that probe with its message, no connection attempted.
TEST_F(scaleout_probe_session, each_connect_takes_its_string_from_the_pools_before_connect) {
  auto& pg = pgpipe::test::shared_cluster();
  int calls = 0;
  bool fail = false;
  pgpipe::detail::connect_hooks hooks;
  hooks.before_connect = [&](const std::string& conninfo) -> std::string {
    ++calls;
    if (fail) throw std::runtime_error("token service down");
    return conninfo + " password='" + pg.password() + "'";
  };
  probe_session s(pg.conninfo_without_password(), hooks, -1);
  const auto a = s.run("select 1", steady::now() + 5s);
  ASSERT_TRUE(a) << s.why();
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(s.run("select 1", steady::now() + 5s)) << s.why();
  EXPECT_EQ(calls, 1) << "a connected session asked for a new string";
  // Dropped by a timeout, the next connect asks again, and fails with the callback's message.
  EXPECT_FALSE(s.run("select pg_sleep(29)", steady::now() + 200ms));
  pg.exec("select pg_terminate_backend(pid) from pg_stat_activity where query = 'select pg_sleep(29)'");
  fail = true;
  EXPECT_FALSE(s.run("select 1", steady::now() + 5s));
  EXPECT_EQ(calls, 2);
  EXPECT_NE(s.why().find("before_connect failed: token service down"), std::string::npos) << s.why();
  fail = false;
  ASSERT_TRUE(s.run("select 1", steady::now() + 5s)) << s.why();
  EXPECT_EQ(calls, 3);
}

}  // namespace
