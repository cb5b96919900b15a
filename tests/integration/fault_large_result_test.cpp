// Large results (issue 7): a 5-million-row result. A user relies on getting
// it in chunks with peak memory bounded by the chunk, not by the result, and
// on being able to stop early without reading the rest. Peak RSS is measured
// as the growth of VmHWM over the test (reset through /proc/self/clear_refs)
// and printed as "[figure] large_result...." lines.
#include <pgpipe/async_client.hpp>
#include <pgpipe/blocking_pool.hpp>

#include "support/cluster_fixture.hpp"

#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

constexpr long rows = 5'000'000;
const std::string big_query =
    "select g, 'row number ' || g from generate_series(1, " + std::to_string(rows) + ") g";

long status_kib(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
  }
  return -1;
}

// Resets VmHWM to the current RSS (Linux >= 4.0), so the peak of one test is
// not the peak of an earlier one.
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

long ms_since(steady::time_point t) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t).count());
}

pgpipe::pool_params params() {
  pgpipe::pool_params p;
  p.conninfo = pgpipe::test::shared_cluster().conninfo();
  p.max_size = 1;
  p.query_timeout = 120s;
  return p;
}

// The blocking driver streams through a server-side cursor (libpqxx's
// icursorstream: DECLARE ... CURSOR, then FETCH chunks), inside a transaction.
TEST(fault_large_result, blocking_cursor_delivers_5_million_rows_in_chunks_with_bounded_memory) {
  pgpipe::blocking_pool pool{params()};
  constexpr int chunk = 10'000;
  reset_peak_rss();
  const long rss0 = status_kib("VmHWM");
  const auto t0 = steady::now();
  long seen = 0;
  long chunks = 0;
  long long sum = 0;
  pool.transaction([&](pqxx::work& tx) {
    pqxx::icursorstream cur(tx, big_query, "fault_big", chunk);
    pqxx::result r;
    while (cur >> r) {
      ++chunks;
      EXPECT_LE(r.size(), static_cast<pqxx::result::size_type>(chunk));
      for (const auto& row : r) sum += row[0].as<long long>();
      seen += static_cast<long>(r.size());
    }
  });
  const long elapsed = ms_since(t0);
  const long growth = status_kib("VmHWM") - rss0;
  EXPECT_EQ(seen, rows);
  EXPECT_EQ(sum, static_cast<long long>(rows) * (rows + 1) / 2);
  EXPECT_EQ(chunks, rows / chunk);
  // A chunk of 10k rows is about a megabyte; the whole result would be hundreds.
  EXPECT_LT(growth, 64 * 1024) << "peak RSS grew by " << growth << " KiB";
  std::printf("[figure] large_result.blocking_cursor.rows=%ld chunks=%ld elapsed_ms=%ld peak_rss_growth_kib=%ld\n", seen,
              chunks, elapsed, growth);

  // Stopping early: read three chunks, leave; the transaction ends at once and
  // the connection is reused.
  const auto t1 = steady::now();
  long early = 0;
  pool.transaction([&](pqxx::work& tx) {
    pqxx::icursorstream cur(tx, big_query, "fault_big_early", chunk);
    pqxx::result r;
    for (int i = 0; i < 3 && (cur >> r); ++i) early += static_cast<long>(r.size());
  });
  const long stop_ms = ms_since(t1);
  EXPECT_EQ(early, 3L * chunk);
  EXPECT_EQ(pool.exec("select 1")[0][0].as<int>(), 1);
  EXPECT_EQ(pool.stats().connects, 1u);
  std::printf("[figure] large_result.blocking_cursor.stop_after_3_chunks_ms=%ld\n", stop_ms);
}

// The async driver has no streaming mode (libpq single-row mode) yet: a query
// result is buffered whole. This measures what that costs, so the figure is on
// record, and checks that the result is complete and correct.
TEST(fault_large_result, async_buffered_result_of_5_million_rows_costs_memory_in_proportion) {
  pgpipe::async_client client(params(), 1);
  reset_peak_rss();
  const long rss0 = status_kib("VmHWM");
  const auto t0 = steady::now();
  long long sum = 0;
  std::size_t n = 0;
  {
    auto [ec, r] = client.async_query(big_query, asio::use_future).get();
    ASSERT_FALSE(ec) << ec.message() << ": " << r.diag().to_string();
    n = r.size();
    for (std::size_t i = 0; i < r.size(); i += 1000) sum += r[i].get<long long>(0);
  }
  const long elapsed = ms_since(t0);
  const long growth = status_kib("VmHWM") - rss0;
  EXPECT_EQ(n, static_cast<std::size_t>(rows));
  EXPECT_GT(sum, 0);
  std::printf("[figure] large_result.async_buffered.rows=%zu elapsed_ms=%ld peak_rss_growth_kib=%ld\n", n, elapsed, growth);
  auto [ec, r] = client.async_query("select 1", asio::use_future).get();
  EXPECT_FALSE(ec);
}

}  // namespace
