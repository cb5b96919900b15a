// Bad input through the blocking driver (issue 7): every mistake a user can
// make in a connection string, a credential or a query gets an error code
// that names the class of problem and a message that names the problem
// itself; the pool stays usable once the mistake is fixed; and the password
// never appears in any message, diagnostics field or metrics output.
#include <pgpipe/blocking_pool.hpp>

#include "support/cluster_fixture.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>

namespace {

using namespace std::chrono_literals;
using pgpipe::blocking_pool;
using pgpipe::errc;
using pgpipe::pool_params;
using pgpipe::test::shared_cluster;

// Distinctive strings: if one shows up anywhere, it leaked.
constexpr const char* good_password = "Gd-Pw-7c41-xqzv";
constexpr const char* wrong_password = "Wr-Pw-93kq-zzle";
constexpr const char* role = "badinput_b_user";

struct caught {
  bool thrown = false;
  std::error_code ec;
  std::string what;
  pgpipe::diagnostics diag;
};

caught catch_error(const std::function<void()>& fn) {
  caught c;
  try {
    fn();
  } catch (const pgpipe::error& e) {
    c.thrown = true;
    c.ec = e.code();
    c.what = e.what();
    c.diag = e.diag();
  }
  return c;
}

void expect_no_secret(const std::string& text, const std::string& where) {
  for (const char* secret : {good_password, wrong_password}) {
    EXPECT_EQ(text.find(secret), std::string::npos) << "password in " << where << ": " << text;
  }
}

void expect_no_secret(const caught& c) {
  expect_no_secret(c.what, "what()");
  expect_no_secret(c.ec.message(), "error_code::message()");
  for (const auto* f : {&c.diag.severity, &c.diag.sqlstate, &c.diag.message, &c.diag.detail, &c.diag.hint,
                        &c.diag.context, &c.diag.client_message}) {
    expect_no_secret(*f, "diagnostics");
  }
  expect_no_secret(c.diag.to_string(), "diagnostics::to_string()");
}

std::string contains_msg(const std::string& what, const std::string& needle) {
  return "expected \"" + needle + "\" in: " + what;
}
#define EXPECT_MENTIONS(c, needle) \
  EXPECT_NE((c).what.find(needle), std::string::npos) << contains_msg((c).what, needle)

class badinput_blocking : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto& pg = shared_cluster();
    pg.exec(std::string("drop role if exists ") + role);
    pg.exec(std::string("create role ") + role + " login password '" + good_password + "'");
  }
  static std::string conninfo(const std::string& password, const std::string& dbname = "postgres") {
    return "host=127.0.0.1 port=" + std::to_string(shared_cluster().port()) + " user=" + role +
           " password=" + password + " dbname=" + dbname;
  }
  static pool_params params(const std::string& conninfo) {
    pool_params p;
    p.conninfo = conninfo;
    p.max_size = 2;
    p.acquire_timeout = 3s;
    p.connect_timeout = 2s;
    return p;
  }
};

TEST_F(badinput_blocking, malformed_conninfo_names_the_bad_part_without_the_password) {
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
    auto c = catch_error([&] { blocking_pool pool{params(b.conninfo)}; });
    ASSERT_TRUE(c.thrown);
    EXPECT_EQ(c.ec, errc::bad_conninfo) << c.what;
    EXPECT_MENTIONS(c, b.named);
    expect_no_secret(c);
  }
}

TEST_F(badinput_blocking, unknown_host_is_server_unreachable_naming_the_host) {
  blocking_pool pool{params("host=no-such-host.invalid port=5432 user=x password=" + std::string(good_password))};
  auto c = catch_error([&] { pool.exec("select 1"); });
  EXPECT_EQ(c.ec, errc::server_unreachable) << c.what;
  EXPECT_MENTIONS(c, "no-such-host.invalid");
  EXPECT_MENTIONS(c, "could not translate host name");
  expect_no_secret(c);
  expect_no_secret(pgpipe::to_prometheus(pool.stats()), "to_prometheus");
}

