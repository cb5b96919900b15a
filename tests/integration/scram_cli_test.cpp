// pgpipe-scram as a user runs it: a subprocess with the password on stdin
// (or in a file, or PGPASSWORD), checked by exit code and output.
#include <gtest/gtest.h>
#include <boost/json/parse.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <cstdlib>
#include <vector>

#include <pgpipe/scram.hpp>
#include "support/cluster_fixture.hpp"
#include "support/subprocess.hpp"

// Set in the test's environment by src/cli/CMakeLists.txt when the tool is
// built (PGPIPE_BUILD_TOOLS). An environment variable rather than a compile
// definition, so this test shares the other tests' precompiled header.
const std::string scram_bin = [] {
  const char* path = std::getenv("PGPIPE_SCRAM_BIN");
  return std::string(path ? path : "");
}();

namespace {

using run_result = pgpipe::test::subprocess_result;

// Runs pgpipe-scram with `args`, feeding `input` on stdin (nullopt: stdin is
// /dev/null) and adding `env` to the environment. A PGPASSWORD of the caller
// must not leak into the probe under test.
run_result run(const std::vector<std::string>& args, std::optional<std::string> input,
               const std::map<std::string, std::string>& env = {}) {
  return pgpipe::test::run_program(scram_bin, args, input, env, {"PGPASSWORD"}, 60);
}

std::string trimmed(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

const std::string secret = "cli s3cret \xE2\x85\xA8";

}  // namespace

class scram_cli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (scram_bin.empty()) GTEST_SKIP() << "pgpipe-scram is not built (PGPIPE_BUILD_TOOLS=OFF)";
  }
};

TEST_F(scram_cli, VerifierThenVerify) {
  auto made = run({"verifier"}, secret + "\n");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string v = trimmed(made.out);
  ASSERT_TRUE(pgpipe::scram::parse_verifier(v).has_value()) << v;
  EXPECT_EQ(v.rfind("SCRAM-SHA-256$4096:", 0), 0u);
  EXPECT_EQ(made.out.find("s3cret"), std::string::npos);

  EXPECT_EQ(run({"verify", v}, secret + "\n").exit_code, 0);   // one trailing newline stripped
  EXPECT_EQ(run({"verify", v}, secret).exit_code, 0);          // or none
  EXPECT_EQ(run({"verify", v}, secret + "\n\n").exit_code, 1);  // only one is stripped
  auto wrong = run({"verify", v}, "not it\n");
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.out.find("does not match"), std::string::npos);
}

TEST_F(scram_cli, VerifierWithSaltAndIterationsIsDeterministic) {
  auto made = run({"verifier", "--iterations", "5000", "--salt", "QUJDREVGR0hJSktMTU5PUA=="}, "pencil\n");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string salt_text = "ABCDEFGHIJKLMNOP";
  auto expected = pgpipe::scram::make_verifier(
      "pencil", 5000, std::span(reinterpret_cast<const unsigned char*>(salt_text.data()), salt_text.size()));
  EXPECT_EQ(trimmed(made.out), expected->to_string());
  EXPECT_EQ(run({"verifier", "--salt", "not base64!"}, "pencil\n").exit_code, 2);
  EXPECT_EQ(run({"verifier", "--iterations", "0"}, "pencil\n").exit_code, 2);
}

TEST_F(scram_cli, PasswordFile) {
  const std::string path = ::testing::TempDir() + "/scram_cli_pw";
  {
    std::ofstream f(path);
    f << secret << "\n";
  }
  auto made = run({"verifier", "--password-file", path}, std::nullopt);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_EQ(run({"verify", trimmed(made.out)}, secret).exit_code, 0);
  auto missing = run({"verifier", "--password-file", path + ".nope"}, std::nullopt);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("cannot open password file"), std::string::npos);
}

