// validate(pool_params): bad configurations fail at construction with a
// message naming the field and its value, never quoting the conninfo.
#include <pgpipe/error.hpp>
#include <pgpipe/pool_params.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <string>

namespace {

using namespace std::chrono_literals;

// The message of the bad_params error validate() throws, or "" if it accepts.
std::string rejection(const pgpipe::pool_params& p) {
  try {
    pgpipe::validate(p);
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::errc::bad_params);
    return e.diag().client_message.empty() ? e.what() : e.diag().client_message;
  }
  return "";
}

pgpipe::pool_params with(const std::function<void(pgpipe::pool_params&)>& f) {
  pgpipe::pool_params p;
  f(p);
  return p;
}

TEST(pool_params, defaults_are_valid) { EXPECT_EQ(rejection(pgpipe::pool_params{}), ""); }

TEST(pool_params, empty_conninfo_is_valid_libpq_uses_its_defaults) {
  EXPECT_EQ(rejection(with([](auto& p) { p.conninfo = ""; })), "");
}

TEST(pool_params, zero_max_size_is_rejected) {
  const auto m = rejection(with([](auto& p) { p.max_size = 0; }));
  EXPECT_NE(m.find("max_size"), std::string::npos) << m;
  EXPECT_NE(m.find("(0)"), std::string::npos) << m;
}

TEST(pool_params, min_size_above_max_size_names_both_values) {
  const auto m = rejection(with([](auto& p) {
    p.min_size = 12;
    p.max_size = 10;
  }));
  EXPECT_NE(m.find("min_size (12)"), std::string::npos) << m;
  EXPECT_NE(m.find("max_size (10)"), std::string::npos) << m;
}

TEST(pool_params, min_size_equal_to_max_size_is_valid) {
  EXPECT_EQ(rejection(with([](auto& p) {
              p.min_size = 10;
              p.max_size = 10;
            })),
            "");
}

TEST(pool_params, zero_pipeline_depth_is_rejected) {
  const auto m = rejection(with([](auto& p) { p.pipeline_depth = 0; }));
  EXPECT_NE(m.find("pipeline_depth (0)"), std::string::npos) << m;
}

TEST(pool_params, negative_durations_are_rejected_by_name) {
  const std::pair<const char*, std::function<void(pgpipe::pool_params&)>> cases[] = {
      {"acquire_timeout (-1ms)", [](auto& p) { p.acquire_timeout = -1ms; }},
      {"query_timeout (-2ms)", [](auto& p) { p.query_timeout = -2ms; }},
      {"max_lifetime (-3ms)", [](auto& p) { p.max_lifetime = -3ms; }},
      {"idle_timeout (-4ms)", [](auto& p) { p.idle_timeout = -4ms; }},
      {"health_check_interval (-5ms)", [](auto& p) { p.health_check_interval = -5ms; }},
      {"stall_timeout (-6ms)", [](auto& p) { p.stall_timeout = -6ms; }},
      {"connect_timeout (-7ms)", [](auto& p) { p.connect_timeout = -7ms; }},
      {"connect_backoff_initial (-8ms)", [](auto& p) { p.connect_backoff_initial = -8ms; }},
  };
  for (const auto& [expected, f] : cases) {
    const auto m = rejection(with(f));
    EXPECT_NE(m.find(expected), std::string::npos) << "expected '" << expected << "' in: " << m;
  }
}

TEST(pool_params, zero_disables_optional_timers) {
  EXPECT_EQ(rejection(with([](auto& p) {
              p.query_timeout = 0ms;
              p.max_lifetime = 0ms;
              p.idle_timeout = 0ms;
              p.health_check_interval = 0ms;
              p.stall_timeout = 0ms;
              p.acquire_timeout = 0ms;
              p.max_queued = 0;
            })),
            "");
}

TEST(pool_params, unbounded_connect_or_zero_backoff_is_rejected) {
  EXPECT_NE(rejection(with([](auto& p) { p.connect_timeout = 0ms; })).find("connect_timeout (0ms)"), std::string::npos);
  EXPECT_NE(rejection(with([](auto& p) { p.connect_backoff_initial = 0ms; })).find("connect_backoff_initial (0ms)"),
            std::string::npos);
}

TEST(pool_params, backoff_initial_above_max_names_both) {
  const auto m = rejection(with([](auto& p) {
    p.connect_backoff_initial = 800ms;
    p.connect_backoff_max = 500ms;
  }));
  EXPECT_NE(m.find("connect_backoff_initial (800ms)"), std::string::npos) << m;
  EXPECT_NE(m.find("connect_backoff_max (500ms)"), std::string::npos) << m;
}

TEST(pool_params, conninfo_with_nul_is_rejected_without_quoting_it) {
  const auto m = rejection(with([](auto& p) { p.conninfo = std::string("host=x password=hunter2\0x", 25); }));
  EXPECT_NE(m.find("conninfo"), std::string::npos) << m;
  EXPECT_EQ(m.find("hunter2"), std::string::npos) << "a password must never appear in an error";
}

}  // namespace

TEST(pool_params, on_connect_entries_must_be_statements) {
  EXPECT_EQ(rejection(with([](auto& p) { p.on_connect = {"set search_path = app", "set timezone = 'UTC'"}; })), "");
  const auto blank = rejection(with([](auto& p) { p.on_connect = {"set timezone = 'UTC'", "  \n"}; }));
  EXPECT_NE(blank.find("on_connect[1]"), std::string::npos) << blank;
  const auto nul = rejection(with([](auto& p) { p.on_connect = {std::string("set a.b = 'x\0y'", 16)}; }));
  EXPECT_NE(nul.find("on_connect[0]"), std::string::npos) << nul;
  EXPECT_NE(nul.find("NUL"), std::string::npos) << nul;
}

TEST(pool_params, growth_pace_must_let_the_pool_grow) {
  EXPECT_EQ(rejection(with([](auto& p) {
              p.growth_connects = 4;
              p.growth_interval = 50ms;
            })),
            "");
  const auto zero = rejection(with([](auto& p) { p.growth_connects = 0; }));
  EXPECT_NE(zero.find("growth_connects (0)"), std::string::npos) << zero;
  const auto negative = rejection(with([](auto& p) { p.growth_interval = -1ms; }));
  EXPECT_NE(negative.find("growth_interval (-1ms)"), std::string::npos) << negative;
  const auto slow = rejection(with([](auto& p) { p.growth_interval = 2min; }));
  EXPECT_NE(slow.find("growth_interval (120000ms)"), std::string::npos) << slow;
  EXPECT_EQ(rejection(with([](auto& p) { p.growth_interval = 1min; })), "");
}
