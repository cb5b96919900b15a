// Errors of the SCRAM toolkit, and the small result type its functions return.
//
// Every failure carries a std::error_code in scram_category() (so a caller
// can branch on the exact condition) and a one-line message that names what
// is malformed. No message ever contains a password: the functions that take
// one never quote their input, and the parsers quote only fields that are
// public on the wire (nonces, attribute names), truncated.
#pragma once

#include <cassert>
#include <string>
#include <system_error>
#include <utility>
#include <variant>

#include <pgpipe/error.hpp>

namespace pgpipe::scram {

/// What failed in a SCRAM step (category scram_category()); named apart from
/// pgpipe::errc, the drivers' codes.
enum class scram_errc {
  // Stored verifiers (SCRAM-SHA-256$<iter>:<salt>$<StoredKey>:<ServerKey>).
  verifier_bad_prefix = 1,   ///< does not start with "SCRAM-SHA-256$"
  verifier_bad_format,       ///< the '$' / ':' structure is wrong
  verifier_bad_iterations,   ///< iteration count is not a positive decimal integer
  verifier_bad_salt,         ///< salt is not valid base64 or is empty
  verifier_bad_stored_key,   ///< StoredKey is not base64 of 32 bytes
  verifier_bad_server_key,   ///< ServerKey is not base64 of 32 bytes
  // Arguments.
  bad_argument,              ///< iterations < 1, empty salt, password with NUL, ...
  password_too_long,         ///< more than 1024 bytes (PostgreSQL's limit)
  // The exchange (RFC 5802 / 7677).
  bad_state,                 ///< a step was called out of order
  malformed_server_first,    ///< server-first-message does not follow the grammar
  nonce_mismatch,            ///< server nonce does not extend the client nonce
  bad_server_salt,           ///< s= is not valid non-empty base64
  bad_server_iterations,     ///< i= is not a positive decimal integer
  iterations_above_cap,      ///< i= is above the client's configured cap
  unsupported_extension,     ///< a mandatory extension (m=) the client cannot honour
  malformed_server_final,    ///< server-final-message does not follow the grammar
  server_error,              ///< server-final-message carried e=<error>
  server_signature_mismatch, ///< v= is not the signature the password implies
  channel_binding_unsupported, ///< cannot compute tls-server-end-point for this certificate
  crypto_failure,            ///< OpenSSL reported an error (out of memory, RNG failure)
};

const std::error_category& scram_category() noexcept;
std::error_code make_error_code(scram_errc e) noexcept;

/// A failed step: the condition and a precise, password-free message.
struct failure {
  std::error_code code;  ///< a scram_errc (or a system error from the transport)
  std::string message;   ///< what went wrong, for a person; never holds the password
};

/// Either a value or a failure (std::expected is C++23). Not thread-safe to
/// share mutably; copyable when T is.
template <class T>
class expected {
 public:
  /// A success holding `value` (implicit, so a function can `return value;`).
  expected(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  /// A failure (implicit, so a function can `return make_failure(...);`).
  expected(failure f) : v_(std::move(f)) {}    // NOLINT
  /// True when it holds a value.
  ///@{
  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }
  ///@}
  /// The value; precondition has_value().
  ///@{
  T& operator*() { assert(has_value()); return std::get<0>(v_); }
  const T& operator*() const { assert(has_value()); return std::get<0>(v_); }
  T* operator->() { return &**this; }
  const T* operator->() const { return &**this; }
  ///@}
  /// The value, or throws pgpipe::error(code, message) (a std::system_error)
  /// when there is none.
  T& value() {
    if (!has_value()) throw pgpipe::error(error().code, error().message);
    return std::get<0>(v_);
  }
  /// The failure; precondition !has_value().
  const failure& error() const { assert(!has_value()); return std::get<1>(v_); }

 private:
  std::variant<T, failure> v_;
};

/// expected<void>: success or a failure.
template <>
class expected<void> {
 public:
  expected() = default;
  /// A failure (implicit, so a function can `return make_failure(...);`).
  expected(failure f) : f_(std::move(f)), failed_(true) {}  // NOLINT
  /// True on success.
  ///@{
  bool has_value() const noexcept { return !failed_; }
  explicit operator bool() const noexcept { return has_value(); }
  ///@}
  /// Throws pgpipe::error(code, message) on failure.
  void value() const {
    if (failed_) throw pgpipe::error(f_.code, f_.message);
  }
  /// The failure; precondition !has_value().
  const failure& error() const { assert(failed_); return f_; }

 private:
  failure f_;
  bool failed_ = false;
};

/// Shorthand used by the implementation and handy for callers' own checks.
inline failure make_failure(scram_errc e, std::string message) {
  return failure{make_error_code(e), std::move(message)};
}

/// The toolkit's former names, which read like pgpipe::errc and pgpipe::result
/// (the drivers' error codes and query results); kept for source
/// compatibility only.
///@{
using errc [[deprecated("use pgpipe::scram::scram_errc")]] = scram_errc;
template <class T>
using result [[deprecated("use pgpipe::scram::expected")]] = expected<T>;
///@}

}  // namespace pgpipe::scram

/// @cond
template <>
struct std::is_error_code_enum<pgpipe::scram::scram_errc> : std::true_type {};
/// @endcond
