// libpq_socket: see libpq_socket.hpp.
#include "async/connection/libpq_socket.hpp"

#include <fcntl.h>
#include <unistd.h>

namespace pgpipe::detail {

void release_descriptor(boost::asio::posix::stream_descriptor& sd) noexcept {
  boost::system::error_code ignored;
  if (sd.is_open()) sd.close(ignored);
}

std::optional<boost::asio::posix::stream_descriptor> watch_libpq_socket(const boost::asio::any_io_executor& ex,
                                                                        PGconn* pg) {
  return watch_socket_copy(ex, pg ? PQsocket(pg) : -1);
}

std::optional<boost::asio::posix::stream_descriptor> watch_socket_copy(const boost::asio::any_io_executor& ex,
                                                                       int fd) {
  if (fd < 0) return std::nullopt;
  const int mine = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (mine < 0) return std::nullopt;
  std::optional<boost::asio::posix::stream_descriptor> sd(std::in_place, ex);
  boost::system::error_code ec;
  sd->assign(mine, ec);
  if (ec) {
    ::close(mine);
    return std::nullopt;
  }
  return sd;
}

}  // namespace pgpipe::detail
