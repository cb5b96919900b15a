// The client side of a SCRAM-SHA-256 / SCRAM-SHA-256-PLUS exchange
// (RFC 5802, RFC 7677) as a sans-IO state machine: it produces the messages
// to send and checks the ones received; moving bytes is the caller's job.
//
//   client c(password, params);
//   send(c.client_first());                   // SASLInitialResponse
//   send(c.client_final(server_first));       // SASLResponse
//   c.verify_server_final(server_final);      // AuthenticationSASLFinal
//
// One client object runs one exchange. Not thread-safe (one owner). Secrets
// (password, SaltedPassword, keys) are wiped with OPENSSL_cleanse when the
// object is destroyed.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <pgpipe/scram/errors.hpp>

namespace pgpipe::scram {

/// Largest iteration count a client accepts from a server by default. A
/// hostile or misconfigured server can otherwise make a client spend
/// unbounded CPU on PBKDF2. 100000 is ~25x PostgreSQL's default of 4096 and
/// costs tens of milliseconds; raise it for servers with scram_iterations
/// set higher (PostgreSQL 16+).
inline constexpr int default_iteration_cap = 100000;

/// What the GS2 header says about channel binding.
enum class channel_binding_mode {
  none,                  ///< "n,,": the client does not support channel binding
  supported_not_used,    ///< "y,,": the client supports it, the server did not offer it
  tls_server_end_point,  ///< "p=tls-server-end-point,,": SCRAM-SHA-256-PLUS
};

/// How a scram::client runs its exchange.
struct client_params {
  /// Sent as `n=<username>` (escaped). PostgreSQL ignores it and uses the
  /// startup packet's user; libpq sends it empty, and so does the default.
  std::string username;
  channel_binding_mode binding = channel_binding_mode::none;  ///< what the GS2 header announces
  /// For tls_server_end_point: the hash of the server certificate
  /// (see tls_server_end_point_hash()). Must be non-empty in that mode.
  std::vector<unsigned char> channel_binding_data;
  /// Server-first iteration counts above this are refused (iterations_above_cap).
  int iteration_cap = default_iteration_cap;
  /// Client nonce. Empty: 18 random bytes, base64 (as libpq). Tests inject a
  /// fixed one; it must be printable ASCII without ','.
  std::string client_nonce;
};

/// The client side of one SCRAM-SHA-256(-PLUS) exchange (RFC 5802/7677),
/// sans-IO: feed it the server's messages, send what it returns. One
/// exchange per object; not thread-safe. The password is wiped on destruction.
class client {
 public:
  /// Where the exchange is: each step is allowed only in its state (else scram_errc::bad_state).
  enum class state { initial, first_sent, final_sent, done, failed };

  /// Copies the password; SASLprep is applied when the proof is computed.
  explicit client(std::string_view password, client_params params = {});
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;
  /// Moves the exchange (and the password); the moved-from client is empty.
  ///@{
  client(client&&) noexcept;
  client& operator=(client&&) noexcept;
  ///@}

  /// "SCRAM-SHA-256-PLUS" in tls_server_end_point mode, else "SCRAM-SHA-256".
  std::string mechanism() const;

  /// client-first-message (gs2-header + client-first-bare).
  /// Errors: bad_state, bad_argument (bad nonce, missing binding data,
  /// unusable password), crypto_failure.
  expected<std::string> client_first();

  /// Validates server-first-message and returns client-final-message.
  /// Errors: bad_state, malformed_server_first, unsupported_extension (m=),
  /// nonce_mismatch, bad_server_salt, bad_server_iterations,
  /// iterations_above_cap, crypto_failure. Any failure moves to state::failed.
  expected<std::string> client_final(std::string_view server_first);

  /// Checks server-final-message: v= must equal the ServerSignature
  /// (constant-time compare). Errors: bad_state, server_error (e=, the
  /// message names the server's error value), malformed_server_final,
  /// server_signature_mismatch.
  expected<void> verify_server_final(std::string_view server_final);

  /// Where the exchange is.
  state current_state() const noexcept { return state_; }
  /// From the server-first-message (iterations, decoded salt bytes); 0
  /// before it was accepted.
  ///@{
  int iterations() const noexcept { return iterations_; }
  std::size_t salt_length() const noexcept { return salt_.size(); }
  ///@}
  /// The nonce this client sent (given or generated).
  const std::string& client_nonce() const noexcept { return client_nonce_; }

 private:
  failure fail(scram_errc e, std::string message);
  failure fail(failure f);
  void wipe() noexcept;

  std::string password_;
  client_params params_;
  state state_ = state::initial;
  std::string gs2_header_;
  std::string client_nonce_;
  std::string client_first_bare_;
  std::vector<unsigned char> salt_;
  int iterations_ = 0;
  std::vector<unsigned char> server_signature_;
};

/// The tls-server-end-point channel-binding data (RFC 5929 section 4.1) for a
/// DER-encoded server certificate: its hash with the certificate signature's
/// digest (for RSA-PSS the digest in the signature's parameters), SHA-256
/// when that digest is MD5 or SHA-1. Fails with channel_binding_unsupported,
/// as libpq does, when the signature has no separate digest (Ed25519,
/// Ed448: RFC 5929 defines no hash for them), with a message that names the
/// algorithm and says what to do. Thread-safe.
expected<std::vector<unsigned char>> tls_server_end_point_hash(std::span<const unsigned char> der_certificate);

}  // namespace pgpipe::scram
