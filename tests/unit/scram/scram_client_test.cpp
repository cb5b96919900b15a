// The client side of the SCRAM exchange, without a server: the RFC 7677 test
// vector end to end, and every way a server-first or server-final message
// can be malformed.
#include <gtest/gtest.h>

#include <string>

#include <pgpipe/scram/base64.hpp>
#include <pgpipe/scram/client.hpp>

namespace scram = pgpipe::scram;
using scram::scram_errc;

namespace {

// RFC 7677 section 3.
constexpr const char* rfc_nonce = "rOprNGfwEbeRWgbNEkqO";
constexpr const char* rfc_server_first =
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
constexpr const char* rfc_client_final =
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
constexpr const char* rfc_server_final = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

scram::client rfc_client(std::string_view password = "pencil") {
  scram::client_params p;
  p.username = "user";
  p.client_nonce = rfc_nonce;
  return scram::client(password, p);
}

// A client that has sent client-first and waits for server-first.
scram::client started(scram::client_params p = {}) {
  p.username = "user";
  p.client_nonce = rfc_nonce;
  scram::client c("pencil", p);
  EXPECT_TRUE(c.client_first().has_value());
  return c;
}

void expect_server_first_error(std::string_view server_first, scram_errc expected, scram::client_params p = {}) {
  auto c = started(p);
  auto r = c.client_final(server_first);
  ASSERT_FALSE(r.has_value()) << server_first;
  EXPECT_EQ(r.error().code, expected) << server_first << " -> " << r.error().message;
  EXPECT_FALSE(r.error().message.empty());
  EXPECT_EQ(r.error().message.find("pencil"), std::string::npos);
  EXPECT_EQ(c.current_state(), scram::client::state::failed);
}

void expect_server_final_error(std::string_view server_final, scram_errc expected) {
  auto c = rfc_client();
  ASSERT_TRUE(c.client_first().has_value());
  ASSERT_TRUE(c.client_final(rfc_server_first).has_value());
  auto r = c.verify_server_final(server_final);
  ASSERT_FALSE(r.has_value()) << server_final;
  EXPECT_EQ(r.error().code, expected) << server_final << " -> " << r.error().message;
  EXPECT_EQ(c.current_state(), scram::client::state::failed);
}

}  // namespace

TEST(scram_client, Rfc7677VectorExactly) {
  auto c = rfc_client();
  EXPECT_EQ(c.mechanism(), "SCRAM-SHA-256");
  auto first = c.client_first();
  ASSERT_TRUE(first.has_value()) << first.error().message;
  EXPECT_EQ(*first, "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
  auto final_msg = c.client_final(rfc_server_first);
  ASSERT_TRUE(final_msg.has_value()) << final_msg.error().message;
  EXPECT_EQ(*final_msg, rfc_client_final);
  EXPECT_EQ(c.iterations(), 4096);
  EXPECT_EQ(c.salt_length(), 16u);
  auto ok = c.verify_server_final(rfc_server_final);
  EXPECT_TRUE(ok.has_value()) << ok.error().message;
  EXPECT_EQ(c.current_state(), scram::client::state::done);
}

TEST(scram_client, WrongPasswordGivesADifferentProofAndRejectsTheServerSignature) {
  auto c = rfc_client("pencil2");
  ASSERT_TRUE(c.client_first().has_value());
  auto final_msg = c.client_final(rfc_server_first);
  ASSERT_TRUE(final_msg.has_value());
  EXPECT_NE(*final_msg, rfc_client_final);
  auto r = c.verify_server_final(rfc_server_final);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, scram_errc::server_signature_mismatch);
}

TEST(scram_client, RandomNonceIsLibpqSizedAndDiffersPerClient) {
  scram::client a("pw"), b("pw");
  auto fa = a.client_first(), fb = b.client_first();
  ASSERT_TRUE(fa && fb);
  EXPECT_EQ(fa->substr(0, 8), "n,,n=,r=");  // empty user, as libpq sends
  EXPECT_EQ(a.client_nonce().size(), 24u);  // base64 of 18 bytes
  EXPECT_NE(a.client_nonce(), b.client_nonce());
}

TEST(scram_client, Gs2HeaderFollowsTheChannelBindingMode) {
  scram::client_params y;
  y.binding = scram::channel_binding_mode::supported_not_used;
  y.client_nonce = "abc";
  scram::client cy("pw", y);
  EXPECT_EQ(*cy.client_first(), "y,,n=,r=abc");
  auto fy = cy.client_final("r=abcdef,s=QUJD,i=1");
  ASSERT_TRUE(fy.has_value());
  EXPECT_EQ(fy->substr(0, 7), "c=eSws,");  // base64("y,,")

  scram::client_params p;
  p.binding = scram::channel_binding_mode::tls_server_end_point;
  p.channel_binding_data = {0x01, 0x02, 0x03};
  p.client_nonce = "abc";
  scram::client cp("pw", p);
  EXPECT_EQ(cp.mechanism(), "SCRAM-SHA-256-PLUS");
  EXPECT_EQ(*cp.client_first(), "p=tls-server-end-point,,n=,r=abc");
  auto fp = cp.client_final("r=abcdef,s=QUJD,i=1");
  ASSERT_TRUE(fp.has_value());
  const std::string cbind = "p=tls-server-end-point,,\x01\x02\x03";
  const std::string expected_c =
      "c=" + scram::base64_encode(std::span(reinterpret_cast<const unsigned char*>(cbind.data()), cbind.size()));
  EXPECT_EQ(fp->substr(0, expected_c.size()), expected_c);
}

