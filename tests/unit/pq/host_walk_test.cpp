// plan_host_walk: how the async driver splits a multi-host connection string
// into one libpq attempt per host (libpq's order, target_session_attrs kept,
// prefer-standby as two passes). No server: PQconninfoParse only.
#include "pq/host_walk.hpp"

#include "core/pool/connect_error.hpp"
#include "pq/libpq_failure.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>

namespace {

using pgpipe::detail::connect_attempt;
using pgpipe::detail::plan_host_walk;

std::optional<std::string> value(const connect_attempt& a, const std::string& key) {
  for (std::size_t i = 0; i < a.keys.size(); ++i)
    if (a.keys[i] == key) return a.values[i];
  return std::nullopt;
}

TEST(host_walk, one_host_is_one_attempt_with_the_string_unchanged) {
  const std::string s = "host=db port=5433 user=u password=secret dbname=app";
  const auto plan = plan_host_walk(s, "pgpipe");
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_TRUE(plan[0].expand_dbname);
  EXPECT_EQ(value(plan[0], "dbname"), s);
  EXPECT_EQ(value(plan[0], "fallback_application_name"), "pgpipe");
  EXPECT_TRUE(plan[0].where.empty());
}

TEST(host_walk, each_host_gets_its_own_attempt_in_order_with_its_port) {
  const auto plan = plan_host_walk("host=a,b,c port=1,2,3 user=u password=secret dbname=app connect_timeout=7", "pgpipe");
  ASSERT_EQ(plan.size(), 3u);
  const char* hosts[] = {"a", "b", "c"};
  const char* ports[] = {"1", "2", "3"};
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(plan[i].expand_dbname);
    EXPECT_EQ(value(plan[i], "host"), hosts[i]);
    EXPECT_EQ(value(plan[i], "port"), ports[i]);
    EXPECT_EQ(value(plan[i], "user"), "u");
    EXPECT_EQ(value(plan[i], "password"), "secret");
    EXPECT_EQ(value(plan[i], "dbname"), "app");
    EXPECT_EQ(value(plan[i], "fallback_application_name"), "pgpipe");
    EXPECT_EQ(plan[i].where, std::string("host ") + hosts[i] + " port " + ports[i]);
    EXPECT_EQ(plan[i].where.find("secret"), std::string::npos);
  }
}

TEST(host_walk, one_port_applies_to_every_host_and_uris_work_too) {
  const auto plan = plan_host_walk("postgresql://u:secret@a,b:6000/app?target_session_attrs=read-write", "x");
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(value(plan[0], "host"), "a");
  EXPECT_EQ(value(plan[1], "host"), "b");
  EXPECT_EQ(value(plan[0], "port"), std::nullopt) << "a URI's port belongs to its own host";
  EXPECT_EQ(value(plan[1], "port"), "6000");
  EXPECT_EQ(value(plan[0], "target_session_attrs"), "read-write") << "libpq rejects a non-matching host";
  EXPECT_EQ(value(plan[1], "target_session_attrs"), "read-write");
}

TEST(host_walk, a_single_port_applies_to_every_host) {
  const auto plan = plan_host_walk("host=a,b port=6000", "pgpipe");
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(value(plan[0], "port"), "6000");
  EXPECT_EQ(value(plan[1], "port"), "6000");
}

TEST(host_walk, an_empty_entry_means_libpqs_default) {
  const auto plan = plan_host_walk("host=a, port=5000,", "pgpipe");
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(value(plan[1], "host"), std::nullopt);
  EXPECT_EQ(value(plan[1], "port"), std::nullopt);
  EXPECT_EQ(value(plan[0], "port"), "5000");
}

TEST(host_walk, prefer_standby_is_a_standby_pass_then_an_any_pass) {
  const auto plan = plan_host_walk("host=a,b target_session_attrs=prefer-standby", "pgpipe");
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(value(plan[0], "host"), "a");
  EXPECT_EQ(value(plan[1], "host"), "b");
  EXPECT_EQ(value(plan[0], "target_session_attrs"), "standby");
  EXPECT_EQ(value(plan[1], "target_session_attrs"), "standby");
  EXPECT_EQ(value(plan[2], "host"), "a");
  EXPECT_EQ(value(plan[3], "host"), "b");
  EXPECT_EQ(value(plan[2], "target_session_attrs"), "any");
  EXPECT_EQ(value(plan[3], "target_session_attrs"), "any");
}

