// The prepared-statement policy both drivers follow (contract in
// src/core/statements/statement_cache.hpp): facts in, verdicts out, no server.
#include "core/statements/statement_cache.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using pgpipe::detail::is_pooler_symptom;
using pgpipe::detail::is_stale_statement;
using pgpipe::detail::statement_cache;
using pgpipe::detail::statement_failure;
using pgpipe::detail::statement_key;
using pgpipe::detail::statement_verdict;

constexpr const char* plan_changed = "cached plan must not change result type";

TEST(statement_cache, names_are_one_scheme_and_never_reused) {
  statement_cache c(10);
  const std::string* a = c.put("select 1", true);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(*a, "pgpipe_1");
  EXPECT_EQ(*c.get("select 1"), "pgpipe_1");
  EXPECT_TRUE(c.invalidate("select 1", "pgpipe_1", true));
  const std::string* again = c.put("select 1", true);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(*again, "pgpipe_2") << "a renewed statement gets a new name";
}

TEST(statement_cache, the_same_text_with_other_types_is_another_statement) {
  statement_cache c(10);
  const std::string types1("\x17\0\0\0", 4);
  const std::string types2("\x19\0\0\0", 4);
  const std::string n1 = *c.put(statement_key("select $1", types1), true);
  const std::string n2 = *c.put(statement_key("select $1", types2), true);
  EXPECT_NE(n1, n2);
  EXPECT_EQ(c.get("select $1"), nullptr) << "untyped is a third statement";
  EXPECT_EQ(*c.get(statement_key("select $1", types1)), n1);
  EXPECT_EQ(*c.get(statement_key("select $1", types2)), n2);
}

TEST(statement_cache, a_full_cache_evicts_the_least_recently_used_and_hands_its_name_back) {
  statement_cache c(2);
  const std::string q1 = *c.put("q1", true);
  const std::string q2 = *c.put("q2", true);
  ASSERT_NE(c.get("q1"), nullptr);  // q1 is now the most recently used
  const std::string* q3 = c.put("q3", true);
  ASSERT_NE(q3, nullptr);
  EXPECT_EQ(c.invalidated(), std::vector<std::string>{q2});
  EXPECT_FALSE(c.contains("q2"));
  EXPECT_TRUE(c.contains("q1"));
  EXPECT_EQ(c.size(), 2u);
  c.remove_invalidated();
  EXPECT_TRUE(c.invalidated().empty());
}

TEST(statement_cache, a_full_cache_runs_unnamed_when_the_driver_may_not_drop_or_all_are_pinned) {
  statement_cache c(2);
  const std::string q1 = *c.put("q1", true);
  const std::string q2 = *c.put("q2", true);
  EXPECT_EQ(c.put("q3", false), nullptr) << "may not drop now: unnamed";
  EXPECT_TRUE(c.invalidated().empty());
  c.use("q1", q1, +1);
  c.use("q2", q2, +1);
  EXPECT_EQ(c.put("q3", true), nullptr) << "every statement is pinned: unnamed";
  EXPECT_TRUE(c.invalidated().empty());
  c.use("q2", q2, -1);
  ASSERT_NE(c.put("q3", true), nullptr);
  EXPECT_EQ(c.invalidated(), std::vector<std::string>{q2}) << "the pinned q1 stays although it is older";
}

TEST(statement_cache, capacity_zero_never_names) {
  statement_cache c(0);
  EXPECT_EQ(c.put("q", true), nullptr);
}

TEST(statement_cache, the_stale_test) {
  EXPECT_TRUE(is_stale_statement("26000", ""));
  EXPECT_TRUE(is_stale_statement("0A000", plan_changed));
  EXPECT_FALSE(is_stale_statement("0A000", "cannot insert into view"));
  EXPECT_FALSE(is_stale_statement("42P01", plan_changed));
  EXPECT_TRUE(is_pooler_symptom("26000"));
  EXPECT_TRUE(is_pooler_symptom("42P05"));
  EXPECT_FALSE(is_pooler_symptom("0A000"));
}

