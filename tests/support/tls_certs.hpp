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

/// A new CA (P-256, valid 1 day back and 30 days forward) and a server
/// certificate for `host`, with `host` as CN and in subjectAltName (as an IP
/// address when it parses as one, else as a DNS name). Throws
/// std::runtime_error on OpenSSL failure. Thread-safe.
tls_files make_tls_files(const std::string& host);

/// make_tls_files(host), writes server.crt/server.key (0600, server-owned)
/// into the data directory and ca.crt into base_dir(), sets ssl = on and
/// reloads the server (SSL settings apply on reload since PostgreSQL 10).
tls_files enable_tls(devcluster::cluster& cluster, const std::string& host = "localhost");

}  // namespace pgpipe::test
