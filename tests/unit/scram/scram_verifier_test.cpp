// PostgreSQL verifiers: build, parse, verify. The known values below were
// made by a PostgreSQL 15.x server (CREATE ROLE ... PASSWORD with
// password_encryption = 'scram-sha-256', then SELECT rolpassword FROM
// pg_authid) on 2026-11-29; the integration test scram_server_test repeats
// the comparison against a live server.
#include <gtest/gtest.h>

#include <string>

#include <pgpipe/scram/base64.hpp>
#include <pgpipe/scram/verifier.hpp>

namespace scram = pgpipe::scram;
using scram::scram_errc;

namespace {

// password "pencil"
constexpr const char* server_pencil =
    "SCRAM-SHA-256$4096:BHZzJWjEEcb6wsWjaBC5Vg==$9moQ9AzPGj75rze8vys8n9pzrvrz/zMU1VK90pRt+04="
    ":p9416/je4w306bnv5RRTarmFposkyUzsNr+REk28/yc=";
// password E'I\u00ADX' (SASLprep maps the soft hyphen to nothing: hashed as "IX")
constexpr const char* server_soft_hyphen =
    "SCRAM-SHA-256$4096:YpLKvXTxZ7HsuKfSv9OV+A==$Z4AcegzJDbFVGFdqmMYA+qbwUc02vw8Nnr8z9Az30kc="
    ":T4z12sBVpPIRq+LWy5Lsvab8RYVce8j2ADw1mooW7wY=";
// password E'a\u00AD\u0221': U+0221 is unassigned in Unicode 3.2, so
// PostgreSQL's SASLprep refuses the string and hashes the raw bytes (soft
// hyphen included).
constexpr const char* server_unassigned =
    "SCRAM-SHA-256$4096:xHFCLTGCGQKV7gCYMPlnpQ==$YQ/cNTH+pBUfRLpoK6th49ksATdNpa1HqUcvkuVQGC4="
    ":0MyNCT9y9luouHGGzbXJnakGgPZN7qG/PwT23QsCOu0=";

scram::verifier parse_ok(std::string_view text) {
  auto v = scram::parse_verifier(text);
  EXPECT_TRUE(v.has_value()) << (v ? "" : v.error().message);
  return v ? *v : scram::verifier{};
}

bool verifies(std::string_view password, const scram::verifier& v) {
  auto r = scram::verify_password(password, v);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  return r && *r;
}

void expect_parse_error(std::string_view text, scram_errc code, std::string_view mentions = {}) {
  auto v = scram::parse_verifier(text);
  ASSERT_FALSE(v.has_value()) << text;
  EXPECT_EQ(v.error().code, code) << text << " -> " << v.error().message;
  if (!mentions.empty()) {
    EXPECT_NE(v.error().message.find(mentions), std::string::npos) << v.error().message;
  }
}

}  // namespace

TEST(scram_verifier, SameBytesAsTheServerForAGivenSalt) {
  for (const auto& [password, stored] : {std::pair<std::string, const char*>{"pencil", server_pencil},
                                         {"I\xC2\xADX", server_soft_hyphen},
                                         {"a\xC2\xAD\xC8\xA1", server_unassigned}}) {
    auto server = parse_ok(stored);
    auto mine = scram::make_verifier(password, server.iterations, server.salt);
    ASSERT_TRUE(mine.has_value()) << mine.error().message;
    EXPECT_EQ(mine->to_string(), stored);
  }
}

TEST(scram_verifier, ServerMadeVerifiersVerify) {
  EXPECT_TRUE(verifies("pencil", parse_ok(server_pencil)));
  EXPECT_FALSE(verifies("pencil ", parse_ok(server_pencil)));
  EXPECT_FALSE(verifies("Pencil", parse_ok(server_pencil)));
  // SASLprep: the soft hyphen is dropped, so "IX" and U+2168 (ROMAN NUMERAL
  // NINE, NFKC "IX") are the same password.
  EXPECT_TRUE(verifies("I\xC2\xADX", parse_ok(server_soft_hyphen)));
  EXPECT_TRUE(verifies("IX", parse_ok(server_soft_hyphen)));
  EXPECT_TRUE(verifies("\xE2\x85\xA8", parse_ok(server_soft_hyphen)));
  // Rejected by SASLprep: only the exact raw bytes match.
  EXPECT_TRUE(verifies("a\xC2\xAD\xC8\xA1", parse_ok(server_unassigned)));
  EXPECT_FALSE(verifies("a\xC8\xA1", parse_ok(server_unassigned)));
}

TEST(scram_verifier, RoundTripsThroughText) {
  auto v = scram::make_verifier("correct horse", 4096);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->salt.size(), scram::default_salt_length);
  const std::string text = v->to_string();
  EXPECT_EQ(text.rfind("SCRAM-SHA-256$4096:", 0), 0u);
  EXPECT_EQ(parse_ok(text), *v);
  EXPECT_TRUE(verifies("correct horse", *v));
  EXPECT_FALSE(verifies("correct horsE", *v));
}

