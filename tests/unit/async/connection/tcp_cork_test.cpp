// tcp_cork: which sockets the write pass may cork, and that corking and
// uncorking really set the option (read back with getsockopt). A real
// loopback TCP socket and a Unix-domain pair; no server.
#include "async/connection/tcp_cork.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

using pgpipe::detail::corkable_socket;
using pgpipe::detail::set_tcp_cork;

struct fd_guard {
  int fd;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

int cork_of(int fd) {
  int v = -1;
  socklen_t len = sizeof v;
  EXPECT_EQ(::getsockopt(fd, IPPROTO_TCP, TCP_CORK, &v, &len), 0);
  return v;
}

TEST(tcp_cork, a_tcp_socket_is_corkable_and_the_option_follows_the_calls) {
  fd_guard s{::socket(AF_INET, SOCK_STREAM, 0)};
  ASSERT_GE(s.fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_TRUE(corkable_socket(s.fd));
  EXPECT_EQ(cork_of(s.fd), 0);
  EXPECT_TRUE(set_tcp_cork(s.fd, true));
  EXPECT_EQ(cork_of(s.fd), 1);
  EXPECT_TRUE(set_tcp_cork(s.fd, false));
  EXPECT_EQ(cork_of(s.fd), 0) << "uncorked: what was held goes out";
}

TEST(tcp_cork, an_ipv6_tcp_socket_is_corkable_too) {
  fd_guard s{::socket(AF_INET6, SOCK_STREAM, 0)};
  if (s.fd < 0) GTEST_SKIP() << "no IPv6 on this machine";
  EXPECT_TRUE(corkable_socket(s.fd));
}

TEST(tcp_cork, unix_sockets_and_bad_descriptors_are_not) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  fd_guard a{pair[0]}, b{pair[1]};
  EXPECT_FALSE(corkable_socket(a.fd)) << "a Unix-domain socket has no TCP_CORK";
  EXPECT_FALSE(corkable_socket(-1));
  EXPECT_FALSE(set_tcp_cork(a.fd, true)) << "the system refuses it, and the caller then does not uncork";
}

}  // namespace
