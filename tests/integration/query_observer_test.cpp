// pool_params::observer and the latency histograms in both drivers, written
// once over tests/support/driver_adapter.hpp: every query is seen at start
// and end with its rows, outcome, slot and backend pid; a wait for capacity
// shows when the pool is exhausted; stats() counts what ran.
#include <pgpipe/query_observer.hpp>

#include "support/async_kit.hpp"
#include "support/cluster_fixture.hpp"
#include "support/driver_adapter.hpp"
#include "support/kit.hpp"
#include "support/wait.hpp"

#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using namespace std::chrono_literals;
using namespace pgpipe::test;
using pgpipe::errc;

// An event kept past the call: its strings copied, the views cleared.
struct seen {
  pgpipe::query_event ev;
  std::string sql;
  std::string sqlstate;
};

seen copy_of(const pgpipe::query_event& e) {
  seen out{e, std::string(e.sql), std::string(e.sqlstate)};
  out.ev.sql = {};
  out.ev.sqlstate = {};
  return out;
}

// Records every call; on_start hands out 1, 2, 3... so on_end can be matched
// to its start through `user`.
class recording_observer final : public pgpipe::query_observer {
 public:
  void* on_start(const pgpipe::query_event& e) override {
    std::lock_guard lk(mu_);
    starts_.push_back(copy_of(e));
    return reinterpret_cast<void*>(static_cast<std::uintptr_t>(starts_.size()));
  }
  void on_end(const pgpipe::query_event& e) override {
    std::lock_guard lk(mu_);
    ends_.push_back(copy_of(e));
  }
  std::vector<seen> starts() {
    std::lock_guard lk(mu_);
    return starts_;
  }
  std::vector<seen> ends() {
    std::lock_guard lk(mu_);
    return ends_;
  }

 private:
  std::mutex mu_;
  std::vector<seen> starts_;
  std::vector<seen> ends_;
};

// Short timeouts below are about the query, not the connect: open the
// connection first (a loaded machine may take longer than they allow).
template <class D>
void wait_connected(D& db) {
  ASSERT_TRUE(wait_until([&] { return db.stats().idle >= 1; }, 30s)) << "the pool never opened its connection";
}

std::size_t start_index(const seen& end) { return static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(end.ev.user)); }

template <class D>
class query_observer_drivers : public ::testing::Test {
 protected:
  std::shared_ptr<recording_observer> rec = std::make_shared<recording_observer>();
  pgpipe::pool_params params(std::size_t max_size) {
    auto p = params_for(app_conninfo("query_observer"), max_size);
    p.observer = rec;
    return p;
  }
};
TYPED_TEST_SUITE(query_observer_drivers, drivers, driver_names);

TYPED_TEST(query_observer_drivers, every_query_is_seen_at_start_and_end_with_its_rows_and_backend) {
  TypeParam db(this->params(1));
  constexpr int n = 12;
  for (int i = 1; i <= n; ++i) {
    const auto o = db.run("select generate_series(1, $1::int)", i);
    ASSERT_FALSE(o.ec) << o.text;
  }
  const auto pid = db.run("select pg_backend_pid()");
  ASSERT_FALSE(pid.ec) << pid.text;

  const auto starts = this->rec->starts();
  const auto ends = this->rec->ends();
  ASSERT_EQ(starts.size(), std::size_t{n + 1});
  ASSERT_EQ(ends.size(), std::size_t{n + 1});
  for (int i = 0; i < n; ++i) {
    const auto& e = ends[static_cast<std::size_t>(i)];
    EXPECT_EQ(e.sql, "select generate_series(1, $1::int)");
    EXPECT_TRUE(e.ev.started);
    EXPECT_EQ(start_index(e), static_cast<std::size_t>(i + 1)) << "on_end carries what its on_start returned";
    EXPECT_EQ(e.ev.rows, static_cast<std::uint64_t>(i + 1));
    EXPECT_FALSE(e.ev.ec);
    EXPECT_TRUE(e.sqlstate.empty());
    EXPECT_NE(e.ev.slot, 0u);
    EXPECT_EQ(e.ev.slot, starts[static_cast<std::size_t>(i)].ev.slot);
    EXPECT_GT(e.ev.server.count(), 0);
    EXPECT_GE(e.ev.total, e.ev.server);
  }
  // One connection: every query ran on the backend pg_backend_pid() names.
  const int backend = std::stoi(pid.first);
  for (const auto& s : starts) EXPECT_EQ(s.ev.backend_pid, backend);
  for (const auto& e : ends) EXPECT_EQ(e.ev.backend_pid, backend);

  // The histograms count exactly what ran; the exposition says so too.
  const auto st = db.stats();
  EXPECT_EQ(st.query_duration.count, std::uint64_t{n + 1});
  EXPECT_EQ(st.query_duration.le.back(), std::uint64_t{n + 1}) << "every query took under 10 s";
  EXPECT_GE(st.acquire_wait.count, std::uint64_t{n + 1});
  EXPECT_GT(st.query_duration.sum.count(), 0);
  const std::string text = pgpipe::to_prometheus(st);
  EXPECT_NE(text.find("pgpipe_query_duration_seconds_count " + std::to_string(n + 1) + "\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("pgpipe_query_duration_seconds_bucket{le=\"+Inf\"} " + std::to_string(n + 1) + "\n"),
            std::string::npos);
}

TYPED_TEST(query_observer_drivers, a_server_error_is_seen_with_its_sqlstate) {
  TypeParam db(this->params(1));
  const auto o = db.run("select 1/0");
  ASSERT_EQ(pgpipe::sqlstate_of(o.ec), "22012") << o.text;
  const auto ends = this->rec->ends();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].ev.ec, o.ec);
  EXPECT_EQ(ends[0].sqlstate, "22012");
  EXPECT_EQ(ends[0].ev.rows, 0u);
  EXPECT_TRUE(ends[0].ev.started);
  EXPECT_EQ(this->rec->starts().size(), 1u);
}

