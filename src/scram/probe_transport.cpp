#include "scram/probe_transport.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace pgpipe::scram::detail {
namespace {

std::string openssl_error(const std::string& what) {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return what;
  char buf[256] = "";
  ERR_error_string_n(code, buf, sizeof buf);
  return what + ": " + buf;
}

bool set_nonblocking(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

int poll_ms(std::chrono::milliseconds t) {
  return t.count() > 0x7fffffff ? 0x7fffffff : static_cast<int>(t.count());
}

bool is_ip_literal(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

transport::~transport() { close(); }

void transport::close() noexcept {
  if (ssl_ != nullptr) {
    SSL_shutdown(ssl_);  // one-way close_notify; the socket is non-blocking so this cannot hang
    SSL_free(ssl_);
    ssl_ = nullptr;
  }
  if (ctx_ != nullptr) {
    SSL_CTX_free(ctx_);
    ctx_ = nullptr;
  }
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  ERR_clear_error();
}

std::string transport::wait(bool want_write, const char* what) const {
  pollfd p{fd_, static_cast<short>(want_write ? POLLOUT : POLLIN), 0};
  for (;;) {
    const int rc = ::poll(&p, 1, poll_ms(timeout_));
    if (rc > 0) return {};
    if (rc == 0) {
      return std::string("timed out after ") + std::to_string(timeout_.count()) + " ms " + what;
    }
    if (errno != EINTR) return std::string("poll: ") + std::strerror(errno);
  }
}

std::string transport::connect_tcp(const std::string& host, const std::string& hostaddr, const std::string& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (!hostaddr.empty()) hints.ai_flags = AI_NUMERICHOST;
  addrinfo* list = nullptr;
  const std::string& target = hostaddr.empty() ? host : hostaddr;
  const int gai = getaddrinfo(target.c_str(), port.c_str(), &hints, &list);
  if (gai != 0) return "could not resolve host \"" + target + "\": " + gai_strerror(gai);
  std::string last_error = "no address for host \"" + target + "\"";
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_error = std::string("socket: ") + std::strerror(errno);
      continue;
    }
    if (!set_nonblocking(fd)) {
      last_error = std::string("fcntl: ") + std::strerror(errno);
      ::close(fd);
      continue;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fd_ = fd;
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last_error = "connect to " + target + ":" + port + ": " + std::strerror(errno);
        ::close(fd);
        fd_ = -1;
        continue;
      }
      if (auto e = wait(true, "connecting"); !e.empty()) {
        last_error = "connect to " + target + ":" + port + ": " + e;
        ::close(fd);
        fd_ = -1;
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        last_error = "connect to " + target + ":" + port + ": " + std::strerror(err);
        ::close(fd);
        fd_ = -1;
        continue;
      }
    }
    freeaddrinfo(list);
    return {};
  }
  freeaddrinfo(list);
  return last_error;
}

std::string transport::connect_unix(const std::string& dir, const std::string& port) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = dir + "/.s.PGSQL." + port;
  if (path.size() >= sizeof addr.sun_path) return "Unix socket path \"" + path + "\" is too long";
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::string("socket: ") + std::strerror(errno);
  fd_ = fd;
  if (!set_nonblocking(fd)) return std::string("fcntl: ") + std::strerror(errno);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno != EINPROGRESS && errno != EAGAIN) return "connect to " + path + ": " + std::strerror(errno);
    if (auto e = wait(true, "connecting"); !e.empty()) return "connect to " + path + ": " + e;
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return "connect to " + path + ": " + std::strerror(err);
  }
  return {};
}

