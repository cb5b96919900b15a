// Ask a PostgreSQL server how it authenticates a user, and optionally try a
// password, speaking the protocol directly (no libpq connection): TCP or
// Unix socket, SSLRequest (or direct TLS) through OpenSSL, StartupMessage
// v3.0 (v3.2 when max_protocol_version asks), the authentication messages,
// SCRAM through pgpipe::scram::client. It answers as the libpq loaded at
// run time would: the same options, the same checks, the same words.
//
// The probe never sends a password the server would see in clear text (or
// as an MD5 hash that replays like one) unless allow_cleartext is set: a
// probe pointed at the wrong server, or at one downgraded to "password",
// must not leak the secret it was given to test.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <pgpipe/scram/client.hpp>

namespace pgpipe::scram {

/// What probe() connects to and how far it goes.
struct probe_params {
  /// libpq syntax (key=value or postgresql:// URI), parsed with the libpq
  /// loaded at run time (PQconninfoParse), so an option that libpq does not
  /// know is refused as libpq refuses it; unset keys fall back to libpq's
  /// defaults and PG* environment variables (PQconndefaults). Used: host
  /// (first of a list), hostaddr, port, user, dbname, password,
  /// connect_timeout, and every option that changes authentication or TLS
  /// negotiation that the probe speaks: sslmode, sslrootcert, sslsni,
  /// ssl_min/max_protocol_version, channel_binding, and (libpq 16-18)
  /// require_auth, sslcertmode, sslnegotiation, min/max_protocol_version.
  /// The others (sslcert, sslkey, sslpassword, sslcrl, sslcrldir,
  /// requirepeer, gssencmode=require, krbsrvname, gsslib, gssdelegation,
  /// scram_client_key, scram_server_key, oauth_*, service,
  /// sslrootcert=system, and passfile when `password` is not set and the
  /// string has none), when set, make the probe refuse the string
  /// (probe_outcome::invalid_options) naming the option.
  std::string conninfo;
  /// Overrides the conninfo's password. No password at all: the probe
  /// reports what the server asks for and stops before answering.
  std::optional<std::string> password;
  /// Bound on connecting and on each wait for the server; nullopt:
  /// connect_timeout from the conninfo when set, else 10 s.
  std::optional<std::chrono::milliseconds> timeout;
  /// Answer a cleartext or MD5 password request (off: see above).
  bool allow_cleartext = false;
  /// Refuse a server-first-message asking for more PBKDF2 iterations than
  /// this (a hostile server could make the client burn CPU).
  int iteration_cap = default_iteration_cap;
};

enum class auth_method {
  unknown,    ///< the probe stopped before the server asked for anything
  trust,      ///< AuthenticationOk without a question (trust, peer-less local...)
  cleartext,  ///< AuthenticationCleartextPassword (hba "password", or LDAP/RADIUS/PAM)
  md5,        ///< AuthenticationMD5Password
  sasl,       ///< AuthenticationSASL (SCRAM-SHA-256 and maybe -PLUS)
  gss,        ///< GSSAPI / SSPI / Kerberos: not supported by the probe
};

enum class probe_outcome {
  authenticated,        ///< AuthenticationOk after our answer (or trust)
  method_reported,      ///< no password given: the method was found, nothing sent
  cleartext_not_sent,   ///< password given but the server wants cleartext/MD5 and allow_cleartext is off
  rejected,             ///< the server refused (ErrorResponse: see sqlstate, server_message)
  client_error,         ///< the probe failed: network, TLS, protocol, SCRAM check, or a
                        ///< requirement of the connection string the server did not meet
  invalid_options,      ///< the connection string was refused before connecting (libpq's
                        ///< parser, an invalid value, an option the probe does not implement)
};

/// What probe() found out; every field is free of the password.
struct probe_report {
  /// Where the probe went: host, port, user, database and sslmode used.
  ///@{
  std::string host, port, user, dbname, sslmode;
  ///@}
  bool tls = false;             ///< the session ran over TLS
  std::string tls_version;      ///< e.g. "TLSv1.3"
  std::string tls_cipher;       ///< e.g. "TLS_AES_256_GCM_SHA384"

  auth_method method = auth_method::unknown;  ///< what the server asked for
  std::vector<std::string> mechanisms;  ///< AuthenticationSASL list, in server order
  std::string mechanism_used;           ///< mechanism our SASLInitialResponse chose
  std::string channel_binding;          ///< "tls-server-end-point", "supported-not-used" (y), "none" (n)
  int iterations = 0;                   ///< from server-first-message
  std::size_t salt_length = 0;          ///< decoded salt bytes

  /// The authentication and TLS options set away from libpq's defaults,
  /// as "key=value" (e.g. "require_auth=scram-sha-256"): what the probe
  /// honoured. Empty: libpq's defaults throughout.
  std::vector<std::string> options_in_force;
  /// The protocol version the session runs ("3.0", "3.2"); empty when the
  /// probe stopped before the server answered the StartupMessage.
  std::string protocol_version;

  bool password_given = false;  ///< a password was available (given, file, PGPASSWORD or conninfo)
  bool server_signature_verified = false;  ///< SCRAM: v= matched
  probe_outcome outcome = probe_outcome::client_error;  ///< how the probe ended

  /// The server refused the password or the SCRAM proof: 28P01 from
  /// PostgreSQL, and from PgBouncer 08P01 "SASL authentication failed" (or
  /// "password authentication failed"), its code for a failed client login.
  bool password_rejected = false;
  std::string sqlstate;        ///< from an ErrorResponse
  std::string server_message;  ///< its message (and detail)
  std::string session_error;   ///< ErrorResponse after AuthenticationOk (e.g. 3D000 unknown database)
  std::string client_message;  ///< what went wrong on our side (never contains the password)

  /// 0 for authenticated and method_reported, 1 rejected, 2
  /// invalid_options, 3 client_error, 4 cleartext_not_sent (the
  /// pgpipe-scram exit code).
  int exit_code() const noexcept;
};

const char* to_string(auth_method m) noexcept;
const char* to_string(probe_outcome o) noexcept;

/// Runs the probe. Blocks the calling thread; every connect and every wait
/// for the server is bounded by the timeout, so a silent server costs a few
/// timeouts at most. Cancellation: none beyond that bound. Thread-safe (no
/// shared state; OpenSSL 3 needs no locking setup). Never throws for a
/// server or network problem: everything goes into the report (it may throw
/// std::bad_alloc). The password is wiped from the probe's own buffers when
/// it returns; the caller's copy in `params` is the caller's to wipe.
probe_report probe(const probe_params& params);

}  // namespace pgpipe::scram
