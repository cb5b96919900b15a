// The byte pipe under the probe: a TCP or Unix socket, optionally wrapped in
// TLS, with a timeout on connecting and on every wait. Internal to the scram
// layer. Errors are returned as messages (empty string: success); none of
// them can contain a password, since no password passes through here except
// inside protocol messages, which are never quoted.
#pragma once

#include <chrono>
#include <string>
#include <vector>

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace pgpipe::scram::detail {

struct tls_options {
  std::string sslmode;      ///< require, verify-ca, verify-full (prefer behaves like require)
  std::string host;         ///< for SNI and verify-full
  std::string root_cert;    ///< CA file; "" when none
  bool verify_chain = false;
  bool verify_host = false;
  bool sni = true;          ///< send the host name (not an IP literal) as SNI
  bool alpn = false;        ///< offer ALPN "postgresql" and require the server to pick it (direct TLS)
  int min_version = 0;      ///< OpenSSL protocol version bounds (TLS1_2_VERSION...); 0: none
  int max_version = 0;
};

class transport {
 public:
  explicit transport(std::chrono::milliseconds timeout) : timeout_(timeout) {}
  ~transport();
  transport(const transport&) = delete;
  transport& operator=(const transport&) = delete;

  std::string connect_tcp(const std::string& host, const std::string& hostaddr, const std::string& port);
  std::string connect_unix(const std::string& dir, const std::string& port);
  /// TLS handshake on the connected socket; verification per `options`.
  std::string start_tls(const tls_options& options);
  std::string write_all(const std::string& bytes);
  /// Exactly n bytes, or an error (including "server closed the connection").
  std::string read_exact(std::size_t n, std::string& out);
  /// True when bytes are already waiting on the plain socket (used to
  /// refuse data the server sent before the TLS handshake).
  bool plain_data_pending() const;
  /// Best effort: TLS close_notify and close the socket.
  void close() noexcept;

  bool tls() const noexcept { return ssl_ != nullptr; }
  std::string tls_version() const;
  std::string tls_cipher() const;
  /// The server sent a CertificateRequest in the handshake (the probe has
  /// no client certificate to send).
  bool client_certificate_requested() const noexcept { return certificate_requested_; }
  /// DER of the server certificate (empty without TLS).
  std::vector<unsigned char> peer_certificate_der() const;

 private:
  /// Waits for readability (want_write=false) or writability; "" or an error.
  std::string wait(bool want_write, const char* what) const;

  std::chrono::milliseconds timeout_;
  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  bool certificate_requested_ = false;
};

}  // namespace pgpipe::scram::detail