TEST(scram_client, PlusWithoutBindingDataIsRefused) {
  scram::client_params p;
  p.binding = scram::channel_binding_mode::tls_server_end_point;
  scram::client c("pw", p);
  auto r = c.client_first();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, scram_errc::bad_argument);
}

TEST(scram_client, UsernameIsEscaped) {
  scram::client_params p;
  p.username = "a,b=c";
  p.client_nonce = "n";
  scram::client c("pw", p);
  EXPECT_EQ(*c.client_first(), "n,,n=a=2Cb=3Dc,r=n");
}

TEST(scram_client, StepsOutOfOrderAreRefused) {
  scram::client c("pw");
  auto r = c.client_final(rfc_server_first);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, scram_errc::bad_state);
  auto again = c.client_first();  // failed is terminal
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, scram_errc::bad_state);

  auto d = rfc_client();
  ASSERT_TRUE(d.client_first().has_value());
  auto v = d.verify_server_final(rfc_server_final);
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code, scram_errc::bad_state);
}

TEST(scram_client, ServerFirstMalformedForms) {
  const std::string good_nonce = "r=rOprNGfwEbeRWgbNEkqOxyz";
  expect_server_first_error("", scram_errc::malformed_server_first);
  expect_server_first_error("garbage", scram_errc::malformed_server_first);
  expect_server_first_error(good_nonce + ",s=QUJD", scram_errc::malformed_server_first);          // no i=
  expect_server_first_error("s=QUJD," + good_nonce + ",i=4096", scram_errc::malformed_server_first);  // order
  expect_server_first_error(good_nonce + ",i=4096,s=QUJD", scram_errc::malformed_server_first);
  expect_server_first_error(good_nonce + ",s=QUJD,i=4096,", scram_errc::malformed_server_first);  // empty attr
  expect_server_first_error(good_nonce + ",s=QUJD,i=4096,x=", scram_errc::malformed_server_first);
  expect_server_first_error(good_nonce + ",,s=QUJD,i=4096", scram_errc::malformed_server_first);
  expect_server_first_error("r=rOprNGfwEbeRWgbNEkqO\x7f,s=QUJD,i=1", scram_errc::malformed_server_first);
  expect_server_first_error("1=x," + good_nonce + ",s=QUJD,i=1", scram_errc::malformed_server_first);
}

TEST(scram_client, ServerFirstExtensionsAfterIterationsAreAccepted) {
  auto c = started();
  EXPECT_TRUE(c.client_final(std::string(rfc_server_first) + ",x=future").has_value());
}

TEST(scram_client, MandatoryExtensionIsRefused) {
  expect_server_first_error("m=something,r=rOprNGfwEbeRWgbNEkqOxyz,s=QUJD,i=4096", scram_errc::unsupported_extension);
}

TEST(scram_client, NonceMustExtendTheClientNonce) {
  expect_server_first_error("r=rOprNGfwEbeRWgbNEkqO,s=QUJD,i=4096", scram_errc::nonce_mismatch);     // equal, not longer
  expect_server_first_error("r=XOprNGfwEbeRWgbNEkqOabc,s=QUJD,i=4096", scram_errc::nonce_mismatch);  // other prefix
  expect_server_first_error("r=rOprNG,s=QUJD,i=4096", scram_errc::nonce_mismatch);                   // shorter
}

TEST(scram_client, SaltMustBeNonEmptyBase64) {
  const std::string n = "r=rOprNGfwEbeRWgbNEkqOxyz";
  expect_server_first_error(n + ",s=,i=4096", scram_errc::bad_server_salt);
  expect_server_first_error(n + ",s=QUJ,i=4096", scram_errc::bad_server_salt);     // length
  expect_server_first_error(n + ",s=QU*D,i=4096", scram_errc::bad_server_salt);    // alphabet
  expect_server_first_error(n + ",s=Q===,i=4096", scram_errc::bad_server_salt);    // padding
  expect_server_first_error(n + ",s=QU=D,i=4096", scram_errc::bad_server_salt);    // padding inside
}

TEST(scram_client, IterationCountMustBeAPositiveInteger) {
  const std::string n = "r=rOprNGfwEbeRWgbNEkqOxyz,s=QUJD";
  expect_server_first_error(n + ",i=", scram_errc::bad_server_iterations);
  expect_server_first_error(n + ",i=0", scram_errc::bad_server_iterations);
  expect_server_first_error(n + ",i=-1", scram_errc::bad_server_iterations);
  expect_server_first_error(n + ",i=+5", scram_errc::bad_server_iterations);
  expect_server_first_error(n + ",i=12a", scram_errc::bad_server_iterations);
  expect_server_first_error(n + ",i= 4096", scram_errc::bad_server_iterations);
}

