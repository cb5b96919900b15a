// Loopback listeners that play a server that does not answer as one should,
// for tests of the host walk and the routers' probes: one that never
// answers, one that answers every login with 57P03.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

namespace pgpipe::test {

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

}  // namespace pgpipe::test
