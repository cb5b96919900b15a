// pool_core's actions carried out by the async driver (async/pool/pool_actions.hpp),
// without a server: a real pool_core on a fake clock, a recording fake
// connection on a real io_context, and a fake driver (the connection
// factory, the clock and the answers to waiters). Pins: a grant reaches its
// connection and its wait is measured on the driver's clock; a grant whose
// connection is gone fails with errc::not_sent; a failed wait is told
// query_timeout when the query's own deadline passed, else the pool's code;
// a connect failure carries the server's diagnostics; open makes and counts
// a connection, close and check reach it; and nothing reaches a connection
// or a waiter's handler until the work is run after the unlock.
#include "async/pool/pool_actions.hpp"

#include "core/metrics/query_metrics.hpp"
#include "core/pool/pool_core.hpp"
#include "pq/libpq_failure.hpp"

#include <pgpipe/error.hpp>
#include <pgpipe/pool_params.hpp>
#include <pgpipe/stats.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using pgpipe::diagnostics;
using pgpipe::errc;
using pgpipe::pool_params;
using pgpipe::pool_stats;
using pgpipe::detail::made_connection;
using pgpipe::detail::pool_core;
using pgpipe::detail::pool_todo;
using pgpipe::detail::query_metrics;
using pgpipe::detail::query_request;
using pgpipe::detail::request_kind;
using pgpipe::detail::request_outcome;
using pgpipe::detail::slot_id;
using pgpipe::detail::time_point;
using pgpipe::detail::waiter_id;

// Far from the steady clock's reading on any machine: a carrier that read the
// real clock instead of the driver's would see other waits and deadlines.
const time_point t0{std::chrono::hours(24 * 365 * 100)};

// What pool_actions asks of a connection, recorded.
struct fake_connection {
  fake_connection(asio::io_context& io, slot_id s) : ex(io.get_executor()), id(s) {}
  const asio::any_io_executor& get_executor() const noexcept { return ex; }
  pgpipe::query_observer* observer() const noexcept { return nullptr; }
  slot_id slot() const noexcept { return id; }
  int backend_pid() const noexcept { return 4242; }
  void start(const asio::any_io_executor& connector) {
    calls.emplace_back("start");
    started_on = connector;
  }
  void close() { calls.emplace_back("close"); }
  void check() { calls.emplace_back("check"); }
  void enqueue(const std::shared_ptr<query_request>& r) { calls.push_back("enqueue " + r->spec.sql); }

  asio::any_io_executor ex;
  slot_id id;
  std::vector<std::string> calls;
  asio::any_io_executor started_on;
};

struct fake_acquire {
  waiter_id waiter = 0;
  time_point submitted{};
};

using ticket = pgpipe::detail::basic_pool_ticket<fake_connection>;

// The clock, the connection factory and what the driver was asked to answer.
struct fake_world {
  asio::io_context io;        // the connections' loop
  asio::io_context connector; // where their connects would run
  time_point now = t0;
  int clock_reads = 0;
  std::vector<std::shared_ptr<fake_connection>> made;

  struct query_failure {
    std::shared_ptr<ticket> t;
    std::error_code ec;
    diagnostics diag;
  };
  std::vector<query_failure> query_failures;
  struct acquire_failure {
    std::shared_ptr<fake_acquire> req;
    std::error_code ec;
    diagnostics diag;
  };
  std::vector<acquire_failure> acquire_failures;
  struct lease {
    std::shared_ptr<fake_acquire> req;
    std::shared_ptr<fake_connection> conn;
    slot_id slot;
  };
  std::vector<lease> leases;

  std::size_t answers() const { return query_failures.size() + acquire_failures.size() + leases.size(); }
};

struct fake_driver {
  fake_world* w;
  time_point now() const {
    ++w->clock_reads;
    return w->now;
  }
  made_connection<fake_connection> make_connection(slot_id slot) const {
    made_connection<fake_connection> m;
    m.conn = std::make_shared<fake_connection>(w->io, slot);
    m.connector = w->connector.get_executor();
    m.group = slot % 2;  // two loops, by slot
    w->made.push_back(m.conn);
    return m;
  }
  void fail_query(const std::shared_ptr<ticket>& t, std::error_code ec, diagnostics diag) const {
    w->query_failures.push_back({t, ec, std::move(diag)});
  }
  void fail_acquire(const std::shared_ptr<fake_acquire>& r, std::error_code ec, diagnostics diag) const {
    w->acquire_failures.push_back({r, ec, std::move(diag)});
  }
  void grant_lease(const std::shared_ptr<fake_acquire>& r, const std::shared_ptr<fake_connection>& c,
                   slot_id slot) const {
    w->leases.push_back({r, c, slot});
  }
};

using actions_under_test = pgpipe::detail::pool_actions<fake_connection, fake_acquire, fake_driver>;

