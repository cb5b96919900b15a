// Test certificates made with the OpenSSL API (no `openssl` command needed):
// a throwaway CA and a server certificate for a host name, installed into a
// devcluster so tests can use sslmode=verify-full.
#pragma once

#include "devcluster/devcluster.hpp"

#include <string>

namespace pgpipe::test {

struct tls_files {
  std::string ca_cert_pem;      // the CA certificate (PEM)
  std::string ca_cert_path;     // written to the cluster's base_dir(): use as sslrootcert
  std::string server_cert_pem;  // the server certificate (PEM), signed by the CA
  std::string server_key_pem;   // its private key (PEM)
};

/// The keys of the CA and the server, and how the CA signs: what decides
/// the server certificate's signature algorithm, hence the hash of
/// tls-server-end-point channel binding (RFC 5929 4.1).
enum class cert_kind {
  ecdsa_p256_sha256,  ///< ecdsa-with-SHA256 (the default)
  rsa_sha256,         ///< RSA 2048, sha256WithRSAEncryption
  rsa_pss_sha512,     ///< RSA 2048, rsassaPss with SHA-512 (the digest is in the parameters)
  ecdsa_p384_sha384,  ///< ecdsa-with-SHA384
  ed25519,            ///< Ed25519: no separate digest, so no tls-server-end-point hash
};

/// "ecdsa_p256_sha256", ...: for test names.
const char* name_of(cert_kind kind);

/// A new CA (valid 1 day back and 30 days forward) and a server certificate
/// for `host`, with `host` as CN and in subjectAltName (as an IP address
/// when it parses as one, else as a DNS name), both keys and the CA's
/// signatures of `kind`. Throws std::runtime_error on OpenSSL failure.
/// Thread-safe.
tls_files make_tls_files(const std::string& host, cert_kind kind = cert_kind::ecdsa_p256_sha256);

/// make_tls_files(host, kind), writes server.crt/server.key (0600,
/// server-owned) into the data directory and ca.crt into base_dir(), sets
/// ssl = on and reloads the server (SSL settings apply on reload since
/// PostgreSQL 10).
tls_files enable_tls(devcluster::cluster& cluster, const std::string& host = "localhost",
                     cert_kind kind = cert_kind::ecdsa_p256_sha256);

}  // namespace pgpipe::test