TEST(statement_cache, a_stale_plan_is_dropped_and_rerun_up_to_the_bound) {
  for (unsigned repairs = 0; repairs <= statement_cache::max_repairs; ++repairs) {
    statement_cache c(10);
    const std::string n = *c.put("q", true);
    statement_failure f;
    f.sqlstate = "0A000";
    f.stale = true;
    f.repairs = repairs;
    const auto v = c.judge("q", n, f);
    EXPECT_EQ(v, repairs < statement_cache::max_repairs ? statement_verdict::rerun : statement_verdict::stale_error)
        << "after " << repairs << " repairs";
    EXPECT_FALSE(c.contains("q")) << "dropped whether or not it runs again";
    EXPECT_EQ(c.invalidated(), std::vector<std::string>{n}) << "0A000: the server still holds it";
  }
}

TEST(statement_cache, a_missing_statement_is_rerun_without_a_drop) {
  statement_cache c(10);
  const std::string n = *c.put("q", true);
  statement_failure f;
  f.sqlstate = "26000";
  f.stale = true;
  EXPECT_EQ(c.judge("q", n, f), statement_verdict::rerun);
  EXPECT_TRUE(c.invalidated().empty()) << "26000: nothing left to deallocate";
  EXPECT_FALSE(c.contains("q"));
}

TEST(statement_cache, a_stale_plan_in_a_transaction_or_for_nobody_fails_but_is_dropped) {
  for (const bool in_tx : {true, false}) {
    statement_cache c(10);
    const std::string n = *c.put("q", true);
    statement_failure f;
    f.sqlstate = "0A000";
    f.stale = true;
    f.in_transaction = in_tx;
    f.caller_waits = in_tx;
    EXPECT_EQ(c.judge("q", n, f), statement_verdict::stale_error);
    EXPECT_FALSE(c.contains("q"));
  }
}

TEST(statement_cache, a_stale_plan_prepared_by_this_request_is_repaired_too) {
  statement_cache c(10);
  const std::string n = *c.put("q", true);
  statement_failure f;
  f.sqlstate = "0A000";
  f.stale = true;
  f.carried_parse = true;  // a migration committed between its Parse and its Execute
  EXPECT_EQ(c.judge("q", n, f), statement_verdict::rerun);
}

TEST(statement_cache, a_fresh_name_refused_means_a_pooler_and_naming_stops) {
  for (const char* state : {"26000", "42P05"}) {
    statement_cache c(10);
    const std::string n = *c.put("q", true);
    statement_failure f;
    f.sqlstate = state;
    f.stale = is_stale_statement(state, "");
    f.at_parse = std::string(state) == "42P05";
    f.carried_parse = true;
    EXPECT_EQ(c.judge("q", n, f), statement_verdict::pooler_suspected) << state;
    EXPECT_FALSE(c.naming());
    EXPECT_TRUE(c.invalidated().empty()) << "another session's statements are not ours to drop";
    EXPECT_EQ(c.put("other", true), nullptr);
    EXPECT_FALSE(c.stop_naming()) << "already stopped: not the first sign";
  }
}

TEST(statement_cache, a_failed_parse_leaves_nothing_and_an_ordinary_error_keeps_the_statement) {
  statement_cache c(10);
  const std::string bad = *c.put("bad", true);
  statement_failure parse;
  parse.sqlstate = "42601";
  parse.at_parse = true;
  parse.carried_parse = true;
  EXPECT_EQ(c.judge("bad", bad, parse), statement_verdict::error);
  EXPECT_FALSE(c.contains("bad"));
  EXPECT_TRUE(c.invalidated().empty());

  const std::string div = *c.put("div", true);
  statement_failure exec;
  exec.sqlstate = "22012";
  EXPECT_EQ(c.judge("div", div, exec), statement_verdict::error);
  EXPECT_TRUE(c.contains("div"));
  EXPECT_TRUE(c.naming());
}

TEST(statement_cache, a_late_report_for_a_replaced_statement_touches_nothing) {
  statement_cache c(10);
  const std::string old = *c.put("q", true);
  ASSERT_TRUE(c.invalidate("q", old, false));
  const std::string fresh = *c.put("q", true);
  statement_failure f;
  f.sqlstate = "0A000";
  f.stale = true;
  EXPECT_EQ(c.judge("q", old, f), statement_verdict::rerun);
  EXPECT_EQ(*c.get("q"), fresh) << "the newer statement stays";
  EXPECT_TRUE(c.invalidated().empty());
}

}  // namespace
