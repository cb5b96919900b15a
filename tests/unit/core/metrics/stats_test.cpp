// to_prometheus(): valid text exposition a Prometheus server can scrape.
#include <pgpipe/stats.hpp>

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

pgpipe::pool_stats sample_stats() {
  pgpipe::pool_stats s;
  s.connecting = 1;
  s.idle = 2;
  s.busy = 3;
  s.draining = 4;
  s.checking = 5;
  s.in_flight = 17;
  s.queued = 9;
  s.completed = 123456;
  s.errors.pool_timeout = 7;
  s.errors.queue_full = 8;
  s.errors.connection_lost = 11;
  s.errors.query_timeout = 12;
  s.errors.cancelled = 13;
  s.errors.server = 14;
  s.errors.connect = 15;
  s.errors.other = 16;
  s.connects = 21;
  s.disconnects = 20;
  s.loop_lag_last = std::chrono::microseconds(1500);
  s.loop_lag_max = std::chrono::microseconds(2'000'001);
  s.threads = 2;
  // 3 queries: 80 us, 1.2 ms, 20 s (above every bound).
  s.query_duration.le = {1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2};
  s.query_duration.count = 3;
  s.query_duration.sum = std::chrono::nanoseconds(20'001'280'000);
  s.acquire_wait.count = 0;
  return s;
}

// sample line "name{labels} value" -> value, keyed by "name{labels}".
std::map<std::string, std::string> samples(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto sp = line.rfind(' ');
    out[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return out;
}

TEST(stats, every_line_is_valid_exposition_format) {
  const std::string text = pgpipe::to_prometheus(sample_stats(), "app_db");
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  const std::regex help(R"(# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .+)");
  const std::regex type(R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (gauge|counter|histogram))");
  const std::regex sample(R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*"\})? -?[0-9]+(\.[0-9]+)?)");
  std::set<std::string> typed;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, type)) {
      EXPECT_TRUE(typed.insert(m[1]).second) << "TYPE given twice for " << m[1];
    } else if (std::regex_match(line, m, sample)) {
      // A histogram's samples are its family name plus _bucket, _sum or _count.
      std::string family = m[1];
      for (std::string_view suffix : {"_bucket", "_sum", "_count"})
        if (!typed.contains(family) && family.ends_with(suffix)) family.resize(family.size() - suffix.size());
      EXPECT_TRUE(typed.contains(family)) << "sample before its TYPE: " << line;
      EXPECT_EQ(m[1].str().rfind("app_db_", 0), 0u) << line;
    } else {
      EXPECT_TRUE(std::regex_match(line, help)) << "not a valid line: '" << line << "'";
    }
  }
}

TEST(stats, values_land_in_the_documented_series) {
  const auto s = samples(pgpipe::to_prometheus(sample_stats()));
  EXPECT_EQ(s.at("pgpipe_connections{state=\"connecting\"}"), "1");
  EXPECT_EQ(s.at("pgpipe_connections{state=\"idle\"}"), "2");
  EXPECT_EQ(s.at("pgpipe_connections{state=\"busy\"}"), "3");
  EXPECT_EQ(s.at("pgpipe_connections{state=\"draining\"}"), "4");
  EXPECT_EQ(s.at("pgpipe_connections{state=\"checking\"}"), "5");
  EXPECT_EQ(s.at("pgpipe_requests_in_flight"), "17");
  EXPECT_EQ(s.at("pgpipe_requests_queued"), "9");
  EXPECT_EQ(s.at("pgpipe_requests_completed_total"), "123456");
  EXPECT_EQ(s.at("pgpipe_errors_total{kind=\"pool_timeout\"}"), "7");
  EXPECT_EQ(s.at("pgpipe_errors_total{kind=\"queue_full\"}"), "8");
  EXPECT_EQ(s.at("pgpipe_errors_total{kind=\"connection_lost\"}"), "11");
  EXPECT_EQ(s.at("pgpipe_errors_total{kind=\"query_timeout\"}"), "12");
  EXPECT_EQ(s.at("pgpipe_errors_total{kind=\"cancelled\"}"), "13");
  EXPECT_EQ(s.at("pgpipe_errors_total{kind=\"server\"}"), "14");
  EXPECT_EQ(s.at("pgpipe_errors_total{kind=\"connect\"}"), "15");
  EXPECT_EQ(s.at("pgpipe_errors_total{kind=\"other\"}"), "16");
  EXPECT_EQ(s.at("pgpipe_connects_total"), "21");
  EXPECT_EQ(s.at("pgpipe_disconnects_total"), "20");
  EXPECT_EQ(s.at("pgpipe_loop_lag_seconds{stat=\"last\"}"), "0.001500");
  EXPECT_EQ(s.at("pgpipe_loop_lag_seconds{stat=\"max\"}"), "2.000001");
  EXPECT_EQ(s.at("pgpipe_threads"), "2");
}

