// tcp_cork: see tcp_cork.hpp.
#include "async/connection/tcp_cork.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace pgpipe::detail {

bool corkable_socket(int fd) noexcept {
#ifdef TCP_CORK
  if (fd < 0) return false;
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return false;
  return addr.ss_family == AF_INET || addr.ss_family == AF_INET6;
#else
  (void)fd;
  return false;
#endif
}

bool set_tcp_cork(int fd, bool on) noexcept {
#ifdef TCP_CORK
  const int v = on ? 1 : 0;
  return ::setsockopt(fd, IPPROTO_TCP, TCP_CORK, &v, sizeof v) == 0;
#else
  (void)fd;
  (void)on;
  return false;
#endif
}

}  // namespace pgpipe::detail
