// Bad input, the same scenarios for both drivers (written once over
// tests/support/driver_adapter.hpp): every mistake a user can make
// in a connection string, a credential or a query gets an error code that
// names the class of problem and diagnostics that name the problem itself;
// the pool stays usable once the mistake is fixed; and the password never
// appears in any message, diagnostics field, log line or metrics output.
#include "support/cluster_fixture.hpp"
#include "support/driver_adapter.hpp"
#include "support/kit.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>

namespace {

using namespace std::chrono_literals;
using namespace pgpipe::test;  // the shared kit (tests/support)
using pgpipe::errc;

// Distinctive strings: if one shows up anywhere, it leaked.
constexpr const char* good_password = "Gd-Pw-5a19-kqvx";
constexpr const char* wrong_password = "Wr-Pw-27zt-pplm";

void expect_no_password(const std::string& text, const std::string& where) {
  expect_no_secret(text, {good_password, wrong_password}, where);
}

#define EXPECT_MENTIONS(o, needle) \
  EXPECT_NE((o).text.find(needle), std::string::npos) << "expected \"" << (needle) << "\" in: " << (o).text

// A driver plus the checks every scenario makes: each outcome, the metrics
// and the log hold no password.
template <class Driver>
class harness {
 public:
  explicit harness(const std::string& conninfo) : driver_(params(conninfo)) {}
  ~harness() {
    expect_no_password(pgpipe::to_prometheus(driver_.stats()), "to_prometheus");
    expect_no_password(driver_.log(), "logger lines");
  }
  template <class... Args>
  outcome run(std::string_view sql, Args&&... args) {
    outcome o = driver_.run(sql, std::forward<Args>(args)...);
    expect_no_password(o.text, "error/diagnostics");
    return o;
  }
  void expect_usable() {
    auto o = run("select 7");
    EXPECT_FALSE(o.ec) << o.text;
  }
  pgpipe::pool_stats stats() const { return driver_.stats(); }

  static pgpipe::pool_params params(const std::string& conninfo) {
    pgpipe::pool_params p = params_for(conninfo, 2);
    p.acquire_timeout = 3s;
    p.connect_timeout = 2s;
    return p;
  }

 private:
  Driver driver_;
};

template <class Driver>
class badinput : public ::testing::Test {
 protected:
  using harness_t = harness<Driver>;
  // One role and database name per driver, so the two typed suites never
  // share server objects.
  static std::string role() { return std::string("badinput_") + Driver::name + "_user"; }
  static std::string object(const std::string& what) { return "badinput_" + std::string(Driver::name) + "_" + what; }

