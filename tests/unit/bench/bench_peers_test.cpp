// pgpipe-bench beside other clients: the peer drivers' options, the result
// line a peer writes, the client CPU counted over the measured window only,
// and the report's async/peer ratios. No server.
#include <gtest/gtest.h>

#include "measurement.hpp"
#include "options.hpp"
#include "report.hpp"
#include "run_result.hpp"
#include "sampler.hpp"

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace pgpipe::bench {
namespace {

options parse(std::vector<std::string> args) {
  std::vector<char*> argv{const_cast<char*>("pgpipe-bench")};
  for (auto& a : args) argv.push_back(a.data());
  return parse_options(static_cast<int>(argv.size()), argv.data());
}

std::string refusal(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

TEST(bench_peers, peers_run_the_builtin_select_only) {
  const auto o = parse({"--drivers", "async,tokio-postgres,jdbc", "--peers", "/somewhere"});
  EXPECT_EQ(o.drivers, (std::vector<std::string>{"async", "tokio-postgres", "jdbc"}));
  EXPECT_EQ(o.peers_dir, "/somewhere");
  EXPECT_NE(refusal({"--drivers", "jdbc", "--workload", "tpcb"}).find("'jdbc' has no tpcb run"), std::string::npos);
  EXPECT_NE(refusal({"--drivers", "jdbc", "--sql", "mine.sql"}).find("built-in select only"), std::string::npos);
  EXPECT_NE(refusal({"--drivers", "tokio-postgres", "--no-prepared"}).find("tokio-postgres"), std::string::npos);
  EXPECT_NE(refusal({"--drivers", "async", "--peers", ""}).find("--peers"), std::string::npos);
}

TEST(bench_peers, peer_arguments_carry_the_run_and_the_clock_never_the_conninfo) {
  auto o = parse({"--drivers", "jdbc", "--concurrency", "300", "--warmup", "1.5", "--duration", "4",
                  "--conninfo", "host=h password=secret"});
  const auto a = peer_arguments(o, 4);
  ASSERT_EQ(a.size(), 10u);
  EXPECT_EQ(a[0], "--pool");
  EXPECT_EQ(a[1], "4");
  EXPECT_EQ(a[3], "300");
  EXPECT_EQ(a[5], "1.5");
  EXPECT_EQ(a[7], "4");
  EXPECT_EQ(a[8], "--clk-tck");
  EXPECT_GT(std::stol(a[9]), 0);
  for (const auto& s : a) EXPECT_EQ(s.find("secret"), std::string::npos) << s;
}

TEST(bench_peers, a_peer_result_line_decodes_with_its_window_cpu) {
  // What bench/peers/*/ write: a subset of the keys, in their own number format.
  const auto r = decode_result(
      "driver=tokio-postgres pool=4 concurrency=500 duration_s=5 queries=400000 qps=80000 p50_ms=1.2 p95_ms=3 "
      "p99_ms=4.5 max_ms=20 errors=0 startup_ms=35.5 window_cpu_s=2.5 ok=1");
  EXPECT_EQ(r.driver, "tokio-postgres");
  EXPECT_EQ(r.queries, 400000u);
  EXPECT_DOUBLE_EQ(r.window_cpu_s, 2.5);
  EXPECT_TRUE(r.ok);
  // A line without it (pgbench's row, an older child) reads as not measured.
  EXPECT_DOUBLE_EQ(decode_result("driver=async queries=1").window_cpu_s, -1);
  run_result c;
  c.window_cpu_s = 0.75;
  EXPECT_DOUBLE_EQ(decode_result(encode_result(c)).window_cpu_s, 0.75);
}

TEST(bench_peers, window_cpu_counts_the_window_only) {
  // A client burns CPU during a 2 s warm-up and then idles through a
  // 0.5 s window: a CPU figure over the process's life (or from t0) would
  // carry the warm-up's seconds; the window's must not.
  measurement m(2.0, 0.5);
  m.start();
  std::atomic<bool> burning{true};
  std::thread burner([&] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    volatile std::uint64_t x = 0;
    while (std::chrono::steady_clock::now() < until) x = x + 1;
    burning = false;
  });
  ASSERT_TRUE(m.begin_query());
  m.end_query(m.now(), {});
  const double cpu_before = self_cpu_seconds();
  m.run_timeline(-1, [] { return true; }, std::chrono::seconds(5), std::chrono::seconds(5), std::chrono::seconds(1),
                 [] {});
  burner.join();
  const double cpu_whole = self_cpu_seconds() - cpu_before;
  run_result r;
  m.fill(r);
  ASSERT_GE(r.window_cpu_s, 0);
  // The burner ran in the warm-up only (it stops 2 s after t0, the window
  // opens at least 2 s after t0): at most a couple of ticks of it remain.
  EXPECT_LT(r.window_cpu_s, 0.1) << "whole run " << cpu_whole;
  EXPECT_GT(cpu_whole, 0.2);  // the burner did burn, so the check above can fail
}

TEST(bench_peers, the_report_gives_async_over_each_peer) {
  options o;
  o.pools = {4};
  report_input in;
  in.opts = &o;
  in.drivers = {"async", "tokio-postgres", "jdbc"};
  auto run = [](const std::string& d, double qps, double window_cpu_s) {
    run_result r;
    r.driver = d;
    r.pool = 4;
    r.duration_s = 5;
    r.qps = qps;
    r.queries = static_cast<std::uint64_t>(qps * 5);
    r.window_cpu_s = window_cpu_s;
    return r;
  };
  in.runs = {run("async", 100000, 4.0), run("tokio-postgres", 80000, 4.0), run("jdbc", 25000, 5.0)};
  const std::string md = markdown_report(in);
  // async: 8 µs per query; tokio-postgres 10; jdbc 40.
  EXPECT_NE(md.find("async/tokio-postgres 1.25x q/s, 0.80x CPU per query (8.00 vs 10.00 µs)"), std::string::npos) << md;
  EXPECT_NE(md.find("async/jdbc 4.00x q/s, 0.20x CPU per query (8.00 vs 40.00 µs)"), std::string::npos) << md;
  EXPECT_NE(md.find("| 8.00 |"), std::string::npos) << md;
}

}  // namespace
}  // namespace pgpipe::bench
