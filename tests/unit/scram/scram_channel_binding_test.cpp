// tls-server-end-point (RFC 5929 4.1): the certificate hashed with its
// signature's digest (for RSA-PSS, the one in the signature's parameters),
// SHA-256 in place of MD5 and SHA-1, and refused, saying why and what to do,
// for signatures without a digest (Ed25519, Ed448).
#include <gtest/gtest.h>

#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <memory>
#include <string>
#include <vector>

#include <pgpipe/scram/client.hpp>

#include "scram/probe_wire.hpp"

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

namespace {

// A self-signed RSA certificate signed with RSASSA-PSS over `md`: the
// signature's OID (rsassaPss) names no digest, its parameters do.
cert self_signed_rsa_pss(const EVP_MD* md) {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_RSA_gen(2048), &EVP_PKEY_free);
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
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  EVP_PKEY_CTX* pctx = nullptr;
  EXPECT_EQ(EVP_DigestSignInit(ctx.get(), &pctx, md, nullptr, key.get()), 1);
  EXPECT_GT(EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING), 0);
  EXPECT_GT(EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST), 0);
  EXPECT_GT(EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, md), 0);
  EXPECT_GT(X509_sign_ctx(x, ctx.get()), 0);
  EXPECT_EQ(X509_get_signature_nid(x), NID_rsassaPss);
  unsigned char* der = nullptr;
  const int len = i2d_X509(x, &der);
  c.der.assign(der, der + len);
  OPENSSL_free(der);
  return c;
}

}  // namespace

TEST(scram_channel_binding, RsaPssUsesTheDigestFromTheSignatureParameters) {
  auto pss = self_signed_rsa_pss(EVP_sha512());
  auto h = scram::tls_server_end_point_hash(pss.der);
  ASSERT_TRUE(h.has_value()) << h.error().message;
  EXPECT_EQ(h->size(), 64u);
  EXPECT_EQ(*h, digest(pss, EVP_sha512()));
}

TEST(scram_channel_binding, Ed25519SaysWhyNobodyCanBindAndWhatToDo) {
  auto ed = self_signed("ED25519", nullptr);
  auto h = scram::tls_server_end_point_hash(ed.der);
  ASSERT_FALSE(h.has_value());
  const std::string& m = h.error().message;
  EXPECT_NE(m.find("ED25519"), std::string::npos) << m;
  EXPECT_NE(m.find("RFC 5929"), std::string::npos) << m;
  EXPECT_NE(m.find("channel_binding=disable"), std::string::npos) << m;
}

// The probe's choice with channel_binding=prefer (the default): a server
// offering SCRAM-SHA-256-PLUS whose certificate cannot be bound gets no
// "y" (which it would refuse as a downgrade) but a clear error, as libpq
// fails there too; with disable it gets plain SCRAM.
TEST(scram_channel_binding, AnUnbindableCertificateStopsThePreferredExchangeBeforeItStarts) {
  using pgpipe::scram::detail::choose_sasl;
  auto ed = self_signed("ED25519", nullptr);
  const std::vector<std::string> offered{"SCRAM-SHA-256-PLUS", "SCRAM-SHA-256"};
  for (const char* cb : {"prefer", "require"}) {
    const auto c = choose_sasl(offered, true, cb, ed.der);
    EXPECT_NE(c.error.find("ED25519"), std::string::npos) << cb << ": " << c.error;
    EXPECT_NE(c.error.find("could not find digest for NID UNDEF"), std::string::npos) << cb << ": " << c.error;
  }
  const auto off = choose_sasl(offered, true, "disable", ed.der);
  EXPECT_TRUE(off.error.empty()) << off.error;
  EXPECT_EQ(off.binding, pgpipe::scram::channel_binding_mode::none);
  // A server that does not offer -PLUS over TLS (older, or configured so):
  // "y" is right there.
  const auto plain_only = choose_sasl({"SCRAM-SHA-256"}, true, "prefer", ed.der);
  EXPECT_TRUE(plain_only.error.empty()) << plain_only.error;
  EXPECT_EQ(plain_only.binding, pgpipe::scram::channel_binding_mode::supported_not_used);
  // A bindable certificate binds.
  auto ec = self_signed("EC", EVP_sha384());
  const auto bound = choose_sasl(offered, true, "prefer", ec.der);
  EXPECT_TRUE(bound.error.empty()) << bound.error;
  EXPECT_EQ(bound.binding, pgpipe::scram::channel_binding_mode::tls_server_end_point);
  EXPECT_EQ(bound.binding_data.size(), 48u);
}
