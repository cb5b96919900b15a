// query_metrics, the room both drivers share: which counter an outcome
// lands in, the observer hooks (events filled, exceptions contained), the
// logger slot (replaced, emptied, a throwing logger contained).
#include "core/metrics/query_metrics.hpp"

#include <pgpipe/error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace std::chrono_literals;
using pgpipe::errc;
using pgpipe::log_level;
using pgpipe::pool_stats;
using pgpipe::query_event;
using pgpipe::detail::metrics_clock;
using pgpipe::detail::observed_query;
using pgpipe::detail::observed_start;
using pgpipe::detail::query_metrics;

pool_stats stats_of(const query_metrics& m) {
  pool_stats s;
  m.fill_stats(s);
  return s;
}

std::error_code code(errc e) { return pgpipe::make_error_code(e); }

TEST(query_metrics, a_completed_query_counts_once_and_its_error_by_kind) {
  query_metrics m(nullptr, {});
  m.count_completed({});
  m.count_completed(pgpipe::make_sqlstate("22012"));
  m.count_completed(code(errc::connection_lost));
  m.count_completed(code(errc::not_sent));
  m.count_completed(code(errc::query_timeout));
  m.count_completed(code(errc::cancelled));
  m.count_completed(code(errc::protocol_error));
  const auto s = stats_of(m);
  EXPECT_EQ(s.completed, 7u);
  EXPECT_EQ(s.errors.server, 1u);
  EXPECT_EQ(s.errors.connection_lost, 2u) << "both loss codes";
  EXPECT_EQ(s.errors.query_timeout, 1u);
  EXPECT_EQ(s.errors.cancelled, 1u);
  EXPECT_EQ(s.errors.other, 1u);
}

TEST(query_metrics, an_unstarted_failure_ends_once_and_leaves_what_pool_core_counts_to_it) {
  query_metrics m(nullptr, {});
  // pool_core's own: pool_timeout, queue_full, connect errors (and a SQLSTATE refusing the connect).
  for (auto e : {code(errc::pool_timeout), code(errc::queue_full), code(errc::connect_failed),
                 code(errc::auth_failed), pgpipe::make_sqlstate("53300")})
    m.count_unstarted_failure(e);
  auto s = stats_of(m);
  EXPECT_EQ(s.completed, 5u) << "every query that ended counts once, failures included";
  EXPECT_EQ(s.errors.other + s.errors.server + s.errors.cancelled + s.errors.query_timeout, 0u);
  m.count_unstarted_failure(code(errc::cancelled));
  m.count_unstarted_failure(code(errc::query_timeout));
  m.count_unstarted_failure(code(errc::not_sent));
  s = stats_of(m);
  EXPECT_EQ(s.errors.cancelled, 1u);
  EXPECT_EQ(s.errors.query_timeout, 1u);
  EXPECT_EQ(s.errors.other, 1u) << "a request that lost its connection before reaching it";
  EXPECT_EQ(s.completed, 8u);
}

TEST(query_metrics, the_histograms_record_queries_and_waits_apart) {
  query_metrics m(nullptr, {});
  m.record_query(3ms);
  m.record_query(4ms);
  m.record_wait(1ms);
  const auto s = stats_of(m);
  EXPECT_EQ(s.query_duration.count, 2u);
  EXPECT_EQ(s.acquire_wait.count, 1u);
}

struct recording_observer : pgpipe::query_observer {
  std::vector<query_event> starts, ends;
  bool throw_always = false;
  int token = 0;
  void* on_start(const query_event& e) override {
    starts.push_back(e);
    if (throw_always) throw std::runtime_error("observer failed");
    return &token;
  }
  void on_end(const query_event& e) override {
    ends.push_back(e);
    if (throw_always) throw std::runtime_error("observer failed");
  }
};

TEST(query_metrics, the_observer_sees_start_and_end_with_what_start_returned) {
  recording_observer obs;
  const auto t0 = metrics_clock::now();
  const observed_query q{"select 1", true, t0, 2ms};
  const observed_start s = pgpipe::detail::observe_start(obs, q, 7, 4242, t0 + 2ms);
  ASSERT_EQ(obs.starts.size(), 1u);
  EXPECT_EQ(obs.starts[0].sql, "select 1");
  EXPECT_EQ(obs.starts[0].slot, 7u);
  EXPECT_EQ(obs.starts[0].backend_pid, 4242);
  EXPECT_TRUE(obs.starts[0].on_lease);
  EXPECT_EQ(obs.starts[0].wait, 2ms);
  EXPECT_EQ(s.user, &obs.token);
  pgpipe::detail::observe_end(obs, q, &s, {}, "", 3, t0 + 10ms);
  ASSERT_EQ(obs.ends.size(), 1u);
  const query_event& e = obs.ends[0];
  EXPECT_TRUE(e.started);
  EXPECT_EQ(e.user, &obs.token);
  EXPECT_EQ(e.slot, 7u);
  EXPECT_EQ(e.backend_pid, 4242);
  EXPECT_EQ(e.server, 8ms);
  EXPECT_EQ(e.total, 10ms);
  EXPECT_EQ(e.rows, 3u);
  EXPECT_FALSE(e.ec);
}

