// Needs no server: what it checks links and runs offline.
#include <pgpipe/pool_params.hpp>

#include <cstdio>
#include <string>

#ifdef PGPIPE_TEST_ASYNC
#include <pgpipe/async_client.hpp>
#endif
#ifdef PGPIPE_TEST_SCRAM
#include <pgpipe/scram/saslprep.hpp>
#endif

int main() {
  pgpipe::pool_params params;
  params.conninfo = "host=127.0.0.1 port=1";
  params.max_size = 1;
#ifdef PGPIPE_TEST_ASYNC
  {
    // A client with no minimum opens nothing until a query asks for it.
    pgpipe::async_client client(params, {.loops = 1});
  }
  std::puts("test_package: async client created and destroyed");
#endif
#ifdef PGPIPE_TEST_SCRAM
  // SASLprep maps U+00AD (soft hyphen) to nothing: the Unicode library is linked and works.
  auto prepared = pgpipe::scram::saslprep("I\xC2\xADX");
  if (!prepared || prepared->bytes != "IX") {
    std::puts("test_package: SASLprep did not map U+00AD away");
    return 1;
  }
  std::printf("test_package: SASLprep (%.*s) works\n", static_cast<int>(pgpipe::scram::saslprep_library().size()),
              pgpipe::scram::saslprep_library().data());
#endif
  return 0;
}
