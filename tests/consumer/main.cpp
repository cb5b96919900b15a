// Built against an installed pgpipe by .ci/consumer-check. It needs no server:
// it checks that the umbrella header compiles and the library links and works.
#include <pgpipe/pgpipe.hpp>

#include <cstdio>

int main() {
  pgpipe::pool_params params;
  params.conninfo = "host=127.0.0.1 password=hunter2";
  pgpipe::validate(params);
  std::string redacted = pgpipe::redact_conninfo(params.conninfo);
  std::error_code ec = pgpipe::make_sqlstate("22012");
  if (redacted.find("hunter2") != std::string::npos || pgpipe::sqlstate_of(ec) != "22012") {
    std::puts("pgpipe consumer: unexpected result");
    return 1;
  }
  std::printf("pgpipe consumer: %s, %s\n", redacted.c_str(), ec.message().c_str());
  return 0;
}
