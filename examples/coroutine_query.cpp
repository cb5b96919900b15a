// Coroutine style (C++20): co_await queries and a transaction on a lease.
// With asio::use_awaitable an operation gives its value or throws
// pgpipe::error with the server's diagnostics, so no error goes unchecked;
// main() prints it. Where an error is expected, co_await the operation
// started with asio::deferred: it gives (std::error_code, value) and throws
// nothing, for no more than a callback costs.
//
//   example_coroutine_query "host=... user=... password=... dbname=..."
//   PGPIPE_CONNINFO=... example_coroutine_query
#include <pgpipe/pgpipe.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

namespace asio = boost::asio;

namespace {

asio::awaitable<int> run(pgpipe::async_client& client) {
  const pgpipe::result version = co_await client.async_query("select version()", asio::use_awaitable);
  std::cout << version.value<std::string>() << '\n';

  // A transaction needs one connection for several statements: take a lease.
  pgpipe::async_lease tx = co_await client.async_acquire(asio::use_awaitable);
  (void)co_await tx.async_query("begin", asio::use_awaitable);
  (void)co_await tx.async_query("create temporary table t(n int) on commit drop", asio::use_awaitable);
  (void)co_await tx.async_query("insert into t select generate_series(1, $1::int)", 100, asio::use_awaitable);
  const pgpipe::result sum = co_await tx.async_query("select sum(n), count(*) from t", asio::use_awaitable);
  (void)co_await tx.async_query("commit", asio::use_awaitable);
  std::cout << "sum " << sum.value<std::int64_t>(0, 0) << " over " << sum.value<std::int64_t>(0, 1) << " rows\n";

  // A failed statement reaches the caller with its SQLSTATE and the server's
  // message; here it is expected, so it is caught.
  try {
    (void)co_await client.async_query("select 1/0", asio::use_awaitable);
    std::cerr << "select 1/0 did not fail\n";
    co_return 1;
  } catch (const pgpipe::error& e) {
    std::cout << "select 1/0 -> " << pgpipe::sqlstate_of(e.code()) << " (" << e.diag().message << ")\n";
  }

  // The error-code form: the error and the failed result's diagnostics, no throw.
  auto [ec, missing] = co_await client.async_query("select 1 from no_such_table", asio::deferred);
  if (pgpipe::sqlstate_of(ec) != "42P01") {
    std::cerr << "select from no_such_table did not fail with 42P01: " << ec.message() << '\n';
    co_return 1;
  }
  std::cout << "no_such_table -> " << pgpipe::sqlstate_of(ec) << " (" << missing.diag().message << ")\n";
  co_return 0;
}  // the lease returns its connection here (rolled back if a transaction were open)

}  // namespace

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
    status = rc;
    if (e) {
      status = 1;
      try {
        std::rethrow_exception(e);
      } catch (const pgpipe::error& err) {
        std::cerr << "failed: " << err.code().message() << ": " << err.diag().to_string() << '\n';
      } catch (const std::exception& err) {
        std::cerr << "failed: " << err.what() << '\n';
      }
    }
    client.close();  // lets io.run() return once the connections are closed
  });
  io.run();
  return status;
}
