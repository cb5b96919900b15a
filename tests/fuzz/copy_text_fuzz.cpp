// libFuzzer target for COPY text as the typed COPY reader takes it from a
// server (pgpipe/detail/copy_text.hpp, pgpipe/detail/typed_copy.hpp).
// Besides "no crash, no sanitizer report" it checks the properties in
// copy_text_checks.hpp, which unit_copy_text_fuzz_corpus_test also replays
// over the checked-in corpus.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "copy_text_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (auto v = pgpipe::fuzz_copy_text::check_input(data, size)) {
    std::fprintf(stderr, "property violated: %s\n", v->c_str());
    std::abort();
  }
  return 0;
}
