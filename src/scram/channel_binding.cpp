// tls-server-end-point channel binding data (RFC 5929 4.1): the server
// certificate hashed with the digest of its own signature.
//
// The digest comes from X509_get_signature_info, not from the signature
// OID alone (OBJ_find_sigid_algs): an RSA-PSS signature's OID (rsassaPss)
// names no digest, its parameters do, and libpq and the server read them
// (they too use X509_get_signature_info on OpenSSL 1.1.1 and later), so a
// client that did not would disagree with both. A signature scheme with no
// separate digest (Ed25519, Ed448) has no tls-server-end-point hash at all:
// RFC 5929 defines none, the server offers SCRAM-SHA-256-PLUS anyway, and
// libpq fails ("could not find digest for NID UNDEF"). The message says so
// and what to do, since nothing on the client side can make it bind.
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
  int digest_nid = NID_undef;
  int key_nid = NID_undef;
  if (X509_get_signature_info(cert.get(), &digest_nid, &key_nid, nullptr, nullptr) != 1) {
    return make_failure(scram_errc::channel_binding_unsupported,
                        "the server certificate's signature algorithm is not one OpenSSL knows; "
                        "tls-server-end-point channel binding cannot be computed for it");
  }
  if (digest_nid == NID_undef) {
    const int sig_nid = X509_get_signature_nid(cert.get());
    const char* name = OBJ_nid2sn(key_nid != NID_undef ? key_nid : sig_nid);
    return make_failure(
        scram_errc::channel_binding_unsupported,
        std::string("the server certificate is signed with ") + (name ? name : "an unknown algorithm") +
            ", which has no separate digest: RFC 5929 defines no tls-server-end-point hash for it, so no client can "
            "bind to this server (libpq fails the same way: \"could not find digest for NID UNDEF\"). Connect "
            "with channel_binding=disable, or give the server a certificate signed with RSA, RSA-PSS or ECDSA");
  }
  // RFC 5929 4.1: MD5 and SHA-1 are replaced by SHA-256.
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