TYPED_TEST(query_observer_drivers, an_exhausted_pool_shows_as_wait_and_its_timeout_as_an_end_without_start) {
  auto p = this->params(1);
  p.acquire_timeout = 300ms;
  p.min_size = 1;
  TypeParam db(p);
  wait_connected(db);
  auto held = db.hold();
  // Nothing frees the only connection: the query times out in the pool.
  const auto timed_out = db.run("select 1");
  ASSERT_EQ(timed_out.ec, errc::pool_timeout) << timed_out.text;
  auto ends = this->rec->ends();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_FALSE(ends[0].ev.started);
  EXPECT_EQ(ends[0].ev.ec, errc::pool_timeout);
  EXPECT_EQ(ends[0].ev.backend_pid, 0);
  EXPECT_GE(ends[0].ev.wait, 250ms);
  EXPECT_TRUE(this->rec->starts().empty());

  // Then the lease is given back once the next query is queued behind it.
  auto p2 = this->params(1);
  p2.acquire_timeout = 20s;
  TypeParam db2(p2);
  auto held2 = db2.hold();
  std::thread releaser([&] {
    ASSERT_TRUE(wait_until([&] { return db2.stats().queued >= 1; }));
    held2 = {};
  });
  const auto o = db2.run("select 2");
  releaser.join();
  ASSERT_FALSE(o.ec) << o.text;
  const auto starts = this->rec->starts();
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_GT(starts[0].ev.wait.count(), 0) << "waited for the lease to come back";
  ends = this->rec->ends();
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[1].ev.wait, starts[0].ev.wait);
  EXPECT_GT(db2.stats().acquire_wait.sum.count(), 0);
}

TEST(query_observer_async, a_query_timeout_is_seen_with_its_code) {
  auto rec = std::make_shared<recording_observer>();
  auto p = params_for(app_conninfo("query_observer"), 1);
  p.observer = rec;
  p.query_timeout = 200ms;
  p.min_size = 1;
  async_driver db(p);
  wait_connected(db);
  const auto o = db.run("select pg_sleep(5)");
  ASSERT_EQ(o.ec, errc::query_timeout) << o.text;
  const auto ends = rec->ends();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].ev.ec, errc::query_timeout);
  EXPECT_TRUE(ends[0].ev.started);
  EXPECT_EQ(ends[0].sql, "select pg_sleep(5)");
}

TEST(query_observer_blocking, a_statement_timeout_is_seen_with_its_code) {
  // The blocking driver has no client-side query timeout: the server's
  // statement_timeout (57014) is how a blocking query times out.
  auto rec = std::make_shared<recording_observer>();
  auto p = params_for(app_conninfo("query_observer"), 1);
  p.observer = rec;
  p.on_connect = {"set statement_timeout = '200ms'"};
  blocking_driver db(p);
  const auto o = db.run("select pg_sleep(5)");
  ASSERT_EQ(pgpipe::sqlstate_of(o.ec), "57014") << o.text;
  const auto ends = rec->ends();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].ev.ec, o.ec);
  EXPECT_EQ(ends[0].sqlstate, "57014");
  EXPECT_TRUE(ends[0].ev.started);
}

// Drains `s` on the calling thread; the rows read, or the error.
std::pair<std::error_code, std::uint64_t> drain(pgpipe::async_row_stream& s) {
  std::uint64_t rows = 0;
  for (;;) {
    auto [ec, r] = s.async_next(pgpipe::test::use_future_ec).get();
    if (ec) return {ec, rows};
    if (r.empty()) return {ec, rows};
    rows += r.size();
  }
}

// The rows come from the end marker's command tag ("SELECT 10000"); a
// streamed statement whose tag has no count (SHOW) is still seen with 0.
TEST(query_observer_async, a_row_stream_is_seen_with_the_rows_it_streamed) {
  auto rec = std::make_shared<recording_observer>();
  auto p = params_for(app_conninfo("query_observer"), 1);
  p.observer = rec;
  pgpipe::async_client client(p);
  auto l = acquire(client);
  {
    // Rows in several chunks (a chunk holds at most 4096).
    auto s = l.stream("select g from generate_series(1, 10000) g");
    auto [ec, rows] = drain(s);
    ASSERT_FALSE(ec) << ec.message();
    ASSERT_EQ(rows, 10000u);
  }
  {
    // Rows streamed, then an error: 0, as for any failed query.
    auto s = l.stream("select 1 / (5000 - g) from generate_series(1, 10000) g");
    auto [ec, rows] = drain(s);
    ASSERT_EQ(pgpipe::sqlstate_of(ec), "22012") << ec.message();
  }
  const auto ends = rec->ends();
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0].sql, "select g from generate_series(1, 10000) g");
  EXPECT_EQ(ends[0].ev.rows, 10000u);
  EXPECT_TRUE(ends[0].ev.on_lease);
  EXPECT_EQ(ends[1].ev.rows, 0u);
  EXPECT_EQ(ends[1].sqlstate, "22012");
}

}  // namespace