TEST(host_walk, hostaddr_lists_pair_with_hosts) {
  const auto plan = plan_host_walk("host=a,b hostaddr=127.0.0.1,127.0.0.2", "pgpipe");
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(value(plan[1], "host"), "b");
  EXPECT_EQ(value(plan[1], "hostaddr"), "127.0.0.2");
}

TEST(host_walk, lists_that_do_not_match_are_left_to_libpq) {
  // libpq's own error ("could not match 3 port numbers to 2 hosts") is the
  // clearest answer: one attempt with the string unchanged.
  const auto plan = plan_host_walk("host=a,b port=1,2,3", "pgpipe");
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_TRUE(plan[0].expand_dbname);
}

TEST(host_walk, an_application_name_given_is_not_overridden) {
  const auto plan = plan_host_walk("host=a,b fallback_application_name=mine", "pgpipe");
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(value(plan[0], "fallback_application_name"), "mine");
}

}  // namespace

// After a failed attempt: libpq's rule for whether the next host is tried.
// A server that cannot take connections now (57P03: starting up, shutting
// down, in recovery with hot_standby off) is skipped, as is a host that is
// down, silent or of the wrong kind; a server that refused the login or the
// database ends the walk.
TEST(host_walk, which_failures_move_on_to_the_next_host) {
  using pgpipe::detail::walk_moves_on;
  const std::string at = "connection to server at \"127.0.0.1\", port 5432 failed: ";
  EXPECT_TRUE(walk_moves_on(at + "FATAL:  the database system is starting up\n"));
  EXPECT_TRUE(walk_moves_on(at + "FATAL:  the database system is shutting down\n"));
  EXPECT_TRUE(walk_moves_on(at + "FATAL:  the database system is not yet accepting connections\n"
                                 "DETAIL:  Consistent recovery state has not been yet reached.\n"));
  EXPECT_TRUE(walk_moves_on(at + "Connection refused\n\tIs the server running on that host and accepting TCP/IP "
                                 "connections?\n"));
  EXPECT_TRUE(walk_moves_on("timeout expired after 2000 ms (connect_timeout)"));
  EXPECT_TRUE(walk_moves_on(at + "session is read-only\n"));
  EXPECT_TRUE(walk_moves_on(at + "server is in hot standby mode\n"));
  EXPECT_FALSE(walk_moves_on(at + "FATAL:  password authentication failed for user \"app\"\n"));
  EXPECT_FALSE(walk_moves_on(at + "fe_sendauth: no password supplied\n"));
  EXPECT_FALSE(walk_moves_on(at + "FATAL:  database \"nope\" does not exist\n"));
  EXPECT_FALSE(walk_moves_on(at + "FATAL:  sorry, too many clients already\n"));
  EXPECT_FALSE(walk_moves_on(at + "FATAL:  role \"nope\" does not exist\n"));
}

// ---- host_walk: one decision for every connect that walks hosts ----------------

