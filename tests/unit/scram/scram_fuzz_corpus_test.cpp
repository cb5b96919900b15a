// The SCRAM fuzz target's checked-in corpus, replayed as unit tests: every
// finding the fuzzer ever made (files named finding-*) and every seed must
// satisfy the same properties the fuzzer checks, in the ordinary build and
// under the sanitizers, whether or not clang is there to fuzz.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "scram_parsers_checks.hpp"

namespace {

namespace fs = std::filesystem;
namespace fz = pgpipe::scram::fuzz;

const fs::path corpus = fs::path(PGPIPE_FUZZ_CORPUS_DIR) / "pgpipe_fuzz_scram_parsers";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<fs::path> corpus_files() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(corpus))
    if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(scram_fuzz_corpus, every_input_satisfies_the_fuzzers_properties) {
  const auto files = corpus_files();
  std::size_t findings = 0;
  for (const auto& f : files) {
    const std::string bytes = read_file(f);
    findings += f.filename().string().starts_with("finding-");
    const auto v = fz::check_input(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    EXPECT_FALSE(v.has_value()) << f.filename() << ": " << v.value_or("");
  }
  // The two findings that turned CI red must stay in the corpus.
  EXPECT_GE(findings, 2u);
  EXPECT_GE(files.size(), 8u);
}

// The fuzzer's finding kept in the corpus: a verifier whose iteration field
// holds the harness's password must not be quoted back. Checked by hand too,
// so the test says what it means.
TEST(scram_fuzz_corpus, verifier_iteration_field_holding_the_password_is_not_quoted) {
  const std::string bytes = read_file(corpus / "finding-2026-11-30-verifier-iterations-echo");
  ASSERT_GT(bytes.size(), 1u);
  EXPECT_EQ(bytes[0] % 6, 0) << "selector: the verifier parser";
  auto v = pgpipe::scram::parse_verifier(std::string_view(bytes).substr(1));
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code, pgpipe::scram::scram_errc::verifier_bad_iterations);
  EXPECT_EQ(v.error().message.find(fz::password), std::string::npos) << v.error().message;
  EXPECT_NE(v.error().message.find("iteration count"), std::string::npos) << v.error().message;
}

// The checks themselves must be able to fail, or the corpus replay proves
// nothing: a message that quotes the password is reported.
TEST(scram_fuzz_corpus, a_message_quoting_the_password_is_a_violation) {
  const pgpipe::scram::failure quoting{make_error_code(pgpipe::scram::scram_errc::verifier_bad_salt),
                                       "bad salt \"" + std::string(fz::password) + "\""};
  EXPECT_TRUE(fz::check_failure(quoting).has_value());
  const pgpipe::scram::failure fine{make_error_code(pgpipe::scram::scram_errc::verifier_bad_salt), "bad salt"};
  EXPECT_FALSE(fz::check_failure(fine).has_value());
  // And the splice really puts the password inside the message.
  EXPECT_NE(fz::with_password("abc").find(fz::password), std::string::npos);
}

// The server-final check knows the one true signature: the seed carrying it
// is accepted by the client, and a one-bit change of it is refused.
TEST(scram_fuzz_corpus, only_the_true_server_signature_is_accepted) {
  auto c = fz::make_client();
  ASSERT_TRUE(c.client_final(fz::fixed_server_first));
  const std::string truth = fz::true_server_final();
  EXPECT_EQ(std::string("\x03") + truth, read_file(corpus / "seed-server-final-true"));
  auto ok = c.verify_server_final(truth);
  EXPECT_TRUE(ok.has_value()) << (ok ? "" : ok.error().message);
  std::string near = truth;
  near[5] = near[5] == 'A' ? 'B' : 'A';
  auto c2 = fz::make_client();
  ASSERT_TRUE(c2.client_final(fz::fixed_server_first));
  auto bad = c2.verify_server_final(near);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, pgpipe::scram::scram_errc::server_signature_mismatch);
  EXPECT_FALSE(fz::check_server_final(truth).has_value());
  EXPECT_FALSE(fz::check_server_final(near).has_value());
}
