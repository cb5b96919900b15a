// COPY in and out on an async lease (<pgpipe/async_copy.hpp>): 100,000 rows
// streamed into a table in 64 KiB chunks, then streamed back out, with
// bounded memory both ways; then a COPY with a bad row, which leaves nothing
// behind and reports the server's error (22P02) with its diagnostics.
//
//   example_copy_async "host=... user=... password=... dbname=..."
//   PGPIPE_CONNINFO=... example_copy_async
#include <pgpipe/pgpipe.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <utility>

namespace asio = boost::asio;

namespace {

constexpr std::uint64_t rows_in = 100'000;

// One statement on the lease; its error is thrown with the server's diagnostics.
asio::awaitable<pgpipe::result> query(pgpipe::async_lease& l, std::string_view sql) {
  auto [ec, r] = co_await l.async_query(sql, asio::as_tuple(asio::use_awaitable));
  if (ec) throw pgpipe::error(ec, r.diag());
  co_return std::move(r);
}

// Sends `data` through a COPY ... FROM STDIN in chunks of at most 64 KiB
// (a chunk may end mid-row) and returns the rows the server copied.
asio::awaitable<std::uint64_t> copy_in(pgpipe::async_lease& l, std::string_view sql, std::string_view data) {
  pgpipe::async_copy_in in = l.copy_in(sql);
  for (std::size_t at = 0; at < data.size(); at += 64 * 1024) {
    auto [ec] = co_await in.async_write(data.substr(at, 64 * 1024), asio::as_tuple(asio::use_awaitable));
    if (ec) break;  // the COPY is over: async_finish reports why, with the diagnostics
  }
  auto [ec, r] = co_await in.async_finish(asio::as_tuple(asio::use_awaitable));
  if (ec) throw pgpipe::error(ec, r.diag());  // nothing of this COPY stays in the table
  co_return r.affected_rows();
}

asio::awaitable<int> run(pgpipe::async_client& client) {
  auto [lec, lease] = co_await client.async_acquire(asio::as_tuple(asio::use_awaitable));
  if (lec) throw pgpipe::error(lec, "async_acquire failed: " + lec.message());
  // A temporary table belongs to the lease's session: COPY needs a lease anyway.
  (void)co_await query(lease, "create temporary table items(id int primary key, name text not null)");

  std::string data;
  for (std::uint64_t i = 1; i <= rows_in; ++i) data += std::to_string(i) + "\titem " + std::to_string(i) + "\n";
  const std::uint64_t copied = co_await copy_in(lease, "copy items(id, name) from stdin", data);

  // Out: chunks of whole rows, about 64 KiB each; the end is an empty chunk.
  pgpipe::async_copy_out out = lease.copy_out("copy items to stdout");
  std::uint64_t lines = 0;
  for (;;) {
    auto [ec, chunk] = co_await out.async_next(asio::as_tuple(asio::use_awaitable));
    if (ec) throw pgpipe::error(ec, "copy items to stdout failed");
    if (chunk.empty()) break;
    lines += static_cast<std::uint64_t>(std::count(chunk.begin(), chunk.end(), '\n'));
  }
  std::cout << "copied " << copied << " rows in, " << out.rows() << " rows out (" << lines << " lines)\n";

  // A bad value fails the whole COPY: the good row before it does not stay.
  bool refused = false;
  try {
    (void)co_await copy_in(lease, "copy items(id, name) from stdin", "200001\tfine\nnot-a-number\tbad\n");
  } catch (const pgpipe::error& e) {
    refused = pgpipe::sqlstate_of(e.code()) == "22P02";
    std::cout << "bad row refused: " << e.diag().to_string() << '\n';
  }
  const pgpipe::result count = co_await query(lease, "select count(*) from items");
  const auto total = count.value<std::uint64_t>();
  std::cout << "rows in the table: " << total << '\n';
  co_return copied == rows_in && out.rows() == rows_in && lines == rows_in && refused && total == rows_in ? 0 : 1;
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