namespace {

using pgpipe::detail::host_walk;
using pgpipe::detail::walk_step;

const std::string refused = "connection to server at \"127.0.0.1\", port 1 failed: Connection refused\n";
const std::string bad_password =
    "connection to server at \"127.0.0.1\", port 2 failed: FATAL:  password authentication failed for user \"app\"\n";
const std::string starting_up = "connection to server at \"127.0.0.1\", port 2 failed: FATAL:  the database system is starting up\n";

TEST(host_walk_fsm, a_single_attempt_ends_with_its_own_reason_and_code) {
  host_walk w(plan_host_walk("host=a port=1", "pgpipe"));
  const walk_step s = w.on_attempt_failed(refused, false, false);
  EXPECT_FALSE(s.try_next);
  EXPECT_EQ(s.message, pgpipe::detail::clean_message(refused, {})) << "one attempt: libpq's message is the whole story";
  EXPECT_EQ(s.ec, pgpipe::errc::server_unreachable);
  EXPECT_EQ(s.diag.client_message, pgpipe::detail::connect_error_text(s.message));
}

TEST(host_walk_fsm, a_single_attempt_that_timed_out_is_unreachable_whatever_its_text) {
  host_walk w(plan_host_walk("host=a", "pgpipe"));
  const walk_step s = w.on_attempt_failed("no answer within the probe timeout", false, true);
  EXPECT_FALSE(s.try_next);
  EXPECT_EQ(s.ec, pgpipe::errc::server_unreachable);
}

TEST(host_walk_fsm, silent_and_down_hosts_move_on_and_every_host_failing_names_each) {
  host_walk w(plan_host_walk("host=a,b,c port=1,2,3", "pgpipe"));
  EXPECT_EQ(w.current().where, "host a port 1");
  EXPECT_TRUE(w.on_attempt_failed(refused, false, false).try_next);
  EXPECT_EQ(w.current().where, "host b port 2");
  EXPECT_TRUE(w.on_attempt_failed(pgpipe::detail::connect_timeout_text(std::chrono::milliseconds(2000)), false, true)
                  .try_next);
  EXPECT_EQ(w.current().where, "host c port 3");
  const walk_step s = w.on_attempt_failed(refused, false, false);
  EXPECT_FALSE(s.try_next) << "c was the last host";
  EXPECT_EQ(s.message.rfind("every host failed: host a port 1: ", 0), 0u) << s.message;
  EXPECT_NE(s.message.find("; host b port 2: timeout expired after 2000 ms (connect_timeout); host c port 3: "),
            std::string::npos)
      << s.message;
  EXPECT_EQ(s.ec, pgpipe::errc::server_unreachable) << "nobody took the connection: " << s.ec.message();
}

TEST(host_walk_fsm, a_server_that_refuses_the_login_ends_the_walk_with_its_sqlstate) {
  host_walk w(plan_host_walk("host=a,b,c port=1,2,3", "pgpipe"));
  ASSERT_TRUE(w.on_attempt_failed(refused, false, false).try_next);
  const walk_step s = w.on_attempt_failed(bad_password, true, false);
  EXPECT_FALSE(s.try_next) << "the next host is configured alike: trying it multiplies the failure";
  EXPECT_EQ(pgpipe::sqlstate_of(s.ec), "28P01") << s.ec.message();
  EXPECT_EQ(s.diag.sqlstate, "28P01");
  EXPECT_EQ(s.message.find("every host failed"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("host a port 1: "), std::string::npos) << "the hosts tried before are named too";
  EXPECT_NE(s.message.find("host b port 2: "), std::string::npos) << s.message;
  EXPECT_NE(s.diag.client_message.find("password authentication failed"), std::string::npos) << s.diag.client_message;
}

TEST(host_walk_fsm, a_server_starting_up_or_shutting_down_moves_on) {
  // During a failover that is the old primary or a standby not yet up; the
  // next host may be the promoted one.
  host_walk w(plan_host_walk("host=a,b port=1,2", "pgpipe"));
  EXPECT_TRUE(w.on_attempt_failed(starting_up, false, false).try_next);
  EXPECT_EQ(w.current().where, "host b port 2");
}

TEST(host_walk_fsm, a_walk_starts_where_asked_and_wraps_once_around) {
  host_walk w(plan_host_walk("host=a,b,c", "pgpipe"), 4);  // taken modulo 3: b
  EXPECT_EQ(w.current_index(), 1u);
  ASSERT_TRUE(w.on_attempt_failed(refused, false, false).try_next);
  EXPECT_EQ(w.current_index(), 2u);
  ASSERT_TRUE(w.on_attempt_failed(refused, false, false).try_next);
  EXPECT_EQ(w.current_index(), 0u);
  EXPECT_FALSE(w.on_attempt_failed(refused, false, false).try_next) << "each host once";
}

TEST(host_walk_fsm, giving_up_early_reports_what_failed_so_far) {
  host_walk w(plan_host_walk("host=a,b,c port=1,2,3", "pgpipe"));
  ASSERT_TRUE(w.on_attempt_failed(refused, false, false).try_next);
  const walk_step s = w.give_up();
  EXPECT_FALSE(s.try_next);
  EXPECT_EQ(s.message, "host a port 1: " + pgpipe::detail::clean_message(refused, {}));
  EXPECT_EQ(s.ec, pgpipe::errc::server_unreachable);
}

}  // namespace
