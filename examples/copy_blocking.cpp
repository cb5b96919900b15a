// COPY in and out on a blocking lease (<pgpipe/blocking_copy.hpp>): 100,000
// rows written in 64 KiB chunks, read back one row at a time, then a COPY
// with a bad row, which leaves nothing behind and throws the server's error
// (22P02) with its diagnostics.
//
//   example_copy_blocking "host=... user=... password=... dbname=..."
//   PGPIPE_CONNINFO=... example_copy_blocking
#include <pgpipe/pgpipe.hpp>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>

namespace {

constexpr std::uint64_t rows_in = 100'000;

// Streams `data` through a COPY ... FROM STDIN in chunks of at most 64 KiB (a
// chunk may end mid-row); the rows copied, or pgpipe::error, after which
// nothing of the COPY stays.
std::uint64_t copy_in(pgpipe::blocking_lease& lease, std::string_view sql, std::string_view data) {
  pgpipe::blocking_copy_in in(lease, sql);
  for (std::size_t at = 0; at < data.size(); at += 64 * 1024) in.write(data.substr(at, 64 * 1024));
  return in.finish();
}

int run(pgpipe::blocking_pool& pool) {
  pgpipe::blocking_lease lease = pool.acquire();
  // A temporary table belongs to the lease's session.
  (void)lease.exec("create temporary table items(id int primary key, name text not null)");

  std::string data;
  for (std::uint64_t i = 1; i <= rows_in; ++i) data += std::to_string(i) + "\titem " + std::to_string(i) + "\n";
  const std::uint64_t copied = copy_in(lease, "copy items(id, name) from stdin", data);

  std::uint64_t lines = 0;
  std::uint64_t rows_out = 0;
  {
    pgpipe::blocking_copy_out out(lease, "copy items to stdout");
    for (std::string row; out.next(row);) ++lines;  // one row per chunk
    rows_out = out.rows();
  }
  std::cout << "copied " << copied << " rows in, " << rows_out << " rows out (" << lines << " lines)\n";

  // A bad value fails the whole COPY: the good row before it does not stay.
  bool refused = false;
  try {
    copy_in(lease, "copy items(id, name) from stdin", "200001\tfine\nnot-a-number\tbad\n");
  } catch (const pgpipe::error& e) {
    refused = pgpipe::sqlstate_of(e.code()) == "22P02";
    std::cout << "bad row refused: " << e.diag().to_string() << '\n';
  }
  const auto total = lease.exec("select count(*) from items").value<std::uint64_t>();
  std::cout << "rows in the table: " << total << '\n';
  return copied == rows_in && rows_out == rows_in && lines == rows_in && refused && total == rows_in ? 0 : 1;
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
  try {
    pgpipe::blocking_pool pool(params);
    return run(pool);
  } catch (const pgpipe::error& e) {
    std::cerr << "failed: " << e.code().message() << ": " << e.diag().to_string() << '\n';
  } catch (const std::exception& e) {
    std::cerr << "failed: " << e.what() << '\n';
  }
  return 1;
}
