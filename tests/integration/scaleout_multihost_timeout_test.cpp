// connect_timeout per host in a multi-host string, both drivers: a first host
// that accepts TCP but never answers (a hung server, a half-dead machine)
// costs one connect_timeout, then the second host serves. libpq applies the
// timeout per host in the blocking driver; the async driver walks the hosts
// itself (pq/host_walk.hpp), because libpq 15's nonblocking connect has no
// per-host timeout: the silent host would eat every whole attempt.
#include "support/cluster_fixture.hpp"
#include "support/driver_adapter.hpp"
#include "support/fake_listeners.hpp"
#include "support/kit.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace {

using namespace std::chrono_literals;
using pgpipe::test::outcome;
using pgpipe::test::silent_listener;
using pgpipe::test::starting_up_listener;

// "host=127.0.0.1,127.0.0.1 port=first,second ..." as `pg`'s superuser.
std::string two_ports(const pgpipe::devcluster::cluster& pg, int first, int second, const std::string& password) {
  return "host=127.0.0.1,127.0.0.1 port=" + std::to_string(first) + "," + std::to_string(second) +
         " user=" + pg.user() + " password=" + password + " dbname=postgres";
}

template <class Driver>
class scaleout_multihost_timeout : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    unsetenv("PGPASSWORD");
    setenv("PGPASSFILE", "/nonexistent/pgpipe-test-pgpass", 1);
  }
};
TYPED_TEST_SUITE(scaleout_multihost_timeout, pgpipe::test::drivers, pgpipe::test::driver_names);

TYPED_TEST(scaleout_multihost_timeout, a_silent_first_host_costs_one_connect_timeout) {
  auto& pg = pgpipe::test::shared_cluster();
  silent_listener silent;
  auto p = pgpipe::test::fault_params(two_ports(pg, silent.port(), pg.port(), pg.password()), 1);
  p.connect_timeout = 2s;
  // Long enough for one timeout plus the second host, short of the several
  // whole-walk timeouts and back-offs a connect without per-host deadlines
  // would need (which never reach the second host anyway).
  p.acquire_timeout = 8s;
  TypeParam d(p);
  const auto started = std::chrono::steady_clock::now();
  outcome o = d.run("select current_setting('port')");
  const auto took = std::chrono::steady_clock::now() - started;
  ASSERT_FALSE(o.ec) << o.text;
  EXPECT_EQ(o.first, std::to_string(pg.port())) << "served by the second host";
  EXPECT_GE(took, 1900ms) << "the silent host was tried first, for its connect_timeout";
  pgpipe::test::expect_no_secret(o.text + d.log(), {pg.password()}, "error and log");
}

TYPED_TEST(scaleout_multihost_timeout, every_host_silent_names_each_host_without_the_password) {
  auto& pg = pgpipe::test::shared_cluster();
  silent_listener first, second;
  auto p = pgpipe::test::fault_params(two_ports(pg, first.port(), second.port(), pg.password()), 1);
  p.connect_timeout = 2s;
  p.acquire_timeout = 6s;
  TypeParam d(p);
  outcome o = d.run("select 1");
  EXPECT_EQ(o.ec, pgpipe::make_error_code(pgpipe::errc::server_unreachable)) << o.text;
  EXPECT_NE(o.text.find(std::to_string(first.port())), std::string::npos) << o.text;
  EXPECT_NE(o.text.find(std::to_string(second.port())), std::string::npos) << o.text;
  pgpipe::test::expect_no_secret(o.text + d.log(), {pg.password()}, "error and log");
}

TYPED_TEST(scaleout_multihost_timeout, a_server_that_cannot_take_connections_now_sends_the_walk_on_as_in_libpq) {
  // During a failover the old primary may answer 57P03 (shutting down) or a
  // standby still starting may (starting up): libpq tries the next host, so
  // with target_session_attrs=read-write the promoted server is reached.
  auto& pg = pgpipe::test::shared_cluster();
  starting_up_listener starting;
  auto p = pgpipe::test::fault_params(
      two_ports(pg, starting.port(), pg.port(), pg.password()) + " target_session_attrs=read-write", 1);
  p.connect_timeout = 2s;
  p.acquire_timeout = 6s;
  TypeParam d(p);
  outcome o = d.run("select current_setting('port')");
  ASSERT_FALSE(o.ec) << o.text;
  EXPECT_EQ(o.first, std::to_string(pg.port())) << "served by the second host";
  EXPECT_GE(starting.logins(), 1) << "the first host was tried first";
  pgpipe::test::expect_no_secret(o.text + d.log(), {pg.password()}, "error and log");
}

TYPED_TEST(scaleout_multihost_timeout, a_server_refusing_the_login_ends_the_walk_as_in_libpq) {
  // The first host answers with an authentication error: libpq stops there
  // (the next host is most likely configured alike), and so does the async
  // walk; the silent second host is never tried.
  auto& pg = pgpipe::test::shared_cluster();
  silent_listener silent;
  auto p = pgpipe::test::fault_params(two_ports(pg, pg.port(), silent.port(), "wrong-walk-password"), 1);
  p.connect_timeout = 2s;
  p.acquire_timeout = 6s;
  TypeParam d(p);
  outcome o = d.run("select 1");
  EXPECT_EQ(o.ec, pgpipe::errc_condition::auth_error) << o.text;
  EXPECT_EQ(o.text.find(std::to_string(silent.port())), std::string::npos) << o.text;
  pgpipe::test::expect_no_secret(o.text + d.log(), {"wrong-walk-password"}, "error and log");
}

}  // namespace