// One connection carrying one request at a time: the second request waits.
pool_params one_slot() {
  pool_params p;
  p.max_size = 1;
  p.min_size = 1;
  return p;
}

struct pool_actions_one_slot : ::testing::Test {
  fake_world w;
  query_metrics metrics{nullptr, {}};
  pool_core core{one_slot(), 1};
  actions_under_test actions{fake_driver{&w}, metrics};
  pool_todo todo;

  // As client_impl does after the unlock: the work in order, then the
  // connections' loop runs what it posted.
  void run_work() {
    for (auto& f : todo) f();
    todo.clear();
    w.io.restart();
    w.io.run();
  }

  // The carrying under the lock, then the work after the unlock.
  void carry_and_run() {
    actions.carry(core, todo);
    run_work();
  }

  // Starts the pool and connects its one slot; returns the connection.
  std::shared_ptr<fake_connection> connected() {
    core.start(w.now);
    carry_and_run();
    EXPECT_EQ(w.made.size(), 1u);
    auto c = w.made.at(0);
    core.on_open_succeeded(w.now, c->id);
    carry_and_run();
    c->calls.clear();
    return c;
  }

  std::shared_ptr<ticket> query(std::string sql, time_point deadline = time_point::max()) {
    auto t = std::make_shared<ticket>();
    t->wire.spec.sql = std::move(sql);
    t->wire.submitted = w.now;
    t->wire.deadline = deadline;
    return t;
  }

  // Asks pool_core for capacity as client_impl::submit_query does: granted
  // at once or queued (until `wait_deadline`).
  request_outcome submit(const std::shared_ptr<ticket>& t, time_point wait_deadline = time_point::max()) {
    auto out = core.request(w.now, request_kind::shared, wait_deadline);
    if (out.what == request_outcome::kind::queued) actions.queue_query(out.waiter, t);
    return out;
  }

  // connected(), its one unit of capacity taken by a query granted at once:
  // the next request waits.
  std::shared_ptr<fake_connection> connected_and_busy() {
    auto c = connected();
    auto first = query("select 1");
    EXPECT_EQ(submit(first).what, request_outcome::kind::granted);
    actions.grant_now(*first, c->id);
    return c;
  }

  // An acquire (a lease) queued as client_impl::submit_acquire queues it.
  std::shared_ptr<fake_acquire> queued_acquire() {
    auto a = std::make_shared<fake_acquire>();
    a->submitted = w.now;
    auto out = core.request(w.now, request_kind::exclusive, time_point::max());
    EXPECT_EQ(out.what, request_outcome::kind::queued);
    actions.queue_acquire(out.waiter, a);
    return a;
  }

  pool_stats stats() const {
    pool_stats s;
    metrics.fill_stats(s);
    return s;
  }
};

TEST_F(pool_actions_one_slot, open_makes_the_connection_counts_it_and_starts_it_after_the_unlock) {
  core.start(w.now);
  actions.carry(core, todo);
  ASSERT_EQ(w.made.size(), 1u) << "pool_core's open must make the slot's connection through the factory";
  EXPECT_EQ(actions.live(), 1u);
  EXPECT_EQ(actions.connections().size(), 1u);
  EXPECT_TRUE(w.made[0]->calls.empty()) << "the connection must not be started under the lock";
  EXPECT_EQ(w.clock_reads, 0) << "no waiter left the queue: the clock is not read";

  for (auto& f : todo) f();
  EXPECT_TRUE(w.made[0]->calls.empty()) << "the start runs on the connection's own executor";
  w.io.run();
  EXPECT_EQ(w.made[0]->calls, (std::vector<std::string>{"start"}));
  EXPECT_TRUE(w.made[0]->started_on == asio::any_io_executor(w.connector.get_executor()))
      << "the handshake must run where the factory said";

  actions.forget(w.made[0]->id);
  EXPECT_EQ(actions.live(), 0u);
  EXPECT_TRUE(actions.connections().empty());
}

TEST(pool_actions_two_loops, a_request_started_on_a_connections_loop_is_granted_there) {
  fake_world w;
  query_metrics metrics{nullptr, {}};
  pool_params p;
  p.min_size = 2;
  p.max_size = 2;
  pool_core core{p, 4};
  actions_under_test actions{fake_driver{&w}, metrics};
  pool_todo todo;
  core.start(w.now);
  actions.carry(core, todo);
  ASSERT_EQ(w.made.size(), 2u);
  for (const auto& c : w.made) core.on_open_succeeded(w.now, c->id);
  actions.carry(core, todo);
  // The later slot first: without groups, a tie goes to the earlier one.
  for (auto it = w.made.rbegin(); it != w.made.rend(); ++it) {
    const auto& c = *it;
    const pgpipe::detail::slot_group loop = c->id % 2;
    auto out = core.request(w.now, request_kind::shared, time_point::max(), loop);
    ASSERT_EQ(out.what, request_outcome::kind::granted);
    EXPECT_EQ(out.slot, c->id) << "the factory's loop must be the slot's group in pool_core";
  }
}

