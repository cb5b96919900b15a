// Built by .ci/consumer-check against an installed pgpipe with only the async
// component, where libpqxx and libidn cannot be found. It needs no server: a
// query to a port nothing listens on must come back as a connect error
// (through libpq and Asio), with the password nowhere in the message.
#include <pgpipe/async_client.hpp>

#include <boost/asio/use_future.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <system_error>

int main() {
  pgpipe::pool_params params;
  params.conninfo = "host=127.0.0.1 port=1 user=app password=hunter2 connect_timeout=5";
  params.max_size = 1;
  params.acquire_timeout = std::chrono::seconds(10);
  pgpipe::async_client client(params, {.loops = 1});
  // use_future throws pgpipe::error (the code and the diagnostics) when the
  // query fails.
  try {
    pgpipe::result res = client.async_query("select 1", boost::asio::use_future).get();
    (void)res;
  } catch (const pgpipe::error& e) {
    const std::string what = e.what();
    if (what.find("hunter2") != std::string::npos) {
      std::puts("pgpipe async consumer: the password leaked into an error");
      return 1;
    }
    std::printf("pgpipe async consumer: refused as expected: %s\n", what.c_str());
    return 0;
  }
  std::puts("pgpipe async consumer: a query to port 1 succeeded");
  return 1;
}