// A read router's second attempt: numbered, and its total counts from the
// caller's call (before its own submission); the failed first one says a
// re-run follows.
TEST(query_metrics, a_rerun_is_numbered_and_its_total_counts_from_the_callers_call) {
  recording_observer obs;
  const auto t0 = metrics_clock::now();
  const observed_query first{"select 3", false, t0, 1ms, t0, 1, true};
  const observed_start s1 = pgpipe::detail::observe_start(obs, first, 1, 11, t0 + 1ms);
  pgpipe::detail::observe_end(obs, first, &s1, code(errc::connection_lost), "", 0, t0 + 40ms);
  const observed_query second{"select 3", false, t0 + 40ms, 2ms, t0, 2, false};
  const observed_start s2 = pgpipe::detail::observe_start(obs, second, 2, 22, t0 + 42ms);
  pgpipe::detail::observe_end(obs, second, &s2, {}, "", 1, t0 + 50ms);
  ASSERT_EQ(obs.starts.size(), 2u);
  ASSERT_EQ(obs.ends.size(), 2u);
  EXPECT_EQ(obs.starts[0].attempt, 1u);
  EXPECT_EQ(obs.starts[1].attempt, 2u);
  EXPECT_TRUE(obs.ends[0].rerun);
  EXPECT_EQ(obs.ends[0].total, 40ms);
  EXPECT_FALSE(obs.ends[1].rerun);
  EXPECT_EQ(obs.ends[1].attempt, 2u);
  EXPECT_EQ(obs.ends[1].server, 8ms);
  EXPECT_EQ(obs.ends[1].total, 50ms) << "the caller waited for both attempts";
}

TEST(query_metrics, a_query_that_never_reached_a_connection_ends_unstarted) {
  recording_observer obs;
  const auto t0 = metrics_clock::now();
  pgpipe::detail::observe_end(obs, {"select 2", false, t0, 5ms}, nullptr, code(errc::pool_timeout), "", 0, t0 + 5ms);
  ASSERT_EQ(obs.ends.size(), 1u);
  EXPECT_FALSE(obs.ends[0].started);
  EXPECT_EQ(obs.ends[0].slot, 0u);
  EXPECT_EQ(obs.ends[0].user, nullptr);
  EXPECT_EQ(obs.ends[0].ec, errc::pool_timeout);
  EXPECT_EQ(obs.ends[0].wait, 5ms);
}

TEST(query_metrics, an_observer_that_throws_never_reaches_the_driver) {
  recording_observer obs;
  obs.throw_always = true;
  const auto t0 = metrics_clock::now();
  const observed_query q{"select 3", false, t0, 0ms};
  observed_start s{};
  EXPECT_NO_THROW(s = pgpipe::detail::observe_start(obs, q, 1, 1, t0));
  EXPECT_EQ(s.user, nullptr) << "nothing was returned";
  EXPECT_NO_THROW(pgpipe::detail::observe_end(obs, q, &s, {}, "", 0, t0));
  EXPECT_EQ(obs.ends.size(), 1u);
}

TEST(query_metrics, the_logger_is_replaced_emptied_and_contained) {
  std::vector<std::string> first, second;
  query_metrics m(nullptr, [&](log_level, std::string_view line) { first.emplace_back(line); });
  m.log(log_level::info, "one");
  m.set_logger([&](log_level, std::string_view line) { second.emplace_back(line); });
  m.log(log_level::warning, "two");
  m.set_logger({});
  m.log(log_level::info, "nobody");
  EXPECT_EQ(first, std::vector<std::string>{"one"});
  EXPECT_EQ(second, std::vector<std::string>{"two"});
  m.set_logger([](log_level, std::string_view) { throw std::runtime_error("logger failed"); });
  EXPECT_NO_THROW(m.log(log_level::warning, "dropped"));
}

TEST(query_metrics, a_logger_may_call_back_into_the_metrics) {
  query_metrics* self = nullptr;
  int calls = 0;
  query_metrics m(nullptr, [&](log_level, std::string_view) {
    ++calls;
    pool_stats s;
    self->fill_stats(s);                                       // stats() from a logger
    self->set_logger([&](log_level, std::string_view) {});  // and replacing itself
  });
  self = &m;
  m.log(log_level::info, "x");
  EXPECT_EQ(calls, 1);
}

TEST(query_metrics, the_observer_is_the_pools) {
  auto obs = std::make_shared<recording_observer>();
  EXPECT_EQ(query_metrics(obs, {}).observer(), obs.get());
  EXPECT_EQ(query_metrics(nullptr, {}).observer(), nullptr);
}

}  // namespace
