// The probe-wire fuzz target's checked-in corpus, replayed as unit tests
// with the same property checks (tests/fuzz/probe_wire_checks.hpp), in every
// build and under the sanitizers, whether or not clang is there to fuzz. The
// seeds are checked to reach the paths whose round trips they exist for.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "probe_wire_checks.hpp"

namespace {

namespace fs = std::filesystem;
namespace fw = pgpipe::scram::fuzz_wire;
namespace d = pgpipe::scram::detail;

const fs::path corpus = fs::path(PGPIPE_FUZZ_CORPUS_DIR) / "pgpipe_fuzz_probe_wire";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

fw::violation check(const std::string& bytes) {
  return fw::check_input(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace

TEST(probe_wire_fuzz_corpus, every_input_satisfies_the_fuzzers_properties) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(corpus))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  bool selector_seen[4] = {};
  for (const auto& f : files) {
    const std::string bytes = read_file(f);
    ASSERT_FALSE(bytes.empty()) << f;
    selector_seen[static_cast<unsigned char>(bytes[0]) % 4] = true;
    const auto v = check(bytes);
    EXPECT_FALSE(v.has_value()) << f.filename() << ": " << v.value_or("");
  }
  for (int s = 0; s < 4; ++s) EXPECT_TRUE(selector_seen[s]) << "no seed for selector " << s;
}

// The seeds reach the success paths, so the round trips run on them.
TEST(probe_wire_fuzz_corpus, seeds_reach_the_round_trips) {
  const std::string stream = read_file(corpus / "seed-stream-sasl-then-error");
  ASSERT_GT(stream.size(), 6u);
  char type = 0;
  std::size_t len = 0;
  ASSERT_EQ(d::parse_message_header(std::string_view(stream).substr(1, 5), type, len), "");
  EXPECT_EQ(type, 'R');
  EXPECT_EQ(d::parse_sasl_mechanisms(std::string_view(stream).substr(10, len - 4)),
            (std::vector<std::string>{"SCRAM-SHA-256-PLUS", "SCRAM-SHA-256"}));
  const auto f = d::parse_error_fields(read_file(corpus / "seed-error-body").substr(1));
  EXPECT_EQ(f.sqlstate, "28P01");
  EXPECT_EQ(d::error_text(f), "FATAL: password authentication failed for user \"probe\" (some detail)");

  // A real certificate: tls-server-end-point is chosen under require.
  const std::string cert = read_file(corpus / "seed-cert-ecdsa-sha256").substr(2);
  const auto der = std::span(reinterpret_cast<const unsigned char*>(cert.data()), cert.size());
  auto h = pgpipe::scram::tls_server_end_point_hash(der);
  ASSERT_TRUE(h.has_value()) << h.error().message;
  EXPECT_EQ(h->size(), 32u);
  const auto c = d::choose_sasl({"SCRAM-SHA-256-PLUS"}, true, "require", der);
  EXPECT_EQ(c.error, "");
  EXPECT_EQ(c.binding, pgpipe::scram::channel_binding_mode::tls_server_end_point);
  // Ed25519 has no single digest: named, refused under require.
  const std::string ed = read_file(corpus / "seed-cert-ed25519").substr(2);
  const auto ed_der = std::span(reinterpret_cast<const unsigned char*>(ed.data()), ed.size());
  EXPECT_FALSE(pgpipe::scram::tls_server_end_point_hash(ed_der).has_value());
  EXPECT_NE(d::choose_sasl({"SCRAM-SHA-256-PLUS"}, true, "require", ed_der).error, "");
}

// The checks can fail: what they exist to catch is reported.
TEST(probe_wire_fuzz_corpus, the_checks_report_what_they_exist_to_catch) {
  EXPECT_TRUE(fw::no_password("bad message " + std::string(fw::password), "x").has_value());
  EXPECT_FALSE(fw::no_password("bad message", "x").has_value());
  EXPECT_NE(fw::with_password("abc").find(fw::password), std::string::npos);
  // A stream whose header cannot be framed is refused, not read.
  char type = 0;
  std::size_t len = 0;
  EXPECT_NE(d::parse_message_header(std::string_view("R\xff\xff\xff\xff", 5), type, len), "");
  EXPECT_NE(d::parse_message_header(std::string_view("R\0\0\0\3", 5), type, len), "");
  // channel_binding=require without TLS never goes ahead.
  EXPECT_NE(d::choose_sasl({"SCRAM-SHA-256", "SCRAM-SHA-256-PLUS"}, false, "require", {}).error, "");
}
