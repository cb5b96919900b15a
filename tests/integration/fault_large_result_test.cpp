// Large results: a 5-million-row result. A user relies on getting
// it in chunks with peak memory bounded by the chunk, not by the result, and
// on being able to stop early without reading the rest. Peak RSS is measured
// as the growth of VmHWM over the test (reset through /proc/self/clear_refs)
// and printed as "[figure] large_result...." lines.
#include <pgpipe/async_client.hpp>
#include <pgpipe/blocking_pool.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"

#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>
#include <pqxx/cursor>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <future>
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

using pgpipe::test::rss_is_meaningful;

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
  if (rss_is_meaningful) {
    EXPECT_LT(growth, 64 * 1024) << "peak RSS grew by " << growth << " KiB";
  }
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
  EXPECT_EQ(pool.exec("select 1").value<int>(), 1);
  EXPECT_EQ(pool.stats().connects, 1u);
  std::printf("[figure] large_result.blocking_cursor.stop_after_3_chunks_ms=%ld\n", stop_ms);
  PGPIPE_SKIP_IF_RSS_UNCHECKED();
}

// The async driver streams on a lease (lease::stream, libpq single-row mode):
// chunks of rows, the socket left unread while the caller does not ask for
// more, so memory is bounded by the chunks in hand, not by the result.
// The stream hands out one row per chunk (single-row mode, one PGresult per
// row): 5 million rows take about 90 s in a Debug build, too long for the
// suite, so the suite streams 500k rows (the bound below still tells a stream
// from a buffered result: 500k buffered rows are ~35 MB). For the
// figure in docs/reliability.md: PGPIPE_FAULT_STREAM_ROWS=5000000.
long stream_rows() {
  if (const char* s = std::getenv("PGPIPE_FAULT_STREAM_ROWS")) return std::atol(s);
  return 500'000;
}