  static void SetUpTestSuite() {
    auto& pg = shared_cluster();
    pg.exec("drop role if exists " + role());
    pg.exec("create role " + role() + " login password '" + good_password + "'");
  }
  static std::string conninfo(const std::string& user, const std::string& password,
                              const std::string& dbname = "postgres") {
    return "host=127.0.0.1 port=" + std::to_string(shared_cluster().port()) + " user=" + user +
           " password=" + password + " dbname=" + dbname;
  }
};
TYPED_TEST_SUITE(badinput, drivers, driver_names);

TYPED_TEST(badinput, malformed_conninfo_names_the_bad_part_without_the_password) {
  struct bad {
    std::string conninfo;
    std::string named;
  };
  const std::string pw = good_password;
  for (const auto& b : {bad{"host=127.0.0.1 password=" + pw + " no_such_option=1", "no_such_option"},
                        bad{"host=127.0.0.1 password=" + pw + " port", "port"},
                        bad{"host=127.0.0.1 password='" + pw + " port=1", "unterminated"},
                        bad{"postgresql://u:" + pw + "@[::1/db", "URI"},
                        bad{"postgresql://u:" + pw + "@localhost/db?no_such_param=1", "no_such_param"}}) {
    SCOPED_TRACE(b.named);
    std::optional<outcome> o;
    try {
      typename TestFixture::harness_t h(b.conninfo);
      if (TypeParam::checks_conninfo_at_construction) ADD_FAILURE() << "the constructor accepted the conninfo";
      // Accepted by the constructor: the first query must name the problem.
      o = h.run("select 1");
    } catch (const pgpipe::error& e) {
      o = outcome{e.code(), e.diag(), describe(e.code(), e.diag(), e.what()), {}};
      expect_no_password(o->text, "what()/diagnostics");
    }
    EXPECT_EQ(o->ec, errc::bad_conninfo) << o->text;
    EXPECT_MENTIONS(*o, b.named);
  }
}

TYPED_TEST(badinput, unknown_host_is_server_unreachable_naming_the_host) {
  typename TestFixture::harness_t h("host=no-such-host.invalid port=5432 user=x password=" + std::string(good_password));
  auto o = h.run("select 1");
  EXPECT_EQ(o.ec, errc::server_unreachable) << o.text;
  EXPECT_MENTIONS(o, "no-such-host.invalid");
  EXPECT_MENTIONS(o, "could not translate host name");
}

TYPED_TEST(badinput, refused_port_is_server_unreachable_naming_the_port) {
  const int port = refused_port();
  typename TestFixture::harness_t h("host=127.0.0.1 port=" + std::to_string(port) + " user=x password=" +
                                    good_password);
  auto o = h.run("select 1");
  EXPECT_EQ(o.ec, errc::server_unreachable) << o.text;
  EXPECT_MENTIONS(o, "Connection refused");
  EXPECT_MENTIONS(o, std::to_string(port));
}

TYPED_TEST(badinput, wrong_password_is_auth_failed_and_the_pool_recovers_once_it_is_fixed) {
  auto& pg = shared_cluster();
  const std::string user = TestFixture::role() + "_pw";
  pg.exec("drop role if exists " + user);
  pg.exec("create role " + user + " login password '" + good_password + "'");
  {
    typename TestFixture::harness_t h(TestFixture::conninfo(user, wrong_password));
    auto o = h.run("select 1");
    EXPECT_EQ(o.ec, pgpipe::errc_condition::auth_error) << o.text;
    EXPECT_MENTIONS(o, "password authentication failed");
    EXPECT_MENTIONS(o, user);
    // The administrator fixes the password: the same pool works.
    pg.exec("alter role " + user + " password '" + wrong_password + "'");
    h.expect_usable();
  }
  pg.exec("drop role if exists " + user);
}

TYPED_TEST(badinput, wrong_database_is_3D000_naming_it_and_the_pool_recovers_once_it_exists) {
  auto& pg = shared_cluster();
  const std::string db = TestFixture::object("db");
  pg.exec("drop database if exists " + db);
  {
    typename TestFixture::harness_t h(TestFixture::conninfo(TestFixture::role(), good_password, db));
    auto o = h.run("select 1");
    EXPECT_EQ(pgpipe::sqlstate_of(o.ec), "3D000") << o.text;
    EXPECT_MENTIONS(o, "database \"" + db + "\" does not exist");
    pg.exec("create database " + db);
    h.expect_usable();
  }
}

TYPED_TEST(badinput, sql_errors_and_bad_parameters_are_named_and_the_pool_stays_usable) {
  typename TestFixture::harness_t h(TestFixture::conninfo(TestFixture::role(), good_password));
  const std::string table = TestFixture::object("no_such_table");
  auto expect_server_error = [&](const outcome& o, const std::string& sqlstate, const std::string& named) {
    SCOPED_TRACE(named);
    EXPECT_EQ(pgpipe::sqlstate_of(o.ec), sqlstate) << o.text;
    EXPECT_EQ(o.diag.sqlstate, sqlstate) << o.text;
    EXPECT_MENTIONS(o, named);
    h.expect_usable();  // on the same connections (checked below)
  };
  expect_server_error(h.run("selec 1"), "42601", "syntax error at or near \"selec\"");
  expect_server_error(h.run("select * from " + table), "42P01", table);
  expect_server_error(h.run("select $1::int", std::string("abc")), "22P02", "invalid input syntax for type integer");
  expect_server_error(h.run("select $1::int + $2::int", 1), "08P01", "bind message supplies 1 parameters");
  expect_server_error(h.run("select $1::text", std::string("\xff\xfe bad", 6)), "22021",
                      "invalid byte sequence for encoding \"UTF8\"");
  {
    // libpq sends text parameters as C strings: a NUL byte is refused before
    // anything is sent, naming the parameter.
    auto o = h.run("select $1::text, $2::text", std::string("ok"), std::string("a\0b", 3));
    EXPECT_EQ(o.ec, errc::invalid_argument) << o.text;
    EXPECT_MENTIONS(o, "$2");
    EXPECT_MENTIONS(o, "NUL");
    h.expect_usable();
  }
  // Every error above left the sessions in place.
  EXPECT_LE(h.stats().connects, 2u);
}

// The server takes a value of at most 1 GiB - 1 bytes (and its Bind message
// under 1 GiB): a larger parameter is refused before anything is sent,
// naming the parameter and its size, and the sessions stay in place.
TYPED_TEST(badinput, a_parameter_over_1_gib_is_refused_before_sending_naming_it) {
  typename TestFixture::harness_t h(TestFixture::conninfo(TestFixture::role(), good_password));
  h.expect_usable();
  const std::size_t big = (std::size_t{1} << 30) + 1;
  {
    auto o = h.run("select length($1::text), length($2::text)", std::string("ok"), std::string(big, 'x'));
    EXPECT_EQ(o.ec, errc::invalid_argument) << o.text;
    EXPECT_MENTIONS(o, "$2");
    EXPECT_MENTIONS(o, std::to_string(big));
    h.expect_usable();
  }
  {
    // Each value fits, together they exceed what one message carries.
    const std::string half((std::size_t{1} << 29) + 1, 'y');
    auto o = h.run("select length($1::text) + length($2::text)", half, half);
    EXPECT_EQ(o.ec, errc::invalid_argument) << o.text;
    EXPECT_MENTIONS(o, "total");
    h.expect_usable();
  }
  EXPECT_LE(h.stats().connects, 2u);
}

}  // namespace
