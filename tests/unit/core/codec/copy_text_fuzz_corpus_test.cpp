// The COPY-text fuzz target's checked-in corpus, replayed as a unit test
// with the same property checks (tests/fuzz/copy_text_checks.hpp), in every
// build and under the sanitizers, whether or not clang is there to fuzz.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "copy_text_checks.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path corpus = fs::path(PGPIPE_FUZZ_CORPUS_DIR) / "pgpipe_fuzz_copy_text";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

pgpipe::fuzz_copy_text::violation check(const std::string& bytes) {
  return pgpipe::fuzz_copy_text::check_input(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace

TEST(copy_text_fuzz_corpus, every_input_satisfies_the_fuzzers_properties) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(corpus))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 8u);
  for (const auto& f : files) {
    const auto v = check(read_file(f));
    EXPECT_FALSE(v.has_value()) << f.filename() << ": " << v.value_or("");
  }
}

// The seeds reach the typed decoder's success path, so the encode-decode
// round trip of the checks runs on them, not only the refusals.
TEST(copy_text_fuzz_corpus, seeds_reach_the_round_trip) {
  const std::string bytes = read_file(corpus / "seed-two-rows");
  ASSERT_GT(bytes.size(), 1u);
  pgpipe::detail::copy_row_decoder<pgpipe::fuzz_copy_text::row> dec;
  std::vector<pgpipe::fuzz_copy_text::row> rows;
  std::string message;
  ASSERT_FALSE(dec.feed(std::string_view(bytes).substr(1), rows, message)) << message;
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], std::make_tuple(std::int64_t{1}, std::optional<std::string>("abc"), true));
  EXPECT_EQ(rows[1], std::make_tuple(std::int64_t{2}, std::optional<std::string>(), false));
}
