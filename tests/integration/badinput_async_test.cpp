// Bad input through the async driver (issue 7): every mistake a user can make
// in a connection string, a credential or a query gets an error code that
// names the class of problem and diagnostics that name the problem itself;
// the client stays usable once the mistake is fixed; and the password never
// appears in any message, diagnostics field, log line or metrics output.
#include <pgpipe/async_client.hpp>

#include "support/cluster_fixture.hpp"

#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pgpipe::errc;
using pgpipe::test::shared_cluster;

constexpr const char* good_password = "Gd-Pw-5a19-kqvx";
constexpr const char* wrong_password = "Wr-Pw-27zt-pplm";
constexpr const char* role = "badinput_a_user";

struct log_sink {
  std::mutex mu;
  std::vector<std::string> lines;
  pgpipe::logger_fn fn() {
    return [this](pgpipe::log_level, std::string_view line) {
      std::lock_guard lk(mu);
      lines.emplace_back(line);
    };
  }
  std::string all() {
    std::lock_guard lk(mu);
    std::string s;
    for (auto& l : lines) s += l + "\n";
    return s;
  }
};

struct outcome {
  std::error_code ec;
  pgpipe::diagnostics diag;
  std::string text;  // code message + every diagnostics field, for "names the problem" checks
};

void expect_no_secret(const std::string& text, const std::string& where) {
  for (const char* secret : {good_password, wrong_password}) {
    EXPECT_EQ(text.find(secret), std::string::npos) << "password in " << where << ": " << text;
  }
}

// A client plus its log, with helpers to run one query synchronously.
struct harness {
  log_sink logs;
  std::unique_ptr<pgpipe::async_client> client;

  explicit harness(const std::string& conninfo) {
    pgpipe::pool_params p;
    p.conninfo = conninfo;
    p.max_size = 2;
    p.acquire_timeout = 3s;
    p.connect_timeout = 2s;
    pgpipe::async_client_options o;
    o.loops = 1;
    o.logger = logs.fn();
    client = std::make_unique<pgpipe::async_client>(p, o);
  }
  ~harness() {
    // Whatever happened, nothing the client said may hold a password.
    if (client) expect_no_secret(pgpipe::to_prometheus(client->stats()), "to_prometheus");
    client.reset();
    expect_no_secret(logs.all(), "logger lines");
  }

  template <class... Args>
  outcome run(std::string_view sql, Args&&... args) {
    auto f = client->async_query(sql, std::forward<Args>(args)..., asio::use_future);
    outcome o;
    if (f.wait_for(30s) != std::future_status::ready) {
      o.ec = make_error_code(std::errc::timed_out);
      o.text = "never completed";
      return o;
    }
    auto [ec, r] = f.get();
    o.ec = ec;
    o.diag = r.diag();
    const auto& d = o.diag;
    o.text = ec.message() + " | " + d.to_string() + " | " + d.severity + " | " + d.sqlstate + " | " + d.message +
             " | " + d.detail + " | " + d.hint + " | " + d.context + " | " + d.client_message;
    expect_no_secret(o.text, "error/diagnostics");
    return o;
  }
  void expect_usable() {
    auto o = run("select 7");
    EXPECT_FALSE(o.ec) << o.text;
  }
};

#define EXPECT_MENTIONS(o, needle) \
  EXPECT_NE((o).text.find(needle), std::string::npos) << "expected \"" << (needle) << "\" in: " << (o).text

class badinput_async : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto& pg = shared_cluster();
    pg.exec(std::string("drop role if exists ") + role);
    pg.exec(std::string("create role ") + role + " login password '" + good_password + "'");
  }
  static std::string conninfo(const std::string& user, const std::string& password, const std::string& dbname = "postgres") {
    return "host=127.0.0.1 port=" + std::to_string(shared_cluster().port()) + " user=" + user +
           " password=" + password + " dbname=" + dbname;
  }
};

TEST_F(badinput_async, malformed_conninfo_names_the_bad_part_without_the_password) {
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
    std::error_code ctor_ec;
    std::string ctor_what;
    try {
      harness h(b.conninfo);
      // Accepted by the constructor: the first query must name the problem.
      auto o = h.run("select 1");
      EXPECT_EQ(o.ec, errc::bad_conninfo) << o.text;
      EXPECT_MENTIONS(o, b.named);
    } catch (const pgpipe::error& e) {
      EXPECT_EQ(e.code(), errc::bad_conninfo) << e.what();
      EXPECT_NE(std::string(e.what()).find(b.named), std::string::npos) << e.what();
      expect_no_secret(e.what(), "what()");
      expect_no_secret(e.diag().to_string(), "diagnostics");
    }
  }
}