TEST_F(scram_cli, MalformedVerifierExits2NamingThePart) {
  auto r = run({"verify", "SCRAM-SHA-256$4096:QUJD$AAAA:AAAA"}, "pencil\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("StoredKey"), std::string::npos) << r.err;
  auto md5 = run({"verify", "md5c7b5e4bb0c2f4f5ad8c8d6f3f6a3b7e1"}, "pencil\n");
  EXPECT_EQ(md5.exit_code, 2);
  EXPECT_NE(md5.err.find("MD5"), std::string::npos) << md5.err;
}

// As a user would meet it: a password pasted into the verifier's
// iteration field (or any other part) is never printed back, on either stream.
TEST_F(scram_cli, MalformedVerifierIsNeverPrintedBack) {
  for (const std::string verifier :
       {"SCRAM-SHA-256$4096hunter2:c2FsdA==$a:b", "SCRAM-SHA-256$4096:hunter2$a:b",
        "SCRAM-SHA-256$4096:c2FsdA==$hunter2:b", "hunter2", "SCRAM-SHA-256$hunter2"}) {
    auto r = run({"verify", verifier}, "pw\n");
    EXPECT_EQ(r.exit_code, 2) << verifier;
    EXPECT_NE(r.err.find("malformed verifier"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("hunter2"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("hunter2"), std::string::npos) << r.out;
  }
}

TEST_F(scram_cli, MistypedPasswordOptionDoesNotPrintItsValue) {
  auto r = run({"verifier", "--pasword=hunter2"}, std::nullopt);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown option --pasword"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("hunter2"), std::string::npos) << r.err;
}

TEST_F(scram_cli, PasswordOnTheCommandLineIsRefused) {
  auto r = run({"verifier", "--password", "hunter2"}, std::nullopt);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not accepted on the command line"), std::string::npos);
  EXPECT_EQ(r.err.find("hunter2"), std::string::npos);
  EXPECT_EQ(run({"probe", "host=x", "--password=hunter2"}, std::nullopt).exit_code, 2);
}

TEST_F(scram_cli, UsageErrorsExit2) {
  EXPECT_EQ(run({}, std::nullopt).exit_code, 2);
  EXPECT_EQ(run({"frobnicate"}, std::nullopt).exit_code, 2);
  EXPECT_EQ(run({"verify"}, std::nullopt).exit_code, 2);
  EXPECT_EQ(run({"probe"}, std::nullopt).exit_code, 2);
  EXPECT_EQ(run({"--help"}, std::nullopt).exit_code, 0);
}

class scram_cli_probe : public scram_cli {
 protected:
  static void SetUpTestSuite() {
    if (scram_bin.empty()) return;
    auto& pg = pgpipe::test::shared_cluster();
    auto v = pgpipe::scram::make_verifier(secret);
    pg.exec("DROP ROLE IF EXISTS cli_user");
    pg.exec("CREATE ROLE cli_user LOGIN PASSWORD '" + v->to_string() + "'");
  }
  std::string conninfo() const {
    return "host=127.0.0.1 sslmode=disable dbname=postgres user=cli_user port=" +
           std::to_string(pgpipe::test::shared_cluster().port());
  }
};

TEST_F(scram_cli_probe, PasswordOnStdinAuthenticates) {
  auto r = run({"probe", conninfo()}, secret + "\n");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("authenticated; server signature verified"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SCRAM-SHA-256"), std::string::npos);
  EXPECT_EQ(r.out.find("s3cret"), std::string::npos);
}

TEST_F(scram_cli_probe, JsonOutput) {
  auto r = run({"probe", conninfo(), "--json"}, secret + "\n");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  boost::json::error_code ec;
  const boost::json::value doc = boost::json::parse(r.out, ec);
  ASSERT_FALSE(ec) << ec.message() << ": " << r.out;
  EXPECT_EQ(doc.at("outcome").as_string(), "authenticated");
  EXPECT_EQ(doc.at("iterations").as_int64(), 4096);
  EXPECT_EQ(doc.at("server_signature_verified").as_bool(), true);
}

TEST_F(scram_cli_probe, WrongPasswordExits1With28P01) {
  auto r = run({"probe", conninfo(), "--json"}, "cli s3cret wrong\n");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("\"sqlstate\":\"28P01\""), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("s3cret"), std::string::npos);
}

TEST_F(scram_cli_probe, PgpasswordIsUsedWhenStdinIsEmpty) {
  auto r = run({"probe", conninfo()}, std::nullopt, {{"PGPASSWORD", secret}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("password:        given"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("s3cret"), std::string::npos);
}

TEST_F(scram_cli_probe, NoPasswordReportsTheMethodAndExits0) {
  auto r = run({"probe", conninfo(), "--no-password"}, std::nullopt, {{"PGPASSWORD", secret}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("not given"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("iterations:      4096"), std::string::npos) << r.out;
}

TEST_F(scram_cli_probe, ConninfoLibpqRefusesExits2AndStillSaysThePasswordWasGiven) {
  // An option this libpq does not know: libpq refuses the string before
  // anything is sent, a usage error; the piped password was still read.
  auto r = run({"probe", "host=127.0.0.1 port=1 user=x no_such_option=1"}, secret + "\n");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("password:        given"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no_such_option"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("s3cret"), std::string::npos) << r.out;
}

TEST_F(scram_cli_probe, UnreachableServerExits3) {
  // A port nothing listens on: the cluster's port + 1 is not guaranteed free,
  // so use port 1 (privileged, never a PostgreSQL on the test machine).
  auto r = run({"probe", "host=127.0.0.1 port=1 user=x sslmode=disable", "--timeout", "5"}, std::nullopt);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("failed: connect to 127.0.0.1:1"), std::string::npos) << r.out;
}
