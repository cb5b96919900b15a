#include "support/tls_certs.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <fstream>
#include <memory>
#include <stdexcept>

namespace pgpipe::test {
namespace {

template <class T, void (*Free)(T*)>
struct ossl_deleter {
  void operator()(T* p) const noexcept { Free(p); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, ossl_deleter<EVP_PKEY, EVP_PKEY_free>>;
using x509_ptr = std::unique_ptr<X509, ossl_deleter<X509, X509_free>>;
using bio_ptr = std::unique_ptr<BIO, ossl_deleter<BIO, BIO_free_all>>;
using ext_ptr = std::unique_ptr<X509_EXTENSION, ossl_deleter<X509_EXTENSION, X509_EXTENSION_free>>;

[[noreturn]] void fail(const std::string& what) {
  unsigned long code = ERR_get_error();
  char buf[256] = "";
  if (code != 0) ERR_error_string_n(code, buf, sizeof buf);
  ERR_clear_error();
  throw std::runtime_error("tls_certs: " + what + (code ? std::string(": ") + buf : ""));
}

void check(int ok, const char* what) {
  if (ok != 1) fail(what);
}

pkey_ptr new_key(cert_kind kind) {
  EVP_PKEY* key = nullptr;
  switch (kind) {
    case cert_kind::ecdsa_p256_sha256: key = EVP_EC_gen("P-256"); break;
    case cert_kind::ecdsa_p384_sha384: key = EVP_EC_gen("P-384"); break;
    case cert_kind::rsa_sha256:
    case cert_kind::rsa_pss_sha512: key = EVP_RSA_gen(2048); break;
    case cert_kind::ed25519: key = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"); break;
  }
  if (!key) fail(std::string("key generation for ") + name_of(kind));
  return pkey_ptr(key);
}

// Signs `cert` with `key` the way `kind` says.
void sign(X509* cert, EVP_PKEY* key, cert_kind kind, const char* what) {
  using md_ctx_ptr = std::unique_ptr<EVP_MD_CTX, ossl_deleter<EVP_MD_CTX, EVP_MD_CTX_free>>;
  md_ctx_ptr ctx(EVP_MD_CTX_new());
  if (!ctx) fail("EVP_MD_CTX_new");
  const EVP_MD* md = nullptr;  // Ed25519 signs the message itself
  if (kind == cert_kind::ecdsa_p256_sha256 || kind == cert_kind::rsa_sha256) md = EVP_sha256();
  if (kind == cert_kind::ecdsa_p384_sha384) md = EVP_sha384();
  if (kind == cert_kind::rsa_pss_sha512) md = EVP_sha512();
  EVP_PKEY_CTX* pctx = nullptr;
  check(EVP_DigestSignInit(ctx.get(), &pctx, md, nullptr, key), what);
  if (kind == cert_kind::rsa_pss_sha512) {
    if (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) <= 0 ||
        EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) <= 0 ||
        EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, EVP_sha512()) <= 0) {
      fail(std::string(what) + ": RSA-PSS parameters");
    }
  }
  if (X509_sign_ctx(cert, ctx.get()) <= 0) fail(what);
}

void add_ext(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  ext_ptr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  if (!ext) fail("X509V3_EXT_conf_nid " + value);
  check(X509_add_ext(cert, ext.get(), -1), "X509_add_ext");
}

x509_ptr new_cert(const std::string& common_name, EVP_PKEY* subject_key) {
  x509_ptr cert(X509_new());
  if (!cert) fail("X509_new");
  check(X509_set_version(cert.get(), 2), "X509_set_version");
  // Random serial: verifiers may cache by issuer+serial across test runs.
  unsigned char serial_bytes[16];
  check(RAND_bytes(serial_bytes, sizeof serial_bytes), "RAND_bytes");
  serial_bytes[0] &= 0x7f;
  std::unique_ptr<BIGNUM, ossl_deleter<BIGNUM, BN_free>> bn(BN_bin2bn(serial_bytes, sizeof serial_bytes, nullptr));
  if (!bn || !BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert.get()))) fail("serial");
  if (!X509_gmtime_adj(X509_getm_notBefore(cert.get()), -24L * 3600) ||
      !X509_gmtime_adj(X509_getm_notAfter(cert.get()), 30L * 24 * 3600)) {
    fail("validity");
  }
  check(X509_set_pubkey(cert.get(), subject_key), "X509_set_pubkey");
  X509_NAME* name = X509_get_subject_name(cert.get());
  check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                   reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1, 0),
        "subject CN");
  return cert;
}

