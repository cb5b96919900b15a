// LISTEN/NOTIFY with the async driver (pgpipe::async_listener), with a timeout:
// receive notifications until none has come for one second. async_receive
// itself has no timeout and is not cancellable, so a timer closes the
// listener when the second passes; the pending async_receive then completes
// with errc::closed, and the loop ends.
//
//   example_listener_async "host=... user=... password=... dbname=..."
//   PGPIPE_CONNINFO=... example_listener_async
#include <pgpipe/pgpipe.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

namespace asio = boost::asio;

namespace {

constexpr int sent = 3;
constexpr std::chrono::seconds idle_timeout(1);

asio::awaitable<int> run(pgpipe::async_client& client) {
  pgpipe::async_listener listener(client, client.params());  // its own connection, not a pool lease
  auto [sec] = co_await listener.async_subscribe("orders", asio::as_tuple(asio::use_awaitable));
  if (sec) throw pgpipe::error(sec, "listen orders failed: " + sec.message());

  // Another session notifies (here the client's pool: NOTIFY is an ordinary
  // statement, pipelined with any other).
  for (int i = 1; i <= sent; ++i) {
    auto [ec, r] = co_await client.async_query("select pg_notify('orders', $1)", "order " + std::to_string(i),
                                               asio::as_tuple(asio::use_awaitable));
    if (ec) throw pgpipe::error(ec, r.diag());
  }

  asio::steady_timer idle(co_await asio::this_coro::executor);
  int received = 0;
  for (;;) {
    // Armed again before each wait: when it expires first, close() ends the wait.
    idle.expires_after(idle_timeout);
    idle.async_wait([&listener](std::error_code ec) {
      if (!ec) listener.close();  // operation_aborted: a notification came first
    });
    auto [ec, n] = co_await listener.async_receive(asio::as_tuple(asio::use_awaitable));
    idle.cancel();
    if (ec == pgpipe::errc::closed) {
      std::cout << "no notification within " << idle_timeout.count() << " s: stopping\n";
      break;
    }
    if (ec) throw pgpipe::error(ec, "async_receive failed: " + ec.message());
    if (n.gap) {
      // The connection was lost and is back: notifications may be missing,
      // so a real service re-reads the state it follows here.
      std::cout << "gap: resynchronise\n";
      continue;
    }
    ++received;
    std::cout << "notification on " << n.channel << ": " << n.payload << " (from backend " << n.sender_pid << ")\n";
  }
  std::cout << "received " << received << " notifications\n";
  co_return received == sent ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const char* conninfo = argc > 1 ? argv[1] : std::getenv("PGPIPE_CONNINFO");
  if (!conninfo) {
    std::cerr << "usage: " << argv[0] << " CONNINFO (or set PGPIPE_CONNINFO)\n";
    return 2;
  }
  pgpipe::pool_params params;
  params.conninfo = conninfo;
  params.max_size = 1;

  pgpipe::async_client client(params);
  try {
    // The coroutine runs on one of the client's loops; main waits for it.
    return asio::co_spawn(client.get_executor(), run(client), asio::use_future).get();
  } catch (const std::exception& e) {
    std::cerr << "failed: " << e.what() << '\n';
    return 1;
  }
}
