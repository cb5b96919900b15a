// libFuzzer target for what pgpipe-scram's probe reads from a server before
// it is authenticated (message framing, ErrorResponse fields, the SASL
// mechanism list and the SASL start it answers with) and for the
// channel-binding hash of a server certificate. Besides "no crash, no
// sanitizer report" it checks the properties in probe_wire_checks.hpp, which
// unit_probe_wire_fuzz_corpus_test also replays over the checked-in corpus.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "probe_wire_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (auto v = pgpipe::scram::fuzz_wire::check_input(data, size)) {
    std::fprintf(stderr, "property violated: %s\n", v->c_str());
    std::abort();
  }
  return 0;
}