TEST_F(pool_actions_one_slot, a_granted_waiter_reaches_its_connection_with_its_wait_on_the_drivers_clock) {
  auto c = connected();
  auto first = query("select 1");
  ASSERT_EQ(submit(first).what, request_outcome::kind::granted);
  EXPECT_EQ(actions.grant_now(*first, c->id), c);
  EXPECT_EQ(first->conn.lock(), c);
  EXPECT_TRUE(first->wire.pooled);

  auto second = query("select 2");
  ASSERT_EQ(submit(second).what, request_outcome::kind::queued);
  w.now += 25ms;
  core.release(w.now, c->id, request_kind::shared);  // the first query's capacity comes back
  actions.carry(core, todo);
  EXPECT_EQ(second->wire.waited, 25ms) << "the wait is measured on the driver's clock";
  EXPECT_TRUE(second->wire.pooled);
  EXPECT_EQ(second->conn.lock(), c);
  EXPECT_TRUE(c->calls.empty()) << "the query must not reach the connection under the lock";

  run_work();
  EXPECT_EQ(c->calls, (std::vector<std::string>{"enqueue select 2"}));
  EXPECT_EQ(w.answers(), 0u);
  const auto s = stats();
  EXPECT_EQ(s.acquire_wait.count, 2u) << "both waits recorded: the immediate grant's and the queued one's";
  EXPECT_EQ(s.acquire_wait.sum, 25ms);
}

TEST_F(pool_actions_one_slot, a_granted_acquire_gets_a_lease_on_its_slots_connection) {
  auto c = connected_and_busy();

  auto a = queued_acquire();
  w.now += 40ms;
  core.release(w.now, c->id, request_kind::shared);
  actions.carry(core, todo);
  EXPECT_TRUE(w.leases.empty()) << "the lease is handed over after the unlock";
  run_work();
  ASSERT_EQ(w.leases.size(), 1u);
  EXPECT_EQ(w.leases[0].req, a);
  EXPECT_EQ(w.leases[0].conn, c);
  EXPECT_EQ(w.leases[0].slot, c->id);
  EXPECT_EQ(a->waiter, 0u) << "the acquire left the waiters";
  EXPECT_EQ(stats().acquire_wait.sum, 40ms);
}

TEST_F(pool_actions_one_slot, a_grant_whose_connection_is_gone_fails_the_waiter_as_not_sent) {
  auto c = connected_and_busy();
  auto second = query("select 2");
  ASSERT_EQ(submit(second).what, request_outcome::kind::queued);
  auto a = queued_acquire();

  // The connection went away (conn_finished) before pool_core heard of it:
  // capacity coming back on its slot grants waiters it cannot serve.
  actions.forget(c->id);
  core.release(w.now, c->id, request_kind::shared);
  actions.carry(core, todo);
  core.release(w.now, c->id, request_kind::shared);
  actions.carry(core, todo);
  EXPECT_EQ(w.answers(), 0u) << "the waiters are answered after the unlock";
  run_work();

  ASSERT_EQ(w.query_failures.size(), 1u);
  EXPECT_EQ(w.query_failures[0].t, second);
  EXPECT_EQ(w.query_failures[0].ec, errc::not_sent);
  EXPECT_EQ(w.query_failures[0].diag.client_message, "connection gone");
  ASSERT_EQ(w.acquire_failures.size(), 1u);
  EXPECT_EQ(w.acquire_failures[0].req, a);
  EXPECT_EQ(w.acquire_failures[0].ec, errc::not_sent);
  EXPECT_TRUE(w.leases.empty());
  EXPECT_TRUE(c->calls.empty()) << "nothing may be handed to a connection the pool no longer has";
  EXPECT_TRUE(second->conn.expired());
}

TEST_F(pool_actions_one_slot, a_failed_wait_is_query_timeout_when_the_querys_own_deadline_passed_else_pool_timeout) {
  auto c = connected_and_busy();

  // Its own deadline (query_timeout or a per-call timeout) binds first.
  auto own = query("select own", w.now + 50ms);
  ASSERT_EQ(submit(own, w.now + 50ms).what, request_outcome::kind::queued);
  // acquire_timeout binds first; the query's own deadline is later.
  auto pooled = query("select pooled", w.now + 10s);
  ASSERT_EQ(submit(pooled, w.now + 50ms).what, request_outcome::kind::queued);

  w.now += 60ms;
  core.on_tick(w.now);
  actions.carry(core, todo);
  EXPECT_EQ(w.answers(), 0u) << "the waiters are answered after the unlock";
  EXPECT_EQ(own->wire.waited, 60ms);
  EXPECT_EQ(pooled->wire.waited, 60ms);
  EXPECT_EQ(w.clock_reads, 1) << "one reading of the clock for every waiter that left";
  run_work();

  ASSERT_EQ(w.query_failures.size(), 2u);
  EXPECT_EQ(w.query_failures[0].t, own);
  EXPECT_EQ(w.query_failures[0].ec, errc::query_timeout);
  EXPECT_EQ(w.query_failures[1].t, pooled);
  EXPECT_EQ(w.query_failures[1].ec, errc::pool_timeout);
  EXPECT_EQ(w.query_failures[1].diag.client_message, make_error_code(errc::pool_timeout).message());
  EXPECT_EQ(stats().acquire_wait.count, 3u);
}

