// connect_timeout per host in a multi-host string, both drivers: a first host
// that accepts TCP but never answers (a hung server, a half-dead machine)
// costs one connect_timeout, then the second host serves. libpq applies the
// timeout per host in the blocking driver; the async driver walks the hosts
// itself (pq/host_walk.hpp), because libpq 15's nonblocking connect has no
// per-host timeout and the silent host used to eat every whole attempt.
#include "support/cluster_fixture.hpp"
#include "support/driver_adapter.hpp"
#include "support/kit.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

namespace {

using namespace std::chrono_literals;
using pgpipe::test::outcome;

// A loopback port whose listen backlog completes the TCP handshake while
// nobody ever accepts or writes: the client's startup packet goes unanswered.
class silent_listener {
 public:
  silent_listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 64) != 0)
      throw std::runtime_error("silent_listener: cannot listen on loopback");
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~silent_listener() { ::close(fd_); }
  silent_listener(const silent_listener&) = delete;
  silent_listener& operator=(const silent_listener&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A loopback port that answers every login as a server that cannot take
// connections now (a standby still starting, a primary shutting down):
// SSL and GSS requests refused with 'N', then FATAL 57P03 "the database
// system is starting up" and the connection closed.
class starting_up_listener {
 public:
  starting_up_listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 64) != 0)
      throw std::runtime_error("starting_up_listener: cannot listen on loopback");
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~starting_up_listener() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);  // wakes poll()
    thread_.join();
    ::close(fd_);
  }
  starting_up_listener(const starting_up_listener&) = delete;
  starting_up_listener& operator=(const starting_up_listener&) = delete;
  int port() const { return port_; }
  int logins() const { return logins_.load(); }

 private:
  static bool read_n(int c, char* out, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      const ssize_t r = ::recv(c, out + got, n - got, 0);
      if (r <= 0) return false;
      got += static_cast<std::size_t>(r);
    }
    return true;
  }
  void answer(int c) {
    for (;;) {
      char len_bytes[4];
      if (!read_n(c, len_bytes, 4)) return;
      std::uint32_t len;
      std::memcpy(&len, len_bytes, 4);
      len = ntohl(len);
      if (len < 8 || len > 10000) return;
      std::string body(len - 4, '\0');
      if (!read_n(c, body.data(), body.size())) return;
      std::uint32_t code;
      std::memcpy(&code, body.data(), 4);
      code = ntohl(code);
      if (code == 80877103 || code == 80877104) {  // SSLRequest, GSSENCRequest
        ::send(c, "N", 1, MSG_NOSIGNAL);
        continue;
      }
      ++logins_;
      const std::string fields = std::string("SFATAL") + '\0' + "VFATAL" + '\0' + "C57P03" + '\0' +
                                 "Mthe database system is starting up" + '\0' + '\0';
      std::string e = "E";
      const std::uint32_t n = htonl(static_cast<std::uint32_t>(4 + fields.size()));
      e.append(reinterpret_cast<const char*>(&n), 4);
      e += fields;
      ::send(c, e.data(), e.size(), MSG_NOSIGNAL);
      return;
    }
  }
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, -1) <= 0 || stop_) return;
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      answer(c);
      ::close(c);
    }
  }
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> logins_{0};
  std::thread thread_;
};

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
  EXPECT_EQ(o.ec, pgpipe::make_error_code(pgpipe::errc::auth_failed)) << o.text;
  EXPECT_EQ(o.text.find(std::to_string(silent.port())), std::string::npos) << o.text;
  pgpipe::test::expect_no_secret(o.text + d.log(), {"wrong-walk-password"}, "error and log");
}

}  // namespace
