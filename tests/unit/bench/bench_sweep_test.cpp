// pgpipe-bench --sweep's decisions without a server: the ladder of pool
// sizes, when a driver's sweep stops, which pool is the answer, and the lines
// and chart marks the user reads.
#include <gtest/gtest.h>

#include "options.hpp"
#include "report.hpp"
#include "sweep.hpp"
#include "sweep_report.hpp"

#include <fstream>
#include <map>
#include <stdexcept>

namespace pgpipe::bench {
namespace {

// Feeds a plan a throughput curve (pool -> q/s) until it stops; returns the
// pools it asked for, in order.
std::vector<std::size_t> drive(sweep_plan& plan, const std::map<std::size_t, double>& curve) {
  std::vector<std::size_t> asked;
  while (auto pool = plan.next_pool()) {
    asked.push_back(*pool);
    plan.record(*pool, curve.at(*pool), true);
  }
  return asked;
}

TEST(bench_sweep, ladder_doubles_and_ends_at_the_limit) {
  EXPECT_EQ(sweep_ladder(1), (std::vector<std::size_t>{1}));
  EXPECT_EQ(sweep_ladder(8), (std::vector<std::size_t>{1, 2, 4, 8}));
  EXPECT_EQ(sweep_ladder(20), (std::vector<std::size_t>{1, 2, 4, 8, 16, 20}));
  EXPECT_THROW(sweep_ladder(0), std::invalid_argument);
}

TEST(bench_sweep, stops_once_throughput_has_clearly_fallen) {
  sweep_plan plan({});
  const auto asked = drive(plan, {{1, 10'000}, {2, 19'000}, {4, 30'000}, {8, 31'000}, {16, 24'000}, {32, 9'000}});
  // 16 is 23% below the best (8): past the knee, 32 is not run.
  EXPECT_EQ(asked, (std::vector<std::size_t>{1, 2, 4, 8, 16}));
  EXPECT_NE(plan.stop_reason().find("fell 23% below the best"), std::string::npos) << plan.stop_reason();
  const auto a = plan.answer();
  ASSERT_TRUE(a);
  // 4 is within 5% of the best (30,000 >= 0.95 x 31,000): the smallest such pool.
  EXPECT_EQ(a->pool, 4u);
  EXPECT_EQ(a->qps, 30'000);
  EXPECT_EQ(a->best_pool, 8u);
  EXPECT_EQ(a->best_qps, 31'000);
}

TEST(bench_sweep, a_slow_decline_stops_after_two_pools_below_the_band) {
  sweep_plan plan({});
  // Each step after 4 loses ~8%: never 15% below at once, but two in a row
  // outside the 5% band.
  const auto asked = drive(plan, {{1, 50'000}, {2, 60'000}, {4, 62'000}, {8, 57'000}, {16, 55'000}, {32, 1}});
  EXPECT_EQ(asked, (std::vector<std::size_t>{1, 2, 4, 8, 16}));
  EXPECT_NE(plan.stop_reason().find("2 pools in a row"), std::string::npos) << plan.stop_reason();
  EXPECT_EQ(plan.answer()->pool, 2u);  // 60,000 >= 0.95 x 62,000
}

TEST(bench_sweep, noise_inside_the_band_does_not_stop_it) {
  sweep_plan plan({.max_pool = 16});
  // Dips of under 5% are noise on a shared machine; one dip of 10% alone is
  // neither a clear fall nor a trend.
  const auto asked = drive(plan, {{1, 100}, {2, 97}, {4, 99}, {8, 90}, {16, 98}});
  EXPECT_EQ(asked, (std::vector<std::size_t>{1, 2, 4, 8, 16}));
  EXPECT_NE(plan.stop_reason().find("reached the limit (pool 16)"), std::string::npos) << plan.stop_reason();
  EXPECT_EQ(plan.answer()->pool, 1u);
  EXPECT_EQ(plan.answer()->best_pool, 1u);
}

TEST(bench_sweep, rising_all_the_way_answers_the_limit) {
  sweep_plan plan({.max_pool = 8});
  drive(plan, {{1, 1}, {2, 2}, {4, 4}, {8, 8}});
  EXPECT_EQ(plan.answer()->pool, 8u);
  EXPECT_NE(plan.stop_reason().find("limit"), std::string::npos);
}

TEST(bench_sweep, a_failed_run_ends_the_sweep_and_keeps_what_ran) {
  sweep_plan plan({});
  plan.record(1, 5'000, true);
  plan.record(2, 9'000, true);
  plan.record(4, 0, false, "FATAL: sorry, too many clients already");
  EXPECT_FALSE(plan.next_pool());
  EXPECT_EQ(plan.stop_reason(), "run failed at pool 4: FATAL: sorry, too many clients already");
  EXPECT_EQ(plan.answer()->pool, 2u);
  EXPECT_EQ(plan.points().size(), 2u);  // the failure is not a point at 0 q/s
}

TEST(bench_sweep, no_success_no_answer_and_pools_out_of_order_are_refused) {
  sweep_plan plan({});
  EXPECT_THROW(plan.record(2, 1, true), std::logic_error);
  plan.record(1, 0, false, "cannot connect");
  EXPECT_FALSE(plan.answer());
  EXPECT_THROW(plan.record(2, 1, true), std::logic_error);  // over
}

TEST(bench_sweep, tolerance_is_a_parameter) {
  sweep_plan tight({.max_pool = 4, .tolerance = 0.01});
  drive(tight, {{1, 96}, {2, 100}, {4, 99.5}});
  EXPECT_EQ(tight.answer()->pool, 2u);
  sweep_plan loose({.max_pool = 4, .tolerance = 0.05});
  drive(loose, {{1, 96}, {2, 100}, {4, 99.5}});
  EXPECT_EQ(loose.answer()->pool, 1u);
}

run_result run(const std::string& driver, std::size_t pool, double qps, double p99, std::size_t threads, double rss,
               double server_cpu) {
  run_result r;
  r.driver = driver;
  r.pool = pool;
  r.round = 1;
  r.qps = qps;
  r.p99_ms = p99;
  r.threads_max = threads;
  r.rss_peak_mb = rss;
  r.server_cpu_s = server_cpu;
  return r;
}

TEST(bench_sweep, report_names_the_answer_its_costs_and_the_rule_of_thumb) {
  options o;
  o.pools = {1, 2, 4, 8};
  report_input in;
  in.opts = &o;
  in.drivers = {"async", "blocking"};
  std::vector<driver_sweep> sweeps{{"async", sweep_plan({.max_pool = 8})}, {"blocking", sweep_plan({.max_pool = 8})}};
  const std::map<std::size_t, double> async_curve{{1, 40'000}, {2, 51'000}, {4, 52'000}, {8, 30'000}};
  const std::map<std::size_t, double> blocking_curve{{1, 9'000}, {2, 15'000}, {4, 21'000}, {8, 23'000}};
  for (const auto& [pool, qps] : async_curve) in.runs.push_back(run("async", pool, qps, 2.5, 6, 21.4, 15.25));
  for (const auto& [pool, qps] : blocking_curve) in.runs.push_back(run("blocking", pool, qps, 9, 10 + pool, 30, 12));
  drive(sweeps[0].plan, async_curve);
  drive(sweeps[1].plan, blocking_curve);

  const std::string text = sweep_markdown(in, sweeps, 2, 0.05);
  EXPECT_NE(text.find("rule of thumb: connections = 2 x server cores = 2 x 2 = 4"), std::string::npos) << text;
  EXPECT_NE(text.find("- **async**: pool 2: 51,000 q/s (best 52,000 at pool 4), p99 2.50 ms, 6 client threads, "
                      "peak RSS 21 MB, server CPU 15.2 s; rule of thumb (pool 4): 52,000 q/s (+2%) with 2 more "
                      "connections; sweep stopped: throughput fell 42% below the best (at pool 8)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("- **blocking**: pool 8: 23,000 q/s, p99 9.00 ms, 18 client threads, peak RSS 30 MB, server "
                      "CPU 12.0 s; rule of thumb (pool 4): 21,000 q/s (-9%) with 4 fewer connections; sweep stopped: "
                      "reached the limit (pool 8)"),
            std::string::npos)
      << text;
  // Remote server, cores not given: no figure is invented.
  const std::string remote = sweep_markdown(in, sweeps, 0, 0.05);
  EXPECT_NE(remote.find("--server-cores"), std::string::npos);
  EXPECT_EQ(remote.find("rule of thumb (pool"), std::string::npos);

  const auto marks = sweep_marks(sweeps);
  ASSERT_EQ(marks.size(), 2u);
  EXPECT_EQ(marks[0].driver, "async");
  EXPECT_EQ(marks[0].pool, 2u);
  EXPECT_EQ(marks[1].pool, 8u);
  // The chart rings each answer and draws the rule's pool.
  in.marks = marks;
  in.reference_pool = 4;
  const std::string svg = svg_chart(in);
  EXPECT_NE(svg.find("async: pool 2, the smallest within 5% of its best"), std::string::npos);
  EXPECT_NE(svg.find("blocking: pool 8, the smallest within 5% of its best"), std::string::npos);
  EXPECT_NE(svg.find("2 x server cores"), std::string::npos);
}

TEST(bench_sweep, options_sweep_flags_and_refuse_pools_beside_it) {
  const char* argv[] = {"pgpipe-bench", "--sweep", "--sweep-max", "32", "--server-cores", "8"};
  const auto o = parse_options(6, argv);
  EXPECT_TRUE(o.sweep);
  EXPECT_EQ(o.sweep_max, 32u);
  EXPECT_EQ(o.server_cores, 8u);
  const char* both[] = {"pgpipe-bench", "--sweep", "--pools", "4,8"};
  try {
    parse_options(4, both);
    FAIL() << "--sweep with --pools was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--sweep-max"), std::string::npos) << e.what();
  }
  const char* zero[] = {"pgpipe-bench", "--sweep-max", "0"};
  EXPECT_THROW(parse_options(3, zero), std::invalid_argument);
  EXPECT_NE(help_text().find("--sweep"), std::string::npos);
}

// The password stays off the command line: --password-file names a file,
// whose first line is read; a password in --conninfo is noticed (warned about).
TEST(bench_options, password_file_is_read_and_a_password_in_the_conninfo_is_noticed) {
  const char* argv[] = {"pgpipe-bench", "--conninfo", "host=h user=u", "--password-file", "/some/file"};
  const auto o = parse_options(5, argv);
  ASSERT_TRUE(o.password_file.has_value());
  EXPECT_EQ(*o.password_file, "/some/file");
  const std::string path = ::testing::TempDir() + "bench_password_file";
  {
    std::ofstream f(path);
    f << "s3cret pass\r\nsecond line\n";
  }
  EXPECT_EQ(read_password_file(path), "s3cret pass");
  {
    std::ofstream f(path);
  }
  try {
    (void)read_password_file(path);
    FAIL() << "an empty password file was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)read_password_file(path + ".missing"), std::invalid_argument);
  EXPECT_TRUE(conninfo_has_password("host=h password=x"));
  EXPECT_TRUE(conninfo_has_password("postgresql://u:x@h/db"));
  EXPECT_FALSE(conninfo_has_password("host=h user=u"));
  EXPECT_FALSE(conninfo_has_password("postgresql://u@h/db"));
  const std::string help = help_text();
  EXPECT_NE(help.find("--password-file"), std::string::npos);
  EXPECT_NE(help.find("PGPASSWORD"), std::string::npos);
}

}  // namespace
}  // namespace pgpipe::bench