TEST(stats, counters_are_typed_counter_and_end_in_total) {
  const std::string text = pgpipe::to_prometheus(sample_stats());
  EXPECT_NE(text.find("# TYPE pgpipe_errors_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE pgpipe_connects_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE pgpipe_requests_completed_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE pgpipe_connections gauge\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE pgpipe_requests_in_flight gauge\n"), std::string::npos);
}

TEST(stats, zero_stats_render_zeros) {
  const auto s = samples(pgpipe::to_prometheus(pgpipe::pool_stats{}));
  EXPECT_EQ(s.at("pgpipe_requests_queued"), "0");
  EXPECT_EQ(s.at("pgpipe_loop_lag_seconds{stat=\"max\"}"), "0.000000");
}

TEST(stats, histograms_have_cumulative_buckets_up_to_inf_then_sum_and_count) {
  const std::string text = pgpipe::to_prometheus(sample_stats());
  EXPECT_NE(text.find("# TYPE pgpipe_query_duration_seconds histogram\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE pgpipe_acquire_wait_seconds histogram\n"), std::string::npos);
  const auto s = samples(text);
  EXPECT_EQ(s.at("pgpipe_query_duration_seconds_bucket{le=\"0.0001\"}"), "1");
  EXPECT_EQ(s.at("pgpipe_query_duration_seconds_bucket{le=\"0.00025\"}"), "1");
  EXPECT_EQ(s.at("pgpipe_query_duration_seconds_bucket{le=\"0.0025\"}"), "2");
  EXPECT_EQ(s.at("pgpipe_query_duration_seconds_bucket{le=\"1\"}"), "2");
  EXPECT_EQ(s.at("pgpipe_query_duration_seconds_bucket{le=\"2.5\"}"), "2");
  EXPECT_EQ(s.at("pgpipe_query_duration_seconds_bucket{le=\"10\"}"), "2");
  EXPECT_EQ(s.at("pgpipe_query_duration_seconds_bucket{le=\"+Inf\"}"), "3");
  EXPECT_EQ(s.at("pgpipe_query_duration_seconds_count"), "3");
  EXPECT_EQ(s.at("pgpipe_query_duration_seconds_sum"), "20.001280000");
  EXPECT_EQ(s.at("pgpipe_acquire_wait_seconds_bucket{le=\"+Inf\"}"), "0");
  EXPECT_EQ(s.at("pgpipe_acquire_wait_seconds_count"), "0");
  EXPECT_EQ(s.at("pgpipe_acquire_wait_seconds_sum"), "0.000000000");
  // Buckets in increasing `le` order, +Inf last, then _sum and _count.
  const auto first = text.find("pgpipe_query_duration_seconds_bucket{le=\"0.0001\"}");
  const auto inf = text.find("pgpipe_query_duration_seconds_bucket{le=\"+Inf\"}");
  const auto sum = text.find("pgpipe_query_duration_seconds_sum");
  const auto count = text.find("pgpipe_query_duration_seconds_count");
  EXPECT_LT(first, inf);
  EXPECT_LT(inf, sum);
  EXPECT_LT(sum, count);
  std::size_t buckets = 0;
  for (auto at = text.find("pgpipe_query_duration_seconds_bucket"); at != std::string::npos;
       at = text.find("pgpipe_query_duration_seconds_bucket", at + 1))
    ++buckets;
  EXPECT_EQ(buckets, pgpipe::latency_histogram::bounds_us.size() + 1);
}

}  // namespace
