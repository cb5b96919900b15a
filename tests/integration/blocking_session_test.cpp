// blocking_pool: pool_params::on_connect sets the session of every
// connection, a failing entry fails the connect with the server's code, the
// server's NOTICE/WARNING reach the logger and never stderr, and a
// transaction left open through exec() is rolled back when the connection
// goes back to the pool (exec() is not refused like the async shared path:
// a blocking connection serves one caller at a time, see blocking_pool.hpp).
#include <pgpipe/blocking_pool.hpp>

#include "support/cluster_fixture.hpp"
#include "support/stderr_capture.hpp"

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

pgpipe::pool_params params_for(std::size_t max_size) {
  pgpipe::pool_params p;
  p.conninfo = pgpipe::test::shared_cluster().conninfo();
  p.max_size = max_size;
  return p;
}

}  // namespace

TEST(blocking_session, on_connect_sets_the_session_of_every_connection) {
  auto p = params_for(3);
  p.on_connect = {"set search_path = pgpipe_on_connect, public", "set timezone = 'Asia/Ho_Chi_Minh'"};
  pgpipe::blocking_pool pool(p);
  std::vector<std::thread> threads;
  std::mutex mu;
  std::vector<std::string> seen;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        auto r = pool.exec(
            "select current_setting('search_path') || '|' || current_setting('TimeZone') || '|' || "
            "pg_sleep(0.002)::text");
        std::lock_guard lk(mu);
        seen.push_back(r[0][0].get<std::string>());
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(seen.size(), 30u);
  for (const auto& s : seen) EXPECT_EQ(s, "pgpipe_on_connect, public|Asia/Ho_Chi_Minh|");
}

TEST(blocking_session, a_failing_on_connect_statement_fails_the_connect_clearly) {
  auto p = params_for(1);
  p.on_connect = {"set timezone = 'UTC'", "set pgpipe_no_such_setting = 1"};
  p.acquire_timeout = 1500ms;
  pgpipe::blocking_pool pool(p);
  try {
    (void)pool.exec("select 1");
    FAIL() << "the connect succeeded despite a bad on_connect entry";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::make_sqlstate("42704")) << e.what();
    EXPECT_EQ(e.diag().sqlstate, "42704");
    EXPECT_NE(e.diag().client_message.find("on_connect[1]"), std::string::npos) << e.diag().client_message;
    EXPECT_NE(std::string(e.what()).find("pgpipe_no_such_setting"), std::string::npos) << e.what();
  }
}

TEST(blocking_session, notices_and_warnings_go_to_the_logger_never_stderr) {
  std::mutex mu;
  std::vector<std::pair<pgpipe::log_level, std::string>> lines;
  pgpipe::blocking_pool pool(params_for(1), [&](pgpipe::log_level lvl, std::string_view line) {
    std::lock_guard lk(mu);
    lines.emplace_back(lvl, std::string(line));
  });
  const std::string pid = pool.exec("select pg_backend_pid()::text").value<std::string>();
  std::string printed;
  {
    pgpipe::test::stderr_capture cap;
    (void)pool.exec("do $$ begin raise notice 'pgpipe-notice-1'; raise warning 'pgpipe-warning-2'; end $$");
    printed = cap.text();
  }
  EXPECT_EQ(printed, "");
  std::lock_guard lk(mu);
  int found = 0;
  for (const auto& [lvl, line] : lines) {
    if (line.find("pgpipe-notice-1") != std::string::npos) {
      ++found;
      EXPECT_EQ(lvl, pgpipe::log_level::info);
      EXPECT_NE(line.find("backend pid " + pid), std::string::npos) << line;
    }
    if (line.find("pgpipe-warning-2") != std::string::npos) {
      ++found;
      EXPECT_EQ(lvl, pgpipe::log_level::warning);
      EXPECT_NE(line.find("slot "), std::string::npos) << line;
    }
  }
  EXPECT_EQ(found, 2);
}

TEST(blocking_session, a_transaction_left_open_by_exec_is_rolled_back_on_return) {
  pgpipe::blocking_pool pool(params_for(1));
  (void)pool.exec("begin");
  try {
    (void)pool.exec("savepoint pgpipe_probe");
    FAIL() << "the next caller ran inside the previous caller's transaction";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::make_sqlstate("25P01")) << e.what();  // no transaction block
  }
}

TEST(blocking_session, a_commit_answered_with_rollback_on_a_lease_is_25P02) {
  pgpipe::blocking_pool pool(params_for(1));
  auto lease = pool.acquire();
  (void)lease.exec("begin");
  try {
    (void)lease.exec("select 1/0");
    FAIL() << "division by zero succeeded";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::make_sqlstate("22012"));
  }
  // The server answers this COMMIT with the tag ROLLBACK and no error:
  // passed on as it comes, it would read as a success.
  try {
    (void)lease.exec("commit");
    FAIL() << "a COMMIT of a failed transaction read as a success";
  } catch (const pgpipe::error& e) {
    EXPECT_EQ(e.code(), pgpipe::make_sqlstate("25P02"));
    EXPECT_EQ(e.diag().sqlstate, "25P02");
  }
  // The connection is out of the transaction and serves on.
  EXPECT_EQ(lease.exec("select 2").value<int>(), 2);
}

TEST(blocking_session, notifications_exec_reads_reach_libpqxx_on_the_same_lease) {
  pgpipe::blocking_pool pool(params_for(1));
  auto lease = pool.acquire();
  (void)lease.exec("listen pgpipe_exec_channel");
  // The server sends the notification with the answer to this very
  // statement: exec() reads it and leaves it queued for libpqxx.
  (void)lease.exec("select pg_notify('pgpipe_exec_channel', 'payload')");
  EXPECT_EQ(lease->get_notifs(), 1);
  (void)lease.exec("unlisten *");
}