TEST(scram_verifier, RandomSaltsDiffer) {
  auto a = scram::make_verifier("pw", 1), b = scram::make_verifier("pw", 1);
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->salt, b->salt);
  EXPECT_NE(a->stored_key, b->stored_key);
}

TEST(scram_verifier, IterationCountIsUsed) {
  const std::vector<unsigned char> salt{1, 2, 3, 4};
  auto a = scram::make_verifier("pw", 4096, salt), b = scram::make_verifier("pw", 4097, salt);
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->stored_key, b->stored_key);
  EXPECT_EQ(b->to_string().substr(0, 19), "SCRAM-SHA-256$4097:");
}

TEST(scram_verifier, BadArguments) {
  const std::vector<unsigned char> salt{1};
  auto zero = scram::make_verifier("pw", 0, salt);
  ASSERT_FALSE(zero.has_value());
  EXPECT_EQ(zero.error().code, scram_errc::bad_argument);
  auto empty_salt = scram::make_verifier("pw", 4096, std::span<const unsigned char>{});
  ASSERT_FALSE(empty_salt.has_value());
  EXPECT_EQ(empty_salt.error().code, scram_errc::bad_argument);
  auto nul = scram::make_verifier(std::string_view("secret\0x", 8), 1, salt);
  ASSERT_FALSE(nul.has_value());
  EXPECT_EQ(nul.error().code, scram_errc::bad_argument);
  EXPECT_EQ(nul.error().message.find("secret"), std::string::npos);
  auto too_long = scram::make_verifier(std::string(1025, 'x'), 1, salt);
  ASSERT_FALSE(too_long.has_value());
  EXPECT_EQ(too_long.error().code, scram_errc::password_too_long);
  EXPECT_TRUE(scram::make_verifier(std::string(1024, 'x'), 1, salt).has_value());
}

TEST(scram_verifier, EveryMalformedFormHasItsOwnError) {
  const std::string salt = "BHZzJWjEEcb6wsWjaBC5Vg==";
  const std::string key = "9moQ9AzPGj75rze8vys8n9pzrvrz/zMU1VK90pRt+04=";
  const std::string good = "SCRAM-SHA-256$4096:" + salt + "$" + key + ":" + key;
  ASSERT_TRUE(scram::parse_verifier(good).has_value());

  expect_parse_error("", scram_errc::verifier_bad_prefix);
  expect_parse_error("md5a3556571e93b0d20722ba62be61e8c2d", scram_errc::verifier_bad_prefix, "MD5");
  expect_parse_error("SCRAM-SHA-1$4096:" + salt + "$" + key + ":" + key, scram_errc::verifier_bad_prefix);
  expect_parse_error("scram-sha-256$4096:" + salt + "$" + key + ":" + key, scram_errc::verifier_bad_prefix);

  expect_parse_error("SCRAM-SHA-256$4096:" + salt, scram_errc::verifier_bad_format, "'$'");
  expect_parse_error("SCRAM-SHA-256$4096" + salt + "$" + key + ":" + key, scram_errc::verifier_bad_format);
  expect_parse_error("SCRAM-SHA-256$4096:" + salt + ":x$" + key + ":" + key, scram_errc::verifier_bad_format);
  expect_parse_error("SCRAM-SHA-256$4096:" + salt + "$" + key + key, scram_errc::verifier_bad_format, "StoredKey");
  expect_parse_error("SCRAM-SHA-256$4096:" + salt + "$" + key + ":" + key + ":" + key, scram_errc::verifier_bad_format);
  expect_parse_error(good + "$", scram_errc::verifier_bad_format);

  for (const char* iter : {"", "0", "-1", "+4096", "4096x", " 4096", "abc", "2147483648", "99999999999999"}) {
    expect_parse_error("SCRAM-SHA-256$" + std::string(iter) + ":" + salt + "$" + key + ":" + key,
                       scram_errc::verifier_bad_iterations, "iteration");
  }

  expect_parse_error("SCRAM-SHA-256$4096:$" + key + ":" + key, scram_errc::verifier_bad_salt, "salt");
  expect_parse_error("SCRAM-SHA-256$4096:BHZzJWjE!cb6wsWjaBC5Vg==$" + key + ":" + key, scram_errc::verifier_bad_salt);
  expect_parse_error("SCRAM-SHA-256$4096:BHZzJWjEEcb6wsWjaBC5Vg=$" + key + ":" + key, scram_errc::verifier_bad_salt);

  const std::string short_key = "AAAA";  // 3 bytes
  const std::string long_key = scram::base64_encode(std::vector<unsigned char>(33, 7));
  expect_parse_error("SCRAM-SHA-256$4096:" + salt + "$" + short_key + ":" + key, scram_errc::verifier_bad_stored_key,
                     "3 bytes");
  expect_parse_error("SCRAM-SHA-256$4096:" + salt + "$" + long_key + ":" + key, scram_errc::verifier_bad_stored_key,
                     "33 bytes");
  expect_parse_error("SCRAM-SHA-256$4096:" + salt + "$" + key.substr(1) + ":" + key, scram_errc::verifier_bad_stored_key);
  expect_parse_error("SCRAM-SHA-256$4096:" + salt + "$:" + key, scram_errc::verifier_bad_stored_key);
  expect_parse_error("SCRAM-SHA-256$4096:" + salt + "$" + key + ":" + short_key, scram_errc::verifier_bad_server_key,
                     "ServerKey");
  expect_parse_error("SCRAM-SHA-256$4096:" + salt + "$" + key + ":", scram_errc::verifier_bad_server_key);
  expect_parse_error("SCRAM-SHA-256$4096:" + salt + "$" + key + ":" + key + "\n", scram_errc::verifier_bad_server_key);
}