TEST(fault_large_result, async_row_stream_delivers_a_large_result_in_chunks_with_bounded_memory) {
  const long rows = stream_rows();
  const std::string big_query = "select g, 'row number ' || g from generate_series(1, " + std::to_string(rows) + ") g";
  pgpipe::async_client client(params(), {.loops = 1});
  auto [aec, l] = client.async_acquire(pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(aec) << aec.message();
  reset_peak_rss();
  const long rss0 = status_kib("VmHWM");
  const auto t0 = steady::now();
  long seen = 0;
  long chunks = 0;
  std::size_t biggest = 0;
  long long sum = 0;
  {
    // Read chunk after chunk from the handler itself (on the lease's loop):
    // the way an application streams, with no thread hand-off per chunk.
    auto st = l.stream(big_query);
    std::promise<std::error_code> finished;
    std::function<void(std::error_code, pgpipe::result)> on_chunk = [&](std::error_code ec, pgpipe::result r) {
      if (ec || r.empty()) {
        if (ec) std::printf("stream error: %s: %s\n", ec.message().c_str(), r.diag().to_string().c_str());
        finished.set_value(ec);
        return;
      }
      ++chunks;
      biggest = std::max(biggest, r.size());
      for (std::size_t i = 0; i < r.size(); ++i) sum += r[i].get<long long>(0);
      seen += static_cast<long>(r.size());
      st.async_next(on_chunk);
    };
    st.async_next(on_chunk);
    auto done = finished.get_future();
    ASSERT_EQ(done.wait_for(300s), std::future_status::ready);
    EXPECT_FALSE(done.get());
  }
  const long elapsed = ms_since(t0);
  const long growth = status_kib("VmHWM") - rss0;
  EXPECT_EQ(seen, rows);
  EXPECT_EQ(sum, static_cast<long long>(rows) * (rows + 1) / 2);
  EXPECT_GT(chunks, 1);
  // 5M rows buffered cost ~350 MB (measured below), 500k ~35 MB; a stream
  // must stay far under that.
  if (rss_is_meaningful) {
    EXPECT_LT(growth, 16 * 1024) << "peak RSS grew by " << growth << " KiB";
  }
  std::printf("[figure] large_result.async_stream.rows=%ld chunks=%ld biggest_chunk=%zu elapsed_ms=%ld "
              "peak_rss_growth_kib=%ld\n",
              seen, chunks, biggest, elapsed, growth);
  // The lease serves ordinary queries after the stream.
  auto [ec, r] = l.async_query("select 1", pgpipe::test::use_future_ec).get();
  EXPECT_FALSE(ec) << ec.message();
  PGPIPE_SKIP_IF_RSS_UNCHECKED();
}

// Stopping early cancels the query on the server (PQcancel on the exclusive
// lease). The next query on the same lease must run normally, never hit by
// that cancel (57014), whether the stop came early or after the last row.
TEST(fault_large_result, async_row_stream_stops_early_and_the_lease_serves_the_next_query) {
  pgpipe::async_client client(params(), {.loops = 1});
  auto [aec, l] = client.async_acquire(pgpipe::test::use_future_ec).get();
  ASSERT_FALSE(aec) << aec.message();
  long worst_stop_ms = 0;
  int next_query_errors = 0;
  for (int stop_after : {0, 1, 3, 10, 100, -1}) {  // -1: read to the end, then cancel
    SCOPED_TRACE(stop_after);
    const auto t0 = steady::now();
    long got = 0;
    {
      auto st = l.stream(stop_after == -1 ? std::string("select generate_series(1, 1000)") : big_query);
      for (int i = 0; stop_after == -1 || i < stop_after; ++i) {
        auto [ec, r] = st.async_next(pgpipe::test::use_future_ec).get();
        ASSERT_FALSE(ec) << ec.message();
        if (r.empty()) break;
        got += static_cast<long>(r.size());
      }
      st.cancel();
      // After cancel() the stream reports cancelled or its end, never more rows.
      auto [ec, r] = st.async_next(pgpipe::test::use_future_ec).get();
      if (ec) {
        EXPECT_EQ(ec, pgpipe::errc::cancelled) << ec.message();
        EXPECT_THROW((void)r.empty(), pgpipe::error);  // a failed chunk holds no rows to read
      } else {
        EXPECT_TRUE(r.empty());
      }
    }
    auto [ec, r] = l.async_query("select 42", pgpipe::test::use_future_ec).get();
    const long stop_ms = ms_since(t0);
    if (ec) ++next_query_errors;
    EXPECT_FALSE(ec) << "query after stopping a stream: " << ec.message();
    if (!ec) {
      EXPECT_EQ(r.value<int>(), 42);
    }
    if (stop_after == -1) {
      EXPECT_EQ(got, 1000);
    } else {
      worst_stop_ms = std::max(worst_stop_ms, stop_ms);
      std::printf("[figure] large_result.async_stream.stop_after_%d_chunks_to_next_query_ms=%ld\n", stop_after, stop_ms);
    }
  }
  // Stopping a stream cancels it on the server: the lease serves again
  // promptly, not after the rest of 5M rows is read and discarded. Measured
  // 0.3-1.2 s (TSan included); one unexplained 12.9 s run is bug 4 in
  // docs/reliability.md, which this bound reports.
  EXPECT_LE(worst_stop_ms, 10'000);
  std::printf("[figure] large_result.async_stream.worst_early_stop_to_next_query_ms=%ld next_query_errors=%d\n",
              worst_stop_ms, next_query_errors);
}

// For comparison: the same result through async_query, buffered whole.
TEST(fault_large_result, async_buffered_result_of_5_million_rows_costs_memory_in_proportion) {
  pgpipe::async_client client(params(), {.loops = 1});
  reset_peak_rss();
  const long rss0 = status_kib("VmHWM");
  const auto t0 = steady::now();
  long long sum = 0;
  std::size_t n = 0;
  {
    auto [ec, r] = client.async_query(big_query, pgpipe::test::use_future_ec).get();
    ASSERT_FALSE(ec) << ec.message() << ": " << r.diag().to_string();
    n = r.size();
    for (std::size_t i = 0; i < r.size(); i += 1000) sum += r[i].get<long long>(0);
  }
  const long elapsed = ms_since(t0);
  const long growth = status_kib("VmHWM") - rss0;
  EXPECT_EQ(n, static_cast<std::size_t>(rows));
  EXPECT_GT(sum, 0);
  // What the name says: the whole result sits in memory, so peak RSS grows
  // with the row count. Each row here is about 20 bytes of values plus
  // libpq's per-field bookkeeping (measured ~70 bytes a row, 348-356 MB for
  // 5M); the bounds are loose (20 to 400 bytes a row), the figure is in
  // docs/reliability.md. The streaming tests above stay under 16-64 MB.
  if (rss_is_meaningful) {
    EXPECT_GE(growth, rows * 20 / 1024) << "peak RSS grew by " << growth << " KiB only";
    EXPECT_LE(growth, rows * 400 / 1024) << "peak RSS grew by " << growth << " KiB";
  }
  std::printf("[figure] large_result.async_buffered.rows=%zu elapsed_ms=%ld peak_rss_growth_kib=%ld\n", n, elapsed, growth);
  auto [ec, r] = client.async_query("select 1", pgpipe::test::use_future_ec).get();
  EXPECT_FALSE(ec);
  PGPIPE_SKIP_IF_RSS_UNCHECKED();
}

}  // namespace