int refused_port() {
  // A port that was free a moment ago and that nothing listens on.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

TEST_F(badinput_blocking, refused_port_is_server_unreachable_naming_the_port) {
  const int port = refused_port();
  blocking_pool pool{params("host=127.0.0.1 port=" + std::to_string(port) + " user=x password=" + good_password)};
  auto c = catch_error([&] { pool.exec("select 1"); });
  EXPECT_EQ(c.ec, errc::server_unreachable) << c.what;
  EXPECT_MENTIONS(c, "Connection refused");
  EXPECT_MENTIONS(c, std::to_string(port));
  expect_no_secret(c);
}

TEST_F(badinput_blocking, wrong_password_is_auth_failed_and_the_pool_recovers_once_it_is_fixed) {
  const std::string app_role = std::string(role) + "_pw";
  auto& pg = shared_cluster();
  pg.exec("drop role if exists " + app_role);
  pg.exec("create role " + app_role + " login password '" + good_password + "'");
  blocking_pool pool{params("host=127.0.0.1 port=" + std::to_string(pg.port()) + " dbname=postgres user=" + app_role +
                            " password=" + wrong_password)};
  auto c = catch_error([&] { pool.exec("select 1"); });
  EXPECT_EQ(c.ec, errc::auth_failed) << c.what;
  EXPECT_MENTIONS(c, "password authentication failed");
  EXPECT_MENTIONS(c, app_role);
  expect_no_secret(c);
  expect_no_secret(pgpipe::to_prometheus(pool.stats()), "to_prometheus");
  // The administrator fixes the password: the same pool works.
  pg.exec("alter role " + app_role + " password '" + wrong_password + "'");
  EXPECT_EQ(pool.exec("select 1")[0][0].as<int>(), 1);
  pg.exec("drop role if exists " + app_role);
}

TEST_F(badinput_blocking, wrong_database_is_3D000_naming_it_and_the_pool_recovers_once_it_exists) {
  auto& pg = shared_cluster();
  pg.exec("drop database if exists badinput_b_db");
  blocking_pool pool{params(conninfo(good_password, "badinput_b_db"))};
  auto c = catch_error([&] { pool.exec("select 1"); });
  EXPECT_EQ(pgpipe::sqlstate_of(c.ec), "3D000") << c.ec.message() << ": " << c.what;
  EXPECT_MENTIONS(c, "database \"badinput_b_db\" does not exist");
  expect_no_secret(c);
  pg.exec("create database badinput_b_db");
  EXPECT_EQ(pool.exec("select 1")[0][0].as<int>(), 1);
  pool.close();
}

TEST_F(badinput_blocking, sql_errors_and_bad_parameters_are_named_and_the_pool_stays_usable) {
  blocking_pool pool{params(conninfo(good_password))};
  struct bad_query {
    std::function<void()> run;
    std::string sqlstate;  // expected SQLSTATE, or "" for a client-side code
    errc client;           // when sqlstate is ""
    std::string named;     // what the message must say
  };
  std::string nul_echo;  // what the server got when a NUL byte was not rejected
  const std::vector<bad_query> cases{
      {[&] { pool.exec("selec 1"); }, "42601", {}, "syntax error at or near \"selec\""},
      {[&] { pool.exec("select * from no_such_table_bi"); }, "42P01", {}, "no_such_table_bi"},
      {[&] { pool.exec("select $1::int", std::string("abc")); }, "22P02", {}, "invalid input syntax for type integer"},
      {[&] { pool.exec("select $1::int + $2::int", 1); }, "08P01", {}, "bind message supplies 1 parameters"},
      {[&] { pool.exec("select $1::text", std::string("\xff\xfe bad", 6)); }, "22021", {},
       "invalid byte sequence for encoding \"UTF8\""},
      {[&] { nul_echo = pool.exec("select $1::text", std::string("a\0b", 3))[0][0].as<std::string>(); }, "",
       errc::invalid_argument, "NUL"},
  };
  for (const auto& q : cases) {
    SCOPED_TRACE(q.named);
    auto c = catch_error(q.run);
    EXPECT_TRUE(c.thrown) << "no error" << (nul_echo.empty() ? "" : "; the server received \"" + nul_echo + "\"");
    if (!c.thrown) continue;
    if (!q.sqlstate.empty()) {
      EXPECT_EQ(pgpipe::sqlstate_of(c.ec), q.sqlstate) << c.ec.message() << ": " << c.what;
      EXPECT_EQ(c.diag.sqlstate, q.sqlstate);
    } else {
      EXPECT_EQ(c.ec, q.client) << c.ec.message() << ": " << c.what;
    }
    EXPECT_MENTIONS(c, q.named);
    expect_no_secret(c);
    // Usable afterwards, on the same connections.
    EXPECT_EQ(pool.exec("select 7")[0][0].as<int>(), 7);
  }
  EXPECT_LE(pool.stats().connects, 2u);
  expect_no_secret(pgpipe::to_prometheus(pool.stats()), "to_prometheus");
}

}  // namespace