std::string transport::start_tls(const tls_options& o) {
  ERR_clear_error();
  ctx_ = SSL_CTX_new(TLS_client_method());
  if (ctx_ == nullptr) return openssl_error("SSL_CTX_new");
  if (o.min_version != 0 && SSL_CTX_set_min_proto_version(ctx_, o.min_version) != 1) {
    return openssl_error("could not set minimum SSL protocol version");
  }
  if (o.max_version != 0 && SSL_CTX_set_max_proto_version(ctx_, o.max_version) != 1) {
    return openssl_error("could not set maximum SSL protocol version");
  }
  // Called when the server asks for a client certificate: sslcertmode=require
  // needs to know (libpq fails differently whether it was asked or not).
  SSL_CTX_set_cert_cb(
      ctx_,
      [](SSL*, void* arg) {
        *static_cast<bool*>(arg) = true;
        return 1;
      },
      &certificate_requested_);
  if (o.verify_chain) {
    if (o.root_cert.empty()) {
      return "sslmode=" + o.sslmode + " needs a root certificate (sslrootcert) to verify the server";
    }
    if (SSL_CTX_load_verify_locations(ctx_, o.root_cert.c_str(), nullptr) != 1) {
      return openssl_error("could not load root certificate file \"" + o.root_cert + "\"");
    }
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
  } else {
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);
  }
  ssl_ = SSL_new(ctx_);
  if (ssl_ == nullptr) return openssl_error("SSL_new");
  if (SSL_set_fd(ssl_, fd_) != 1) return openssl_error("SSL_set_fd");
  // SNI as libpq sends it with sslsni=1: host names only, not IP literals.
  if (o.sni && !o.host.empty() && o.host.front() != '/' && !is_ip_literal(o.host)) {
    SSL_set_tlsext_host_name(ssl_, o.host.c_str());
  }
  static const unsigned char alpn_postgresql[] = {10, 'p', 'o', 's', 't', 'g', 'r', 'e', 's', 'q', 'l'};
  if (o.alpn && SSL_set_alpn_protos(ssl_, alpn_postgresql, sizeof alpn_postgresql) != 0) {
    return openssl_error("could not set SSL ALPN extension");
  }
  if (o.verify_host) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
    const int ok = is_ip_literal(o.host) ? X509_VERIFY_PARAM_set1_ip_asc(param, o.host.c_str())
                                         : X509_VERIFY_PARAM_set1_host(param, o.host.c_str(), 0);
    if (ok != 1) return openssl_error("cannot check the server certificate against host \"" + o.host + "\"");
  }
  for (;;) {
    ERR_clear_error();
    const int rc = SSL_connect(ssl_);
    if (rc == 1) break;
    const int err = SSL_get_error(ssl_, rc);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      if (auto e = wait(err == SSL_ERROR_WANT_WRITE, "in the TLS handshake"); !e.empty()) return e;
      continue;
    }
    const long verify = SSL_get_verify_result(ssl_);
    if (verify != X509_V_OK) {
      return std::string("server certificate verification failed: ") + X509_verify_cert_error_string(verify);
    }
    return openssl_error("TLS handshake failed");
  }
  if (o.alpn) {
    // libpq's words: a server that skipped ALPN may not be PostgreSQL at all.
    const unsigned char* selected = nullptr;
    unsigned int length = 0;
    SSL_get0_alpn_selected(ssl_, &selected, &length);
    if (selected == nullptr) return "direct SSL connection was established without ALPN protocol negotiation extension";
    if (length != sizeof alpn_postgresql - 1 || std::memcmp(selected, alpn_postgresql + 1, length) != 0) {
      return "SSL connection was established with unexpected ALPN protocol";
    }
  }
  return {};
}

std::string transport::write_all(const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    if (ssl_ != nullptr) {
      ERR_clear_error();
      const int n = SSL_write(ssl_, bytes.data() + done, static_cast<int>(bytes.size() - done));
      if (n > 0) {
        done += static_cast<std::size_t>(n);
        continue;
      }
      const int err = SSL_get_error(ssl_, n);
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        if (auto e = wait(err == SSL_ERROR_WANT_WRITE, "sending to the server"); !e.empty()) return e;
        continue;
      }
      return openssl_error("TLS write failed");
    }
    const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (auto e = wait(true, "sending to the server"); !e.empty()) return e;
    } else if (n < 0 && errno != EINTR) {
      return std::string("send: ") + std::strerror(errno);
    }
  }
  return {};
}

std::string transport::read_exact(std::size_t n, std::string& out) {
  out.resize(n);
  std::size_t done = 0;
  while (done < n) {
    if (ssl_ != nullptr) {
      ERR_clear_error();
      const int r = SSL_read(ssl_, out.data() + done, static_cast<int>(n - done));
      if (r > 0) {
        done += static_cast<std::size_t>(r);
        continue;
      }
      const int err = SSL_get_error(ssl_, r);
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        if (auto e = wait(err == SSL_ERROR_WANT_WRITE, "waiting for the server"); !e.empty()) return e;
        continue;
      }
      if (err == SSL_ERROR_ZERO_RETURN || err == SSL_ERROR_SYSCALL) return "server closed the connection";
      return openssl_error("TLS read failed");
    }
    const ssize_t r = ::recv(fd_, out.data() + done, n - done, 0);
    if (r > 0) {
      done += static_cast<std::size_t>(r);
    } else if (r == 0) {
      return "server closed the connection";
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (auto e = wait(false, "waiting for the server"); !e.empty()) return e;
    } else if (errno != EINTR) {
      return std::string("recv: ") + std::strerror(errno);
    }
  }
  return {};
}

bool transport::plain_data_pending() const {
  char c;
  return ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

std::string transport::tls_version() const { return ssl_ ? SSL_get_version(ssl_) : ""; }
std::string transport::tls_cipher() const { return ssl_ ? SSL_get_cipher_name(ssl_) : ""; }

std::vector<unsigned char> transport::peer_certificate_der() const {
  if (ssl_ == nullptr) return {};
  X509* cert = SSL_get1_peer_certificate(ssl_);
  if (cert == nullptr) return {};
  unsigned char* der = nullptr;
  const int len = i2d_X509(cert, &der);
  X509_free(cert);
  if (len <= 0) return {};
  std::vector<unsigned char> out(der, der + len);
  OPENSSL_free(der);
  return out;
}

}  // namespace pgpipe::scram::detail