TEST(scram_base64, StrictDecoding) {
  auto ok = scram::base64_decode("QUJD");
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(std::string(ok->begin(), ok->end()), "ABC");
  auto pad = scram::base64_decode("QQ==");
  ASSERT_TRUE(pad.has_value());
  EXPECT_EQ(pad->size(), 1u);
  EXPECT_TRUE(scram::base64_decode("")->empty());
  for (const char* bad : {"QQ=", "QQ", " QUJD", "QUJD\n", "Q=JD", "QUJ=QUJD", "Q===", "QU-D"}) {
    EXPECT_FALSE(scram::base64_decode(bad).has_value()) << bad;
  }
  const std::vector<unsigned char> bytes{0, 255, 1, 254, 2};
  EXPECT_EQ(*scram::base64_decode(scram::base64_encode(bytes)), bytes);
}

TEST(scram_result, ValueThrowsPgpipeErrorWithTheCodeAndMessage) {
  auto v = scram::parse_verifier("SCRAM-SHA-256$0:QUJD$AAAA:AAAA");
  try {
    v.value();
    FAIL() << "value() did not throw";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), scram_errc::verifier_bad_iterations);
    EXPECT_NE(std::string(e.what()).find("iteration count"), std::string::npos) << e.what();
  }
}

// A verifier is secret-equivalent and users paste passwords where one
// belongs: whichever part is malformed, the message names the part and the
// rule, and quotes none of the text (the iteration field, where a pasted
// password lands, is the easiest one to quote back by mistake).
TEST(scram_verifier, MalformedPartsAreNamedButNeverQuoted) {
  const std::string secret = "hunter2-Secret";
  const std::string key = "WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=";
  struct bad_case {
    std::string text;
    scram_errc code;
    const char* names;
  };
  const bad_case cases[] = {
      {secret, scram_errc::verifier_bad_prefix, "SCRAM-SHA-256$"},
      {"md5" + secret, scram_errc::verifier_bad_prefix, "MD5"},
      {"SCRAM-SHA-256$" + secret, scram_errc::verifier_bad_format, "'$'"},
      {"SCRAM-SHA-256$4096:c2FsdA==$" + secret, scram_errc::verifier_bad_format, "<StoredKey>:<ServerKey>"},
      {"SCRAM-SHA-256$4096" + secret + ":c2FsdA==$a:b", scram_errc::verifier_bad_iterations, "iteration count"},
      {"SCRAM-SHA-256$" + secret + ":c2FsdA==$a:b", scram_errc::verifier_bad_iterations, "iteration count"},
      {"SCRAM-SHA-256$4096:" + secret + "$" + key + ":" + key, scram_errc::verifier_bad_salt, "salt"},
      {"SCRAM-SHA-256$4096:c2FsdA==$" + secret + ":" + key, scram_errc::verifier_bad_stored_key, "StoredKey"},
      {"SCRAM-SHA-256$4096:c2FsdA==$" + key + ":" + secret, scram_errc::verifier_bad_server_key, "ServerKey"},
      // Valid base64 of the wrong length: still nothing quoted.
      {"SCRAM-SHA-256$4096:c2FsdA==$aHVudGVyMi1TZWNyZXQ=:" + key, scram_errc::verifier_bad_stored_key, "32"},
  };
  for (const auto& c : cases) {
    auto v = scram::parse_verifier(c.text);
    ASSERT_FALSE(v.has_value()) << c.text;
    EXPECT_EQ(v.error().code, c.code) << c.text << " -> " << v.error().message;
    EXPECT_NE(v.error().message.find(c.names), std::string::npos) << v.error().message;
    EXPECT_EQ(v.error().message.find("hunter2"), std::string::npos) << v.error().message;
    EXPECT_EQ(v.error().message.find("aHVudGVy"), std::string::npos) << v.error().message;
  }
}
