// Transactions with retry: concurrent transfers between two accounts in
// SERIALIZABLE transactions (pgpipe::async_transaction). When two transfers
// touch the same rows at once, PostgreSQL aborts one with 40001
// (serialization failure); with retry_policy::max_attempts the helper runs
// that transfer's whole work again on a fresh lease, after a jittered
// back-off. Any other error (here an overdraft refused by a CHECK constraint,
// 23514) is not retried: it comes back at once with the server's
// diagnostics. Creates the table pgpipe_example_accounts and drops it at the end.
//
//   example_transaction_retry "host=... user=... password=... dbname=..."
//   PGPIPE_CONNINFO=... example_transaction_retry
#include <pgpipe/pgpipe.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace asio = boost::asio;

namespace {

constexpr int transfers = 8;

// One statement on `target` (the client or a lease); its error is thrown as
// pgpipe::error with the server's diagnostics. Inside a transaction's work,
// a throw rolls the transaction back, and a 40001 or 40P01 retries it.
template <class Target, class... Args>
asio::awaitable<pgpipe::result> query(Target& target, std::string_view sql, Args... args) {
  auto [ec, r] = co_await target.async_query(sql, std::move(args)..., asio::as_tuple(asio::use_awaitable));
  if (ec) throw pgpipe::error(ec, r.diag());
  co_return std::move(r);
}

// Moves `amount` from account `from` to account `to`, in one serializable
// transaction retried up to 20 times. Rows are updated in id order, so two
// transfers never wait for each other in a cycle (a deadlock, 40P01, would be
// retried too, but only after the server's deadlock_timeout).
asio::awaitable<pgpipe::async_transaction_report> transfer(pgpipe::async_client& client, int from, int to, int amount) {
  pgpipe::transaction_options opts;
  opts.isolation = pgpipe::isolation_level::serializable;
  opts.retry.max_attempts = 20;
  auto [ec, report] = co_await pgpipe::async_transaction(
      client, opts,
      [from, to, amount](pgpipe::async_lease& l) -> asio::awaitable<void> {
        for (const int id : {std::min(from, to), std::max(from, to)}) {
          const int delta = id == from ? -amount : amount;
          (void)co_await query(l, "update pgpipe_example_accounts set balance = balance + $2 where id = $1", id,
                               delta);
        }
      },
      asio::as_tuple(asio::use_awaitable));
  if (ec) throw pgpipe::error(ec, report.diag);
  co_return std::move(report);
}

asio::awaitable<int> run(pgpipe::async_client& client) {
  (void)co_await query(client, "drop table if exists pgpipe_example_accounts");
  (void)co_await query(client,
                       "create table pgpipe_example_accounts(id int primary key, balance int not null "
                       "check (balance >= 0))");
  (void)co_await query(client, "insert into pgpipe_example_accounts values (1, 100), (2, 100)");

  // Eight transfers at once, alternating direction: they collide. Each runs
  // as its own coroutine; the parallel group waits for all of them.
  auto ex = co_await asio::this_coro::executor;
  std::vector<decltype(asio::co_spawn(ex, transfer(client, 1, 2, 1), asio::deferred))> ops;
  for (int i = 0; i < transfers; ++i) {
    const bool even = i % 2 == 0;
    ops.push_back(asio::co_spawn(ex, transfer(client, even ? 1 : 2, even ? 2 : 1, 10 + i), asio::deferred));
  }
  auto [order, errors, reports] = co_await asio::experimental::make_parallel_group(std::move(ops))
                                      .async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
  int committed = 0;
  unsigned retries = 0;
  for (std::size_t i = 0; i < errors.size(); ++i) {
    if (errors[i]) {
      try {
        std::rethrow_exception(errors[i]);
      } catch (const std::exception& e) {
        std::cerr << "transfer " << i << " failed: " << e.what() << '\n';
      }
      continue;
    }
    ++committed;
    retries += reports[i].attempts - 1;
  }
  std::cout << committed << " transfers committed, " << retries << " retries after serialization failures\n";

  // Not retryable: the CHECK constraint refuses an overdraft (23514) at the
  // first attempt, and the server's diagnostics come with it.
  bool refused = false;
  try {
    (void)co_await transfer(client, 1, 2, 1000);
  } catch (const pgpipe::error& e) {
    refused = pgpipe::sqlstate_of(e.code()) == "23514";
    std::cout << "overdraft refused: " << e.diag().to_string() << '\n';
  }

  const pgpipe::result total = co_await query(client, "select sum(balance) from pgpipe_example_accounts");
  (void)co_await query(client, "drop table pgpipe_example_accounts");
  const std::int64_t sum = total.value<std::int64_t>();
  std::cout << "total balance " << sum << '\n';
  co_return committed == transfers && refused && sum == 200 ? 0 : 1;
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
  params.max_size = 4;

  pgpipe::async_client client(params);
  try {
    // The coroutine runs on one of the client's loops; main waits for it.
    return asio::co_spawn(client.get_executor(), run(client), asio::use_future).get();
  } catch (const std::exception& e) {
    std::cerr << "failed: " << e.what() << '\n';
    return 1;
  }
}
