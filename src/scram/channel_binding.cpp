#include <memory>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/x509.h>

#include <pgpipe/scram/client.hpp>

namespace pgpipe::scram {

expected<std::vector<unsigned char>> tls_server_end_point_hash(std::span<const unsigned char> der_certificate) {
  const unsigned char* p = der_certificate.data();
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      d2i_X509(nullptr, &p, static_cast<long>(der_certificate.size())), &X509_free);
  if (!cert) return make_failure(scram_errc::channel_binding_unsupported, "server certificate is not valid DER");
  // RFC 5929 4.1: the certificate's signature digest, except that MD5 and
  // SHA-1 are replaced by SHA-256.
  int digest_nid = NID_undef;
  if (OBJ_find_sigid_algs(X509_get_signature_nid(cert.get()), &digest_nid, nullptr) == 0 ||
      digest_nid == NID_undef) {
    return make_failure(scram_errc::channel_binding_unsupported,
                        "server certificate signature algorithm has no single digest (e.g. Ed25519 or RSA-PSS); "
                        "tls-server-end-point is undefined for it");
  }
  if (digest_nid == NID_md5 || digest_nid == NID_sha1) digest_nid = NID_sha256;
  const EVP_MD* md = EVP_get_digestbynid(digest_nid);
  if (md == nullptr) {
    return make_failure(scram_errc::channel_binding_unsupported,
                        std::string("digest ") + OBJ_nid2sn(digest_nid) + " of the server certificate is unavailable");
  }
  std::vector<unsigned char> out(EVP_MAX_MD_SIZE);
  unsigned int len = 0;
  if (X509_digest(cert.get(), md, out.data(), &len) != 1) {
    return make_failure(scram_errc::crypto_failure, "hashing the server certificate failed");
  }
  out.resize(len);
  return out;
}

}  // namespace pgpipe::scram