TEST_F(pool_actions_one_slot, a_connect_failure_fails_the_waiters_with_the_servers_diagnostics) {
  core.start(w.now);
  carry_and_run();
  ASSERT_EQ(w.made.size(), 1u);
  const slot_id slot = w.made[0]->id;
  auto waiting = query("select 1");
  ASSERT_EQ(submit(waiting).what, request_outcome::kind::queued);
  auto a = queued_acquire();

  // As client_impl::conn_connect_failed: a permanent error fails them at once.
  const std::string message =
      "connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  password authentication failed for user "
      "\"app\"";
  const auto failure = pgpipe::detail::classify_connect_failure(message, false, {});
  const auto kind = pgpipe::detail::kind_of_connect_failure(failure.ec, message);
  ASSERT_EQ(kind, pgpipe::detail::connect_failure_kind::permanent) << "the scenario needs a permanent connect error";
  actions.connect_failed(slot, message);
  EXPECT_EQ(actions.live(), 0u);
  EXPECT_TRUE(actions.connections().empty());
  core.on_open_failed(w.now, slot, failure.ec, kind);
  actions.carry(core, todo);
  EXPECT_EQ(w.answers(), 0u) << "the waiters are answered after the unlock";
  run_work();

  ASSERT_EQ(w.query_failures.size(), 1u);
  EXPECT_EQ(w.query_failures[0].ec, failure.ec);
  EXPECT_EQ(w.query_failures[0].diag.sqlstate, "28P01");
  EXPECT_EQ(w.query_failures[0].diag.severity, "FATAL");
  EXPECT_NE(w.query_failures[0].diag.message.find("password authentication failed"), std::string::npos)
      << w.query_failures[0].diag.message;
  ASSERT_EQ(w.acquire_failures.size(), 1u);
  EXPECT_EQ(w.acquire_failures[0].ec, failure.ec);
  EXPECT_EQ(w.acquire_failures[0].diag.sqlstate, "28P01");
  // A request refused at once later carries them too; any other code its own words.
  EXPECT_EQ(actions.connect_error_diag(failure.ec).sqlstate, "28P01");
  EXPECT_EQ(actions.connect_error_diag(make_error_code(errc::closed)).sqlstate, "");
  EXPECT_EQ(actions.connect_error_diag(make_error_code(errc::closed)).client_message,
            make_error_code(errc::closed).message());
}

TEST_F(pool_actions_one_slot, check_and_close_reach_the_connection_after_the_unlock) {
  auto c = connected();
  w.now += one_slot().health_check_interval + 1ms;
  core.on_tick(w.now);
  actions.carry(core, todo);
  EXPECT_TRUE(c->calls.empty()) << "the check must not run under the lock";
  run_work();
  ASSERT_EQ(c->calls, (std::vector<std::string>{"check"})) << "an idle connection past health_check_interval";

  core.on_check_done(w.now, c->id, true);
  carry_and_run();
  core.close(w.now);
  actions.carry(core, todo);
  EXPECT_TRUE(actions.connections().empty()) << "a closed connection leaves the map at once";
  EXPECT_EQ(actions.live(), 1u) << "and stays live until it reports it finished";
  EXPECT_EQ(c->calls, (std::vector<std::string>{"check"})) << "the close must not run under the lock";
  run_work();
  EXPECT_EQ(c->calls, (std::vector<std::string>{"check", "close"}));
}

TEST_F(pool_actions_one_slot, a_withdrawn_waiter_is_neither_granted_nor_failed) {
  auto c = connected_and_busy();
  auto second = query("select 2");
  ASSERT_EQ(submit(second).what, request_outcome::kind::queued);
  ASSERT_TRUE(actions.withdraw_query(core, *second));
  EXPECT_FALSE(actions.withdraw_query(core, *second)) << "withdrawn once";
  core.release(w.now, c->id, request_kind::shared);
  carry_and_run();
  EXPECT_TRUE(c->calls.empty());
  EXPECT_EQ(w.answers(), 0u);
}

}  // namespace
