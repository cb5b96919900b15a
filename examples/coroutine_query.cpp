// Coroutine style (C++20): co_await queries and a transaction on a lease,
// every error checked. asio::as_tuple(asio::use_awaitable) hands the
// coroutine (std::error_code, result); a failure is thrown as pgpipe::error
// with the server's diagnostics, and main() prints it.
//
//   example_coroutine_query "host=... user=... password=... dbname=..."
//   PGPIPE_CONNINFO=... example_coroutine_query
#include <pgpipe/pgpipe.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <utility>

namespace asio = boost::asio;

namespace {

// One statement on `target` (the client or a lease): its result, or the
// server's error thrown as pgpipe::error.
template <class Target, class... Args>
asio::awaitable<pgpipe::result> query(Target& target, std::string_view sql, Args... args) {
  auto [ec, r] = co_await target.async_query(sql, std::move(args)..., asio::as_tuple(asio::use_awaitable));
  if (ec) throw pgpipe::error(ec, r.diag());
  co_return std::move(r);
}

// A statement whose rows do not matter: only its error does.
template <class Target, class... Args>
asio::awaitable<void> exec(Target& target, std::string_view sql, Args... args) {
  (void)co_await query(target, sql, std::move(args)...);
}

asio::awaitable<int> run(pgpipe::async_client& client) {
  const pgpipe::result version = co_await query(client, "select version()");
  std::cout << version.value<std::string>() << '\n';

  // A transaction needs one connection for several statements: take a lease.
  auto [lec, tx] = co_await client.async_acquire(asio::as_tuple(asio::use_awaitable));
  if (lec) throw pgpipe::error(lec, "async_acquire failed: " + lec.message());
  co_await exec(tx, "begin");
  co_await exec(tx, "create temporary table t(n int) on commit drop");
  co_await exec(tx, "insert into t select generate_series(1, $1::int)", 100);
  const pgpipe::result sum = co_await query(tx, "select sum(n), count(*) from t");
  co_await exec(tx, "commit");
  std::cout << "sum " << sum.value<std::int64_t>(0, 0) << " over " << sum.value<std::int64_t>(0, 1) << " rows\n";

  // A failed statement reaches the caller with its SQLSTATE and the server's
  // message; here it is expected, so it is caught.
  try {
    co_await exec(client, "select 1/0");
    std::cerr << "select 1/0 did not fail\n";
    co_return 1;
  } catch (const pgpipe::error& e) {
    std::cout << "select 1/0 -> " << pgpipe::sqlstate_of(e.code()) << " (" << e.diag().message << ")\n";
  }
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
