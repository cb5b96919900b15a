// What the async driver's client spends reading typed rows in text against
// binary, through a real server (a throwaway one, started here): `queries`
// runs of async_query_as<T> over 1,000 rows each (int8, timestamptz, uuid,
// and with `four` a numeric), with result_format::text or ::binary. Count
// the whole process under callgrind (the decoding runs on the event loop's
// thread, so a --toggle-collect on the caller would miss it) and subtract a
// run of 0 queries, which pays the same start-up:
//   valgrind --tool=callgrind build/bench/pgpipe_micro_binary_driver binary four 100
//   valgrind --tool=callgrind build/bench/pgpipe_micro_binary_driver binary four 0
// Shape `select` is the built-in select's shape instead: one row of (text,
// int4) per query, read untyped as pgpipe-bench reads it (get<string_view>,
// get<int>), the per-query cost rather than the per-row one.
// The server runs in other processes, which callgrind does not follow: the
// figure is the client's (libpq's parsing, the decoding, the driver).
// Prints a checksum so the reads cannot be optimised away.
#include "devcluster/devcluster.hpp"

#include <pgpipe/async_client.hpp>

#include <boost/asio/use_future.hpp>
#include <boost/describe/class.hpp>
#include <boost/uuid/uuid.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace {

using micros = std::chrono::sys_time<std::chrono::microseconds>;

struct four {
  std::int64_t id = 0;
  micros at{};
  boost::uuids::uuid key{};
  pgpipe::numeric amount;
};
BOOST_DESCRIBE_STRUCT(four, (), (id, at, key, amount))

struct three {
  std::int64_t id = 0;
  micros at{};
  boost::uuids::uuid key{};
};
BOOST_DESCRIBE_STRUCT(three, (), (id, at, key))

constexpr const char* four_sql =
    "select 9000000000 + i as id, timestamptz '2024-01-01 00:00+00' + i * interval '1.000003 second' as at, "
    "md5(i::text)::uuid as key, (i * 1.25)::numeric as amount from generate_series(1, 1000) i";
constexpr const char* three_sql =
    "select 9000000000 + i as id, timestamptz '2024-01-01 00:00+00' + i * interval '1.000003 second' as at, "
    "md5(i::text)::uuid as key from generate_series(1, 1000) i";

std::uint64_t sum_of(const three& x) {
  return static_cast<std::uint64_t>(x.id) + static_cast<std::uint64_t>(x.at.time_since_epoch().count()) + x.key.data[3];
}
std::uint64_t sum_of(const four& x) {
  return static_cast<std::uint64_t>(x.id) + static_cast<std::uint64_t>(x.at.time_since_epoch().count()) + x.key.data[3] +
         x.amount.str().size();
}

template <class T>
std::uint64_t run_queries(pgpipe::async_client& c, pgpipe::result_format f, const char* sql, int queries) {
  std::uint64_t s = 0;
  for (int q = 0; q < queries; ++q)
    for (const T& x : c.async_query_as<T>(pgpipe::query_options{.results = f}, sql, boost::asio::use_future).get())
      s += sum_of(x);
  return s;
}

// The built-in select's shape (bench/workload.cpp: `select ten, so_luong
// from san_pham where ma = $1`) without its table: one row, a text and an
// int4, read untyped as bench/async_common.cpp's consume() reads it.
constexpr const char* select_sql = "select 'Sản phẩm ' || $1 as ten, length($1)::int4 as so_luong";

std::uint64_t run_selects(pgpipe::async_client& c, pgpipe::result_format f, int queries) {
  std::uint64_t s = 0;
  for (int q = 0; q < queries; ++q) {
    const std::string key = "SP" + std::to_string(100000 + q % 1000);
    const pgpipe::result r = c.async_query(pgpipe::query_options{.results = f}, select_sql, key, boost::asio::use_future).get();
    const auto row = r[0];
    s += row.get<std::string_view>(0).size() + static_cast<std::uint64_t>(row.get<int>(1));
  }
  return s;
}

std::uint64_t run_shape(pgpipe::async_client& c, pgpipe::result_format f, std::string_view shape, int queries) {
  if (shape == "four") return run_queries<four>(c, f, four_sql, queries);
  if (shape == "three") return run_queries<three>(c, f, three_sql, queries);
  return run_selects(c, f, queries);
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string_view format = argc > 1 ? argv[1] : "";
  const std::string_view shape = argc > 2 ? argv[2] : "";
  const int queries = argc > 3 ? std::atoi(argv[3]) : -1;
  if ((format != "text" && format != "binary") || (shape != "four" && shape != "three" && shape != "select") || queries < 0) {
    std::fprintf(stderr, "usage: %s text|binary four|three|select QUERIES\n", argv[0]);
    return 2;
  }
  pgpipe::devcluster::cluster pg;
  pg.start();
  pgpipe::pool_params p;
  p.conninfo = pg.conninfo();
  p.max_size = 1;
  pgpipe::async_client c(p, {.loops = 1});
  const auto f = format == "binary" ? pgpipe::result_format::binary : pgpipe::result_format::text;
  // One query of each kind before the measured ones, so 0 and N queries
  // share the connection and the prepared statement.
  std::uint64_t s = run_shape(c, f, shape, 1);
  s += run_shape(c, f, shape, queries);
  std::printf("%s %s %d: checksum %llu\n", std::string(format).c_str(), std::string(shape).c_str(), queries,
              static_cast<unsigned long long>(s));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "failed: %s\n", e.what());
  return 1;
}
