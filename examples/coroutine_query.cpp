// Coroutine style (C++20): co_await queries and a transaction on a lease.
//
//   example_coroutine_query "host=... user=... password=... dbname=..."
//   PGPIPE_CONNINFO=... example_coroutine_query
#include <pgpipe/pgpipe.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

namespace asio = boost::asio;

asio::awaitable<int> run(pgpipe::async_client& client) {
  // The completion signature starts with std::error_code, so use_awaitable
  // yields (error_code, result): the diagnostics stay at hand.
  auto [ec, r] = co_await client.async_query("select version()", asio::use_awaitable);
  if (ec) {
    std::cerr << "failed: " << r.diag().to_string() << '\n';
    co_return 1;
  }
  std::cout << r.value<std::string>() << '\n';

  // A transaction needs one connection for several statements: take a lease.
  auto [lec, tx] = co_await client.async_acquire(asio::use_awaitable);
  if (lec) {
    std::cerr << "acquire failed: " << lec.message() << '\n';
    co_return 1;
  }
  co_await tx.async_query("begin", asio::use_awaitable);
  co_await tx.async_query("create temporary table t(n int) on commit drop", asio::use_awaitable);
  co_await tx.async_query("insert into t select generate_series(1, $1::int)", 100, asio::use_awaitable);
  auto [sec, sum] = co_await tx.async_query("select sum(n), count(*) from t", asio::use_awaitable);
  co_await tx.async_query("commit", asio::use_awaitable);
  if (sec) co_return 1;
  std::cout << "sum " << sum[0].get<long>(0) << " over " << sum[0].get<long>(1) << " rows\n";
  co_return 0;
}  // the lease returns its connection here (rolled back if a transaction were open)

int main(int argc, char** argv) {
  const char* conninfo = argc > 1 ? argv[1] : std::getenv("PGPIPE_CONNINFO");
  if (!conninfo) {
    std::cerr << "usage: " << argv[0] << " CONNINFO (or set PGPIPE_CONNINFO)\n";
    return 2;
  }
  pgpipe::pool_params params;
  params.conninfo = conninfo;
  params.max_size = 2;

  // The client can also run on an io_context the application already runs.
  asio::io_context io;
  pgpipe::async_client client(params, io);
  int status = 1;
  asio::co_spawn(io, run(client), [&](std::exception_ptr e, int rc) {
    status = e ? 1 : rc;
    client.close();  // lets io.run() return once the connections are closed
  });
  io.run();
  return status;
}
