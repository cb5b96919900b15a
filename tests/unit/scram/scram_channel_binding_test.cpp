// tls-server-end-point (RFC 5929 4.1): the certificate hashed with its
// signature's digest, SHA-256 in place of MD5 and SHA-1, and refused for
// signatures without a single digest.
#include <gtest/gtest.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <memory>
#include <vector>

#include <pgpipe/scram/client.hpp>

namespace scram = pgpipe::scram;

namespace {

struct cert {
  std::vector<unsigned char> der;
  std::unique_ptr<X509, decltype(&X509_free)> x509{nullptr, &X509_free};
};

// A self-signed certificate for `key_type` ("EC" or "ED25519") signed with
// `md` (nullptr for Ed25519).
cert self_signed(const char* key_type, const EVP_MD* md) {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      std::string(key_type) == "EC" ? EVP_EC_gen("P-256") : EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"),
      &EVP_PKEY_free);
  EXPECT_NE(key, nullptr);
  cert c;
  c.x509.reset(X509_new());
  X509* x = c.x509.get();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), 0);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_set_pubkey(x, key.get());
  X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("test"), -1, -1, 0);
  X509_set_issuer_name(x, X509_get_subject_name(x));
  EXPECT_GT(X509_sign(x, key.get(), md), 0);
  unsigned char* der = nullptr;
  const int len = i2d_X509(x, &der);
  c.der.assign(der, der + len);
  OPENSSL_free(der);
  return c;
}

std::vector<unsigned char> digest(const cert& c, const EVP_MD* md) {
  std::vector<unsigned char> out(EVP_MAX_MD_SIZE);
  unsigned int len = 0;
  X509_digest(c.x509.get(), md, out.data(), &len);
  out.resize(len);
  return out;
}

}  // namespace

TEST(scram_channel_binding, UsesTheSignatureDigest) {
  auto c256 = self_signed("EC", EVP_sha256());
  auto h256 = scram::tls_server_end_point_hash(c256.der);
  ASSERT_TRUE(h256.has_value()) << h256.error().message;
  EXPECT_EQ(*h256, digest(c256, EVP_sha256()));

  auto c384 = self_signed("EC", EVP_sha384());
  auto h384 = scram::tls_server_end_point_hash(c384.der);
  ASSERT_TRUE(h384.has_value());
  EXPECT_EQ(h384->size(), 48u);
  EXPECT_EQ(*h384, digest(c384, EVP_sha384()));
}

TEST(scram_channel_binding, Sha1BecomesSha256) {
  auto c1 = self_signed("EC", EVP_sha1());
  auto h = scram::tls_server_end_point_hash(c1.der);
  ASSERT_TRUE(h.has_value()) << h.error().message;
  EXPECT_EQ(*h, digest(c1, EVP_sha256()));
  EXPECT_NE(*h, digest(c1, EVP_sha1()));
}

TEST(scram_channel_binding, Ed25519HasNoDigestAndIsRefused) {
  auto ed = self_signed("ED25519", nullptr);
  auto h = scram::tls_server_end_point_hash(ed.der);
  ASSERT_FALSE(h.has_value());
  EXPECT_EQ(h.error().code, scram::scram_errc::channel_binding_unsupported);
}

TEST(scram_channel_binding, GarbageIsRefused) {
  const std::vector<unsigned char> junk{0x30, 0x03, 0x01, 0x02};
  auto h = scram::tls_server_end_point_hash(junk);
  ASSERT_FALSE(h.has_value());
  EXPECT_EQ(h.error().code, scram::scram_errc::channel_binding_unsupported);
}
