// Callback style: start queries from any thread, get each answer in a
// completion handler on one of the client's event loops.
//
//   example_callback_query "host=... user=... password=... dbname=..."
//   PGPIPE_CONNINFO=... example_callback_query
#include <pgpipe/pgpipe.hpp>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  const char* conninfo = argc > 1 ? argv[1] : std::getenv("PGPIPE_CONNINFO");
  if (!conninfo) {
    std::cerr << "usage: " << argv[0] << " CONNINFO (or set PGPIPE_CONNINFO)\n";
    return 2;
  }
  pgpipe::pool_params params;
  params.conninfo = conninfo;
  params.max_size = 2;
  pgpipe::async_client client(params);

  // Ten queries in flight at once, pipelined over at most two connections.
  constexpr int n = 10;
  std::promise<void> all_done;
  std::atomic<int> left{n};
  std::atomic<int> failures{0};
  for (int i = 0; i < n; ++i) {
    client.async_query("select $1::int8 * $1::int8 as square", std::int64_t{i},
                       [&, i](std::error_code ec, pgpipe::result r) {
                         if (ec) {
                           std::cerr << "query " << i << " failed: " << r.diag().to_string() << '\n';
                           ++failures;
                         } else {
                           std::cout << i << "^2 = " << r.value<std::int64_t>() << '\n';
                         }
                         if (--left == 0) all_done.set_value();
                       });
  }
  all_done.get_future().wait();

  // An SQL error reaches only the query that caused it, with its SQLSTATE
  // and the server's message.
  std::promise<void> err_done;
  client.async_query("select 1/0", [&](std::error_code ec, pgpipe::result r) {
    std::cout << "select 1/0 -> " << pgpipe::sqlstate_of(ec) << " (" << r.diag().message << ")\n";
    if (pgpipe::sqlstate_of(ec) != "22012") ++failures;  // division_by_zero was expected
    err_done.set_value();
  });
  err_done.get_future().wait();

  std::cout << pgpipe::to_prometheus(client.stats());
  return failures == 0 ? 0 : 1;
}