std::string to_pem(X509* cert) {
  bio_ptr bio(BIO_new(BIO_s_mem()));
  if (!bio) fail("BIO_new");
  check(PEM_write_bio_X509(bio.get(), cert), "PEM_write_bio_X509");
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(len));
}

std::string to_pem(EVP_PKEY* key) {
  bio_ptr bio(BIO_new(BIO_s_mem()));
  if (!bio) fail("BIO_new");
  check(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr), "PEM_write_bio_PrivateKey");
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(len));
}

bool is_ip_address(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

const char* name_of(cert_kind kind) {
  switch (kind) {
    case cert_kind::ecdsa_p256_sha256: return "ecdsa_p256_sha256";
    case cert_kind::rsa_sha256: return "rsa_sha256";
    case cert_kind::rsa_pss_sha512: return "rsa_pss_sha512";
    case cert_kind::ecdsa_p384_sha384: return "ecdsa_p384_sha384";
    case cert_kind::ed25519: return "ed25519";
  }
  return "unknown";
}

tls_files make_tls_files(const std::string& host, cert_kind kind) {
  auto ca_key = new_key(kind);
  auto ca = new_cert("pgpipe test CA", ca_key.get());
  check(X509_set_issuer_name(ca.get(), X509_get_subject_name(ca.get())), "CA issuer");
  add_ext(ca.get(), ca.get(), NID_basic_constraints, "critical,CA:TRUE");
  add_ext(ca.get(), ca.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
  add_ext(ca.get(), ca.get(), NID_subject_key_identifier, "hash");
  sign(ca.get(), ca_key.get(), kind, "sign CA");

  auto server_key = new_key(kind);
  auto server = new_cert(host, server_key.get());
  check(X509_set_issuer_name(server.get(), X509_get_subject_name(ca.get())), "server issuer");
  add_ext(server.get(), ca.get(), NID_basic_constraints, "critical,CA:FALSE");
  add_ext(server.get(), ca.get(), NID_key_usage, "critical,digitalSignature,keyEncipherment");
  add_ext(server.get(), ca.get(), NID_ext_key_usage, "serverAuth");
  add_ext(server.get(), ca.get(), NID_subject_alt_name, (is_ip_address(host) ? "IP:" : "DNS:") + host);
  add_ext(server.get(), ca.get(), NID_authority_key_identifier, "keyid:always");
  sign(server.get(), ca_key.get(), kind, "sign server");

  tls_files files;
  files.ca_cert_pem = to_pem(ca.get());
  files.server_cert_pem = to_pem(server.get());
  files.server_key_pem = to_pem(server_key.get());
  return files;
}

tls_files enable_tls(devcluster::cluster& cluster, const std::string& host, cert_kind kind) {
  tls_files files = make_tls_files(host, kind);
  cluster.write_data_file("server.crt", files.server_cert_pem, 0644);
  cluster.write_data_file("server.key", files.server_key_pem, 0600);
  files.ca_cert_path = cluster.base_dir() + "/ca.crt";
  {
    std::ofstream out(files.ca_cert_path, std::ios::trunc);
    out << files.ca_cert_pem;
    if (!out.flush()) throw std::runtime_error("tls_certs: cannot write " + files.ca_cert_path);
  }
  cluster.append_conf("ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'");
  if (cluster.running()) cluster.reload();
  return files;
}

}  // namespace pgpipe::test
