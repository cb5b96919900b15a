// Multi-host connection strings through both drivers: libpq tries the hosts
// in order, and target_session_attrs picks the primary or a standby. The
// drivers hand the whole string to libpq; these tests check that nothing of
// ours (conninfo checks, redaction, error classification, the pool's
// back-off) gets in the way.
#include "support/cluster_fixture.hpp"
#include "support/driver_adapter.hpp"
#include "support/kit.hpp"
#include "support/standby.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace {

using namespace std::chrono_literals;
using pgpipe::test::outcome;

// "host=127.0.0.1,127.0.0.1 port=a,b ..." with `pg`'s superuser.
std::string two_hosts(const pgpipe::devcluster::cluster& pg, int first, int second, const std::string& extra = {}) {
  return "host=127.0.0.1,127.0.0.1 port=" + std::to_string(first) + "," + std::to_string(second) +
         " user=" + pg.user() + " password=" + pg.password() + " dbname=postgres" + (extra.empty() ? "" : " " + extra);
}

template <class Driver>
class scaleout_multihost : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    unsetenv("PGPASSWORD");
    setenv("PGPASSFILE", "/nonexistent/pgpipe-test-pgpass", 1);
  }
};
TYPED_TEST_SUITE(scaleout_multihost, pgpipe::test::drivers, pgpipe::test::driver_names);

TYPED_TEST(scaleout_multihost, first_host_down_connects_to_the_second) {
  auto& pg = pgpipe::test::shared_cluster();
  auto p = pgpipe::test::fault_params(two_hosts(pg, pgpipe::test::refused_port(), pg.port()), 2);
  TypeParam d(p);
  for (int i = 0; i < 5; ++i) {
    outcome o = d.run("select current_setting('port')");
    ASSERT_FALSE(o.ec) << o.text;
    EXPECT_EQ(o.first, std::to_string(pg.port()));
  }
  pgpipe::test::expect_no_secret(d.log(), {pg.password()}, "log");
}

TYPED_TEST(scaleout_multihost, every_host_down_is_a_connect_error_without_the_password) {
  auto& pg = pgpipe::test::shared_cluster();
  auto p = pgpipe::test::fault_params(two_hosts(pg, pgpipe::test::refused_port(), pgpipe::test::refused_port()), 1);
  p.acquire_timeout = 2s;
  TypeParam d(p);
  outcome o = d.run("select 1");
  EXPECT_EQ(o.ec, pgpipe::make_error_code(pgpipe::errc::server_unreachable)) << o.text;
  pgpipe::test::expect_no_secret(o.text + d.log(), {pg.password()}, "error and log");
}

// One primary and one standby for the target_session_attrs cases.
class primary_and_standby {
 public:
  primary_and_standby() : primary_(pgpipe::test::fresh_cluster()), standby_(*primary_) {}
  pgpipe::devcluster::cluster& primary() { return *primary_; }
  pgpipe::test::standby_instance& standby() { return standby_; }

 private:
  std::unique_ptr<pgpipe::devcluster::cluster> primary_;
  pgpipe::test::standby_instance standby_;
};

TYPED_TEST(scaleout_multihost, target_session_attrs_picks_the_primary_or_the_standby) {
  PGPIPE_SKIP_WITHOUT_STANDBY();
  primary_and_standby c;
  const int primary = c.primary().port();
  const int standby = c.standby().port();
  {
    // Standby listed first: read-write skips it.
    TypeParam d(pgpipe::test::fault_params(two_hosts(c.primary(), standby, primary, "target_session_attrs=read-write"), 2));
    outcome o = d.run("select pg_is_in_recovery()::text");
    ASSERT_FALSE(o.ec) << o.text;
    EXPECT_EQ(o.first, "false");
    o = d.run("create table written_here (v int)");
    EXPECT_FALSE(o.ec) << o.text;
  }
  {
    TypeParam d(pgpipe::test::fault_params(two_hosts(c.primary(), primary, standby, "target_session_attrs=standby"), 2));
    outcome o = d.run("select pg_is_in_recovery()::text");
    ASSERT_FALSE(o.ec) << o.text;
    EXPECT_EQ(o.first, "true");
    o = d.run("select current_setting('port')");
    EXPECT_EQ(o.first, std::to_string(standby));
  }
  {
    // prefer-standby falls back to the primary when the standby is down.
    c.standby().cluster().stop(pgpipe::devcluster::stop_mode::immediate);
    TypeParam d(pgpipe::test::fault_params(two_hosts(c.primary(), standby, primary, "target_session_attrs=prefer-standby"), 2));
    outcome o = d.run("select pg_is_in_recovery()::text");
    ASSERT_FALSE(o.ec) << o.text;
    EXPECT_EQ(o.first, "false");
  }
  {
    // Nothing but a primary left: a standby-only pool cannot connect, and says so.
    auto p = pgpipe::test::fault_params(two_hosts(c.primary(), standby, primary, "target_session_attrs=standby"), 1);
    p.acquire_timeout = 2s;
    TypeParam d(p);
    outcome o = d.run("select 1");
    EXPECT_TRUE(o.ec);
    EXPECT_NE(o.text.find("standby"), std::string::npos) << o.text;
    pgpipe::test::expect_no_secret(o.text + d.log(), {c.primary().password()}, "error and log");
  }
}

}  // namespace