TEST_F(badinput_async, unknown_host_is_server_unreachable_naming_the_host) {
  harness h("host=no-such-host.invalid port=5432 user=x password=" + std::string(good_password));
  auto o = h.run("select 1");
  EXPECT_EQ(o.ec, errc::server_unreachable) << o.text;
  EXPECT_MENTIONS(o, "no-such-host.invalid");
  EXPECT_MENTIONS(o, "could not translate host name");
}

int refused_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

TEST_F(badinput_async, refused_port_is_server_unreachable_naming_the_port) {
  const int port = refused_port();
  harness h("host=127.0.0.1 port=" + std::to_string(port) + " user=x password=" + good_password);
  auto o = h.run("select 1");
  EXPECT_EQ(o.ec, errc::server_unreachable) << o.text;
  EXPECT_MENTIONS(o, "Connection refused");
  EXPECT_MENTIONS(o, std::to_string(port));
}

TEST_F(badinput_async, wrong_password_is_auth_failed_and_the_client_recovers_once_it_is_fixed) {
  auto& pg = shared_cluster();
  const std::string user = std::string(role) + "_pw";
  pg.exec("drop role if exists " + user);
  pg.exec("create role " + user + " login password '" + good_password + "'");
  {
    harness h(conninfo(user, wrong_password));
    auto o = h.run("select 1");
    EXPECT_EQ(o.ec, errc::auth_failed) << o.text;
    EXPECT_MENTIONS(o, "password authentication failed");
    EXPECT_MENTIONS(o, user);
    pg.exec("alter role " + user + " password '" + wrong_password + "'");
    h.expect_usable();
  }
  pg.exec("drop role if exists " + user);
}

TEST_F(badinput_async, wrong_database_is_3D000_naming_it_and_the_client_recovers_once_it_exists) {
  auto& pg = shared_cluster();
  pg.exec("drop database if exists badinput_a_db");
  {
    harness h(conninfo(role, good_password, "badinput_a_db"));
    auto o = h.run("select 1");
    EXPECT_EQ(pgpipe::sqlstate_of(o.ec), "3D000") << o.text;
    EXPECT_MENTIONS(o, "database \"badinput_a_db\" does not exist");
    pg.exec("create database badinput_a_db");
    h.expect_usable();
  }
}

TEST_F(badinput_async, sql_errors_and_bad_parameters_are_named_and_the_client_stays_usable) {
  harness h(conninfo(role, good_password));
  {
    auto o = h.run("selec 1");
    EXPECT_EQ(pgpipe::sqlstate_of(o.ec), "42601") << o.text;
    EXPECT_MENTIONS(o, "syntax error at or near \"selec\"");
    h.expect_usable();
  }
  {
    auto o = h.run("select * from no_such_table_ba");
    EXPECT_EQ(pgpipe::sqlstate_of(o.ec), "42P01") << o.text;
    EXPECT_MENTIONS(o, "no_such_table_ba");
    h.expect_usable();
  }
  {
    auto o = h.run("select $1::int", "abc");
    EXPECT_EQ(pgpipe::sqlstate_of(o.ec), "22P02") << o.text;
    EXPECT_MENTIONS(o, "invalid input syntax for type integer");
    h.expect_usable();
  }
  {
    auto o = h.run("select $1::int + $2::int", 1);
    EXPECT_EQ(pgpipe::sqlstate_of(o.ec), "08P01") << o.text;
    EXPECT_MENTIONS(o, "bind message supplies 1 parameters");
    h.expect_usable();
  }
  {
    auto o = h.run("select $1::text", std::string("\xff\xfe bad", 6));
    EXPECT_EQ(pgpipe::sqlstate_of(o.ec), "22021") << o.text;
    EXPECT_MENTIONS(o, "invalid byte sequence for encoding \"UTF8\"");
    h.expect_usable();
  }
  {
    auto o = h.run("select $1::text, $2::text", "ok", std::string("a\0b", 3));
    EXPECT_EQ(o.ec, errc::invalid_argument) << o.text;
    EXPECT_MENTIONS(o, "$2");
    EXPECT_MENTIONS(o, "NUL");
    h.expect_usable();
  }
  // Every error above left the sessions in place.
  EXPECT_LE(h.client->stats().connects, 2u);
}

}  // namespace
