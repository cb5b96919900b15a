// libFuzzer target for everything in the SCRAM toolkit that parses bytes an
// attacker or a user controls: stored verifiers, a server's server-first and
// server-final messages, base64, and SASLprep input. Besides "no crash, no
// sanitizer report" it checks the properties in scram_parsers_checks.hpp
// (among them: the password never appears in a message), which the unit
// test unit_scram_fuzz_corpus_test also replays over the checked-in corpus.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "scram_parsers_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (auto v = pgpipe::scram::fuzz::check_input(data, size)) {
    std::fprintf(stderr, "property violated: %s\n", v->c_str());
    std::abort();
  }
  return 0;
}