TEST(scram_client, IterationCapRefusesHugeCounts) {
  const std::string n = "r=rOprNGfwEbeRWgbNEkqOxyz,s=QUJD";
  expect_server_first_error(n + ",i=100001", scram_errc::iterations_above_cap);
  expect_server_first_error(n + ",i=2147483647", scram_errc::iterations_above_cap);
  expect_server_first_error(n + ",i=99999999999999999999999999", scram_errc::iterations_above_cap);
  scram::client_params small;
  small.iteration_cap = 4095;
  expect_server_first_error(rfc_server_first, scram_errc::iterations_above_cap, small);
  // The default cap admits PostgreSQL's default and the cap itself.
  auto c = started();
  EXPECT_TRUE(c.client_final(n + ",i=100000").has_value());
}

TEST(scram_client, ServerFinalMalformedForms) {
  expect_server_final_error("", scram_errc::malformed_server_final);
  expect_server_final_error("x=abc", scram_errc::malformed_server_final);
  expect_server_final_error("v=", scram_errc::malformed_server_final);
  expect_server_final_error("v=not*base64", scram_errc::malformed_server_final);
  expect_server_final_error("v=QUJD", scram_errc::malformed_server_final);  // 3 bytes, not 32
  expect_server_final_error(std::string(rfc_server_final) + ",", scram_errc::malformed_server_final);
  // Well-formed but wrong signature.
  expect_server_final_error("v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", scram_errc::server_signature_mismatch);
}

TEST(scram_client, ServerErrorIsReportedWithItsValue) {
  auto c = rfc_client();
  ASSERT_TRUE(c.client_first().has_value());
  ASSERT_TRUE(c.client_final(rfc_server_first).has_value());
  auto r = c.verify_server_final("e=invalid-proof");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, scram_errc::server_error);
  EXPECT_NE(r.error().message.find("invalid-proof"), std::string::npos);
}

TEST(scram_client, ServerTextInMessagesIsBoundedAndPrintable) {
  auto c = rfc_client();
  ASSERT_TRUE(c.client_first().has_value());
  ASSERT_TRUE(c.client_final(rfc_server_first).has_value());
  auto r = c.verify_server_final("e=bad\x1b[31m" + std::string(200, 'z'));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, scram_errc::server_error);
  EXPECT_EQ(r.error().message.find('\x1b'), std::string::npos);
  EXPECT_EQ(r.error().message.find("bad"), std::string::npos) << "unknown server error text is not echoed";
  EXPECT_NE(r.error().message.find("outside RFC 5802"), std::string::npos) << r.error().message;
  EXPECT_LT(r.error().message.size(), 120u);
}

// Found by the fuzzer: a hostile server can put any text in e=, including the
// client's password; it must never come back in our message.
TEST(scram_client, ServerErrorTextCarryingThePasswordIsNotEchoed) {
  auto c = rfc_client();
  ASSERT_TRUE(c.client_first().has_value());
  ASSERT_TRUE(c.client_final(rfc_server_first).has_value());
  auto r = c.verify_server_final("e=pencil");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message.find("pencil"), std::string::npos) << r.error().message;
}

TEST(scram_client, ServerFinalExtensionsAreAccepted) {
  auto c = rfc_client();
  ASSERT_TRUE(c.client_first().has_value());
  ASSERT_TRUE(c.client_final(rfc_server_first).has_value());
  EXPECT_TRUE(c.verify_server_final(std::string(rfc_server_final) + ",x=1").has_value());
}

TEST(scram_client, UnusablePasswordFailsBeforeAnythingIsSent) {
  scram::client c(std::string_view("a\0b", 3));
  auto r = c.client_first();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, scram_errc::bad_argument);
  scram::client big(std::string(2000, 'x'));
  auto rb = big.client_first();
  ASSERT_FALSE(rb.has_value());
  EXPECT_EQ(rb.error().code, scram_errc::password_too_long);
}

// Server text is described, never quoted: a hostile server may plant
// anything in a malformed field (the fuzzer planted the password).
TEST(scram_client, MalformedIterationCountIsNotQuoted) {
  const std::string n = "r=rOprNGfwEbeRWgbNEkqOxyz,s=QUJD";
  auto c = started();
  auto r = c.client_final(n + ",i=4096hunter2");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, scram_errc::bad_server_iterations);
  EXPECT_EQ(r.error().message.find("hunter2"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.find("4096"), std::string::npos) << r.error().message;
  // A count above the cap is shown as the number it is, which is what a user
  // needs to pick a cap.
  auto d = started();
  auto above = d.client_final(n + ",i=00200000");
  ASSERT_FALSE(above.has_value());
  EXPECT_EQ(above.error().code, scram_errc::iterations_above_cap);
  EXPECT_NE(above.error().message.find("200000 iterations"), std::string::npos) << above.error().message;
}
