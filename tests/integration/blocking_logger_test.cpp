// The blocking pool's logger says what the async one says about its
// connections: connected, connect failed, disconnected and why, never a
// password.
#include <pgpipe/blocking_pool.hpp>

#include "support/cluster_fixture.hpp"
#include "support/kit.hpp"
#include "support/wait.hpp"

#include <gtest/gtest.h>
#include <pqxx/nontransaction>

#include <mutex>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using pgpipe::test::app_conninfo;
using pgpipe::test::shared_cluster;

namespace {

struct captured_log {
  std::mutex mu;
  std::vector<std::pair<pgpipe::log_level, std::string>> lines;
  pgpipe::logger_fn fn() {
    return [this](pgpipe::log_level level, std::string_view line) {
      std::lock_guard lk(mu);
      lines.emplace_back(level, std::string(line));
    };
  }
  // The first line containing `needle` (empty when none).
  std::string find(std::string_view needle) {
    std::lock_guard lk(mu);
    for (const auto& [level, line] : lines)
      if (line.find(needle) != std::string::npos) return line;
    return {};
  }
  std::string all() {
    std::lock_guard lk(mu);
    std::string out;
    for (const auto& [level, line] : lines) out += line + "\n";
    return out;
  }
};

}  // namespace

TEST(blocking_logger, connects_and_broken_connections_are_logged_with_slot_and_pid) {
  auto& pg = shared_cluster();
  captured_log log;
  pgpipe::pool_params p = pgpipe::test::params_for(app_conninfo("blocking_logger"), 1);
  p.acquire_timeout = 20s;
  pgpipe::blocking_pool pool(p, log.fn());
  int pid = 0;
  {
    auto lease = pool.acquire();
    pqxx::nontransaction tx{*lease};
    pid = tx.exec("select pg_backend_pid()")[0][0].as<int>();
  }
  const std::string connected = log.find("connected (slot ");
  EXPECT_NE(connected.find("backend pid " + std::to_string(pid)), std::string::npos) << log.all();

  ASSERT_TRUE(pg.terminate_backend(pid));
  // pg_terminate_backend only signals: wait until the backend is gone, so the
  // pool's idle check sees a dead socket (no event to wait on: poll).
  ASSERT_TRUE(pgpipe::test::wait_until([&] {
    return pg.query_value("select count(*) from pg_stat_activity where pid = " + std::to_string(pid)) == "0";
  }));
  {
    auto lease = pool.acquire();  // the dead idle connection is noticed and replaced
    pqxx::nontransaction tx{*lease};
    EXPECT_NE(tx.exec("select pg_backend_pid()")[0][0].as<int>(), pid);
  }
  const std::string gone = log.find("disconnected (slot ");
  EXPECT_NE(gone.find("backend pid " + std::to_string(pid)), std::string::npos) << log.all();
}

TEST(blocking_logger, a_failed_connect_is_logged_without_the_password) {
  captured_log log;
  const std::string secret = "s3cret-for-the-logger-test";
  pgpipe::pool_params p = pgpipe::test::params_for(
      "host=127.0.0.1 port=" + std::to_string(pgpipe::test::refused_port()) + " user=x password=" + secret, 1);
  p.acquire_timeout = 2s;
  p.connect_timeout = 1s;
  pgpipe::blocking_pool pool(p, log.fn());
  EXPECT_THROW(pool.acquire(), pgpipe::error);
  const std::string failed = log.find("connect failed (slot ");
  EXPECT_FALSE(failed.empty()) << log.all();
  pgpipe::test::expect_no_secret(log.all(), {secret}, "blocking pool log");
}
