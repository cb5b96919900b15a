// A Patroni cluster (tests/support/patroni: etcd and three PostgreSQL 15
// nodes) failing over under steady writes and marked reads: a switchover, a
// crash of the leader's postmaster (kill -9) and a hang of the whole leader
// node (SIGSTOP of Patroni and PostgreSQL). Writers use the async transaction
// helper and the batch through one multi-host conninfo with
// target_session_attrs=read-write. Readers go through an async_read_router
// whose primary is that multi-host conninfo and whose replicas are the three
// nodes, each with target_session_attrs=standby: whichever nodes are
// standbys at the moment serve the reads. Afterwards every write reported
// committed is in the table and none reported failed with nothing executed
// is; every read that answered returned the row stored for its key, in a
// read-only transaction, and none took longer than its bound; the write and
// read gaps of each event are printed. Label `patroni`: run once in CI.
#include "support/kit.hpp"
#include "support/patroni.hpp"
#include "support/use_future_ec.hpp"

#include <pgpipe/async_client.hpp>
#include <pgpipe/async_read_router.hpp>
#include <pgpipe/read_routing.hpp>
#include <pgpipe/transaction.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

enum class fate { committed, nothing_executed, unknown };

struct write_event {
  long id;
  steady::time_point start, end;
  fate f;
  std::string error;
};

// Failures that say the write never ran: no connection to send it on, or it
// was refused before COMMIT could make anything stay.
bool nothing_executed(const std::error_code& ec) {
  return ec == pgpipe::errc::not_sent || ec == pgpipe::errc::pool_timeout ||
         ec == pgpipe::errc_condition::connect_error || pgpipe::sqlstate_of(ec) == "25006";
}

std::set<long> stored_ids(const std::string& conninfo) {
  std::set<long> ids;
  PGconn* c = PQconnectdb(conninfo.c_str());
  PGresult* r = PQexec(c, "select id from patroni_writes");
  for (int i = 0; PQresultStatus(r) == PGRES_TUPLES_OK && i < PQntuples(r); ++i) ids.insert(std::stol(PQgetvalue(r, i, 0)));
  const bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;
  PQclear(r);
  PQfinish(c);
  if (!ok) throw std::runtime_error("cannot read patroni_writes");
  return ids;
}

// One marked read through the router and what its answer said.
struct read_event {
  steady::time_point start, end;
  std::error_code ec;
  std::string error;           // when ec: its message and the server's
  bool right = false;          // one row, the value stored for its key
  bool read_only_txn = false;  // transaction_read_only was on where it ran
  bool standby = false;        // pg_is_in_recovery() where it ran
  std::string port;            // inet_server_port() where it ran
  std::string router;          // when ec: what the router saw as it failed
};

// The router's view of its servers, for a read that failed: which replicas
// it counted healthy and in recovery, and the state of each pool.
std::string describe_router(const pgpipe::read_routing_stats& s) {
  auto pool = [](const pgpipe::pool_stats& p) {
    return "open " + std::to_string(p.idle + p.busy) + ", connecting " + std::to_string(p.connecting) +
           ", queued " + std::to_string(p.queued) + ", connects " + std::to_string(p.connects) +
           ", disconnects " + std::to_string(p.disconnects);
  };
  std::string out = "primary probes " + std::to_string(s.primary_probes_ok) + " ok / " +
                    std::to_string(s.primary_probes_failed) + " failed; primary read-only pool: " +
                    pool(s.primary_read_only);
  for (const auto& r : s.replicas)
    out += "; " + r.name + (r.healthy ? " healthy" : " unhealthy") +
           (r.in_recovery ? " in recovery" : " not in recovery") + " probes " + std::to_string(r.probes_ok) +
           "/" + std::to_string(r.probes_failed) + " pool: " + pool(r.pool);
  return out;
}

constexpr int read_keys = 1000;
// The value stored for key k, checked against every answer.
std::string read_value(int k) { return "read-" + std::to_string(k * 7919 % 100003); }

// The longest stretch of [from, to) without one of the sorted `ends`: from
// `from` to the first end, between two, and from the last to `to`.
std::chrono::milliseconds longest_gap(const std::vector<steady::time_point>& ends, steady::time_point from,
                                      steady::time_point to) {
  std::chrono::milliseconds gap{0};
  steady::time_point prev = from;
  for (auto t : ends) {
    if (t <= from) continue;
    if (t >= to) break;
    gap = std::max(gap, std::chrono::duration_cast<std::chrono::milliseconds>(t - prev));
    prev = t;
  }
  return std::max(gap, std::chrono::duration_cast<std::chrono::milliseconds>(to - prev));
}

std::string query_value(const std::string& conninfo, const std::string& sql) {
  PGconn* c = PQconnectdb(conninfo.c_str());
  PGresult* r = PQexec(c, sql.c_str());
  const bool ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
  const std::string v = ok ? PQgetvalue(r, 0, 0) : PQresultErrorMessage(r);
  PQclear(r);
  PQfinish(c);
  if (!ok) throw std::runtime_error(sql + ": " + v);
  return v;
}

void exec(const std::string& conninfo, const std::string& sql) {
  PGconn* c = PQconnectdb(conninfo.c_str());
  PGresult* r = PQexec(c, sql.c_str());
  const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
  const std::string msg = PQresultErrorMessage(r);
  PQclear(r);
  PQfinish(c);
  if (!ok) throw std::runtime_error(sql + ": " + msg);
}

TEST(patroni_failover, writers_follow_the_leader_through_switchover_crash_and_hang) {
  pgpipe::test::patroni_cluster cluster;
  const std::string rw = cluster.conninfo("read-write");
  exec(rw, "create table patroni_writes (id bigint primary key, how text)");
  exec(rw, "create table patroni_reads (k int primary key, v text not null); "
           "insert into patroni_reads select k, 'read-' || (k * 7919 % 100003) from generate_series(1, " +
               std::to_string(read_keys) + ") k");
  // Every standby has the rows before a read may reach it. PostgreSQL 15
  // has no wait for a replay position: each standby watches its own.
  const std::string lsn = query_value(rw, "select pg_current_wal_lsn()");
  for (const auto& m : cluster.members())
    if (m.role != "Leader")
      exec(cluster.node_conninfo(m.name),
           "set statement_timeout = '30s'; do $$ begin while coalesce(pg_last_wal_replay_lsn() < '" + lsn +
               "', true) loop perform pg_sleep(0.01); end loop; end $$");

  auto p = pgpipe::test::fault_params(rw, 4);
  p.connect_timeout = 2s;
  p.acquire_timeout = 4s;
  p.query_timeout = 3s;
  p.connect_backoff_max = 200ms;
  const auto bound = p.connect_timeout + p.acquire_timeout + p.query_timeout;
  pgpipe::async_client client(p, {.loops = 1});

  // The readers' router: its primary follows the leader as the writers do;
  // each node is a replica, refused by libpq while it is the leader
  // (target_session_attrs=standby) and left out by the probes once it
  // leaves recovery. A standby promoted under open sessions keeps them, and
  // until the next probe reads still reach them: read-only sessions keep a
  // marked read read-only there (without them, such reads run in read-write
  // transactions on the new leader: docs/scaling.md, "A Patroni cluster").
  // A read's attempt ends within its query_timeout, which bounds its wait
  // for a connection too (acquire_timeout, connect_timeout).
  auto read_params = [](const std::string& conninfo) {
    auto r = pgpipe::test::fault_params(conninfo, 2);
    r.connect_timeout = 1s;
    r.acquire_timeout = 1s;
    r.query_timeout = 2s;
    r.connect_backoff_max = 100ms;
    return r;
  };
  pgpipe::read_routing_params rp;
  rp.probe_interval = 200ms;
  rp.probe_timeout = 1s;
  std::vector<pgpipe::async_client> replicas;
  for (const auto& m : cluster.members()) {
    auto r = read_params(cluster.node_conninfo(m.name) + " target_session_attrs=standby");
    r.read_only_sessions = true;
    replicas.emplace_back(r, pgpipe::async_client_options{.loops = 1});
    rp.replica_names.push_back(m.name);
  }
  // The router's read-only pool on the primary takes these: its conninfo
  // lists every node, and its first connect after the leader hangs walks
  // past the frozen node (one connect_timeout) before it reaches the new
  // leader, so its wait must outlast a connect_timeout, as the writers' does
  // (query_timeout, 2 s, bounds it as well). With acquire_timeout =
  // connect_timeout a read that needed that connect failed with pool_timeout
  // (once in CI, 1,005 ms after its call).
  auto read_p = read_params(rw);
  read_p.acquire_timeout = 2s;
  const auto read_bound = read_p.connect_timeout + read_p.acquire_timeout;
  // For a re-run on a second server and for a 2-core machine shared with
  // three PostgreSQL nodes, Patroni and etcd.
  const auto read_margin = 1000ms;
  pgpipe::async_read_router router(pgpipe::async_client(read_p, {.loops = 1}), std::move(replicas), rp);

  std::atomic<bool> stop{false};
  std::atomic<long> next_id{1};
  std::mutex mu;
  std::condition_variable progressed;
  std::vector<write_event> events;
  std::vector<read_event> reads;
  auto writer = [&](bool batch) {
    while (!stop.load()) {
      const long id = next_id.fetch_add(1);
      const auto start = steady::now();
      std::error_code ec;
      if (batch) {
        std::vector<pgpipe::statement> s;
        s.emplace_back("insert into patroni_writes values ($1, 'batch')", id);
        auto [e, report] = pgpipe::async_transaction_batch(client, {}, std::move(s), pgpipe::test::use_future_ec).get();
        ec = e;
      } else {
        auto [e, report] = pgpipe::async_transaction(
                               client, {},
                               [id](pgpipe::async_lease& l) -> asio::awaitable<std::error_code> {
                                 auto [qe, r] = co_await l.async_query("insert into patroni_writes values ($1, 'helper')",
                                                                       id, asio::as_tuple(asio::use_awaitable));
                                 co_return qe;
                               },
                               pgpipe::test::use_future_ec)
                               .get();
        ec = e;
      }
      write_event ev{id, start, steady::now(), fate::committed, ""};
      if (ec) {
        ev.f = nothing_executed(ec) ? fate::nothing_executed : fate::unknown;
        ev.error = ec.message();
      }
      std::lock_guard lk(mu);
      events.push_back(std::move(ev));
      progressed.notify_all();
    }
  };
  std::vector<std::thread> writers;
  // Joined on every way out, a fixture exception included.
  struct joiner {
    std::atomic<bool>& stop;
    std::vector<std::thread>& threads;
    ~joiner() {
      stop.store(true);
      for (auto& t : threads)
        if (t.joinable()) t.join();
    }
  } join_writers{stop, writers};
  for (int i = 0; i < 4; ++i) writers.emplace_back(writer, i % 2 == 0);
  auto reader = [&](int first) {
    pgpipe::query_options marked;
    marked.read_only = true;
    for (int n = first; !stop.load(); ++n) {
      const int k = n % read_keys + 1;
      read_event ev;
      ev.start = steady::now();
      auto f = router.async_query(marked,
                                  "select v, current_setting('transaction_read_only'), pg_is_in_recovery()::text, "
                                  "inet_server_port()::text from patroni_reads where k = $1",
                                  k, pgpipe::test::use_future_ec);
      // Far past every bound: a read that never completes is recorded, not waited for.
      if (f.wait_for(60s) != std::future_status::ready) {
        ev.ec = make_error_code(std::errc::timed_out);
        ev.error = "never completed";
      } else {
        auto [ec, r] = f.get();
        ev.ec = ec;
        if (ec) {
          ev.error = ec.message() + " | " + r.diag().to_string();
          ev.router = describe_router(router.stats());
        } else {
          ev.right = r.size() == 1 && r.columns() == 4 && r[0][0].text() == read_value(k);
          ev.read_only_txn = r.size() == 1 && r[0][1].text() == "on";
          ev.standby = r.size() == 1 && r[0][2].text() == "true";
          ev.port = r.size() == 1 ? std::string(r[0][3].text()) : "";
        }
      }
      ev.end = steady::now();
      std::lock_guard lk(mu);
      reads.push_back(std::move(ev));
      progressed.notify_all();
    }
  };
  writers.emplace_back(reader, 0);

  // Counted from the newest back (events are appended as they end), so a
  // wake-up costs what came since t, not the whole run.
  auto oks_after = [&](steady::time_point t) {
    int n = 0;
    for (auto e = events.rbegin(); e != events.rend() && e->end >= t; ++e)
      n += e->f == fate::committed && e->start >= t;
    return n;
  };
  auto reads_after = [&](steady::time_point t) {
    int n = 0;
    for (auto e = reads.rbegin(); e != reads.rend() && e->end >= t; ++e) n += !e->ec && e->start >= t;
    return n;
  };
  // Both kinds of traffic have resumed since t.
  auto wait_for_writes = [&](steady::time_point t, std::chrono::seconds limit) {
    std::unique_lock lk(mu);
    return progressed.wait_for(lk, limit, [&] { return oks_after(t) >= 20 && reads_after(t) >= 20; });
  };
  struct event_mark {
    std::string what;
    std::string node;
    steady::time_point at;
  };
  std::vector<event_mark> marks;
  std::string final_leader;
  // Patroni's state has no event to wait on: it is asked every 250 ms
  // (patronictl is a process each time), however busy the readers are.
  auto poll_pause = [&] {
    std::unique_lock lk(mu);
    progressed.wait_for(lk, 250ms, [] { return false; });
  };
  bool resumed = wait_for_writes(steady::time_point{}, 30s);
  ASSERT_TRUE(resumed) << "no writes or no reads before any failover\n" << cluster.describe();

  try {
  std::string leader = cluster.leader();
  // In synchronous mode only the synchronous standby may take over.
  std::string other;
  for (const auto& m : cluster.members())
    if (m.role == "Sync Standby") other = m.name;
  ASSERT_FALSE(other.empty()) << cluster.describe();
  marks.push_back({"switchover", leader + " to " + other, steady::now()});
  cluster.switchover(leader, other);
  // patronictl may return before the old leader steps down.
  leader = cluster.wait_for_healthy(leader, 90s);
  EXPECT_TRUE(wait_for_writes(marks.back().at, 60s))
      << "no writes or no reads after the switchover\n" << cluster.describe();

  marks.push_back({"kill -9 of the leader's postmaster", leader, steady::now()});
  const pid_t killed = cluster.postmaster_pid(leader);
  ASSERT_GT(killed, 0) << cluster.describe();
  ::kill(killed, SIGKILL);
  // Orphaned backends may serve on for a moment: the crash is over when
  // Patroni has started a new postmaster (or moved the leader) and writes
  // flow again.
  for (const auto until = steady::now() + 60s;
       cluster.postmaster_pid(leader) == killed && cluster.leader() == leader && steady::now() < until;)
    poll_pause();
  const auto restarted = steady::now();
  EXPECT_TRUE(wait_for_writes(restarted, 60s)) << "no writes or no reads after the crash\n" << cluster.describe();
  leader = cluster.wait_for_healthy("", 90s);
  // Just after the crash the restarted node and a standby may still race for
  // the key: freeze the node holding it once it has held it for three of
  // Patroni's loops (else the hang can hit a replica and test nothing).
  for (auto until = steady::now() + 30s, since = steady::now(); steady::now() < until; poll_pause()) {
    const std::string now = cluster.leader();
    if (now.empty() || now != leader) {
      if (!now.empty()) leader = now;
      since = steady::now();
    } else if (steady::now() - since >= 3s) {
      break;
    }
  }

  cluster.freeze(leader, true);
  // The mark follows the freeze: freezing scans /proc for the postmaster's
  // children while the leader still commits, and twenty commits landing in
  // that scan would read as writes after the hang (the wait below then ended
  // at once and thawed the node: write gaps of 13 to 78 ms).
  marks.push_back({"SIGSTOP of the leader node", leader, steady::now()});
  // ttl, then the promotion, then (synchronous_mode_strict) a synchronous
  // standby following the new leader before a COMMIT returns.
  const bool after_hang = wait_for_writes(marks.back().at, 120s);
  cluster.freeze(leader, false);
  EXPECT_TRUE(after_hang) << "no writes or no reads after the leader hung\n" << cluster.describe();
  // Only the leader matters for the check: the thawed node may still be
  // rewinding or cloning.
  for (const auto until = steady::now() + 60s; final_leader.empty() && steady::now() < until;) {
    final_leader = cluster.leader();
    poll_pause();
  }
  ASSERT_FALSE(final_leader.empty()) << "no leader after the hang\n" << cluster.describe();
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
  // Everything below reads the events: no writer or reader may still add one.
  // The last event's window ends here, not after the join, which may wait
  // for a write in flight.
  const auto stopped_at = steady::now();
  stop.store(true);
  for (auto& w : writers) w.join();

  const std::set<long> stored = stored_ids(cluster.node_conninfo(final_leader));
  int committed = 0, nothing = 0, unknown = 0, missing = 0, present = 0;
  std::chrono::milliseconds longest{0};
  std::string sample;
  std::set<std::string> unknown_kinds;
  for (const auto& e : events) {
    longest = std::max(longest, std::chrono::duration_cast<std::chrono::milliseconds>(e.end - e.start));
    switch (e.f) {
      case fate::committed:
        ++committed;
        if (!stored.count(e.id)) ++missing;
        break;
      case fate::nothing_executed:
        ++nothing;
        if (stored.count(e.id)) {
          ++present;
          sample = e.error;
        }
        break;
      case fate::unknown:
        ++unknown;
        unknown_kinds.insert(e.error);
        break;
    }
  }
  // The write gap of an event: the longest time without a committed write
  // completing, from the event until the next one (or the end).
  std::vector<steady::time_point> ends;
  for (const auto& e : events)
    if (e.f == fate::committed) ends.push_back(e.end);
  std::sort(ends.begin(), ends.end());
  // The read gap likewise, over reads that answered.
  std::vector<steady::time_point> read_ends;
  for (const auto& e : reads)
    if (!e.ec) read_ends.push_back(e.end);
  std::sort(read_ends.begin(), read_ends.end());
  for (std::size_t i = 0; i < marks.size(); ++i) {
    const auto from = marks[i].at;
    const auto to = i + 1 < marks.size() ? marks[i + 1].at : stopped_at;
    // Reads the primary answered: those the router found no replica for.
    int on_primary = 0;
    for (const auto& e : reads) on_primary += !e.ec && !e.standby && e.start >= from && e.start < to;
    std::printf("[figure] %s (%s): write gap %lld ms, read gap %lld ms, %d reads answered by the primary\n",
                marks[i].what.c_str(), marks[i].node.c_str(), static_cast<long long>(longest_gap(ends, from, to).count()),
                static_cast<long long>(longest_gap(read_ends, from, to).count()), on_primary);
  }
  std::printf("[figure] writes: %d committed (%d missing), %d failed with nothing executed (%d present), %d unknown; "
              "longest write %lld ms (bound %lld ms)\n",
              committed, missing, nothing, present, unknown, static_cast<long long>(longest.count()),
              static_cast<long long>(bound.count()));
  for (const auto& k : unknown_kinds) std::printf("[figure] may have committed: %s\n", k.c_str());
  // Where the missing writes were acknowledged: the event window holding the
  // acknowledgement, and the first and last missing ids, so a loss can be
  // matched with the cluster's logs.
  for (std::size_t i = 0; i < marks.size(); ++i) {
    const auto from = marks[i].at;
    const auto to = i + 1 < marks.size() ? marks[i + 1].at : steady::time_point::max();
    long first = 0, last = 0, n = 0;
    for (const auto& e : events) {
      if (e.f != fate::committed || stored.count(e.id) || e.end < from || e.end >= to) continue;
      if (n++ == 0) first = e.id;
      last = e.id;
    }
    if (n > 0)
      std::printf("[figure] missing after %s: %ld (ids %ld..%ld, acknowledged %lld..%lld ms after it)\n",
                  marks[i].what.c_str(), n, first, last,
                  static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::find_if(events.begin(), events.end(), [&](const write_event& e) { return e.id == first; })->end - from).count()),
                  static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::find_if(events.begin(), events.end(), [&](const write_event& e) { return e.id == last; })->end - from).count()));
  }
  if (missing > 0) {
    // Which node holds the lost writes tells a split brain (the thawed old
    // leader took them) from a lost acknowledgement on the new leader.
    for (const auto& m : cluster.members()) {
      int held = 0;
      try {
        const std::set<long> there = stored_ids(cluster.node_conninfo(m.name));
        for (const auto& e : events) held += e.f == fate::committed && !stored.count(e.id) && there.count(e.id);
        std::printf("[figure] missing writes present on %s (%s, TL %d): %d\n", m.name.c_str(), m.role.c_str(),
                    m.timeline, held);
      } catch (const std::exception& ex) {
        std::printf("[figure] %s (%s) not readable: %s\n", m.name.c_str(), m.role.c_str(), ex.what());
      }
    }
  }
  int read_failed = 0, read_wrong = 0, read_writable = 0, read_on_standby = 0;
  std::chrono::milliseconds longest_read{0};
  std::map<std::string, int> read_errors;
  std::string wrong_sample, writable_sample;
  for (const auto& e : reads) {
    longest_read = std::max(longest_read, std::chrono::duration_cast<std::chrono::milliseconds>(e.end - e.start));
    const long long at =
        marks.empty() ? 0 : std::chrono::duration_cast<std::chrono::milliseconds>(e.start - marks.front().at).count();
    if (e.ec) {
      ++read_failed;
      ++read_errors[e.error];
      // When, against the events, and what the router saw then.
      std::string when = "before the first event";
      for (const auto& m : marks)
        if (m.at <= e.start)
          when = std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(e.start - m.at).count()) +
                 " ms after the " + m.what + " (" + m.node + ")";
      std::printf("[figure] read failed %s, after %lld ms: %s\n  router then: %s\n", when.c_str(),
                  static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(e.end - e.start).count()),
                  e.error.c_str(), e.router.c_str());
      continue;
    }
    read_on_standby += e.standby;
    if (!e.right && read_wrong++ == 0)
      wrong_sample = "port " + e.port + ", " + std::to_string(at) + " ms after the switchover";
    if (!e.read_only_txn && read_writable++ == 0)
      writable_sample = "port " + e.port + (e.standby ? " (in recovery)" : " (not in recovery)") + ", started " +
                        std::to_string(at) + " ms after the switchover";
  }
  const auto rs = router.stats();
  std::printf("[figure] reads: %zu, %d answered by a standby, %d failed, %d wrong, %d in a read-write transaction; "
              "longest read %lld ms (bound %lld ms + %lld ms); to a replica %llu, to the primary %llu, re-run on "
              "the primary %llu, on a replica %llu\n",
              reads.size(), read_on_standby, read_failed, read_wrong, read_writable,
              static_cast<long long>(longest_read.count()), static_cast<long long>(read_bound.count()),
              static_cast<long long>(read_margin.count()), static_cast<unsigned long long>(rs.reads_to_replica),
              static_cast<unsigned long long>(rs.reads_to_primary_no_replica + rs.reads_to_primary_lag),
              static_cast<unsigned long long>(rs.reads_retried_on_primary),
              static_cast<unsigned long long>(rs.reads_retried_on_replica));
  for (const auto& [what, n] : read_errors) std::printf("[figure] read failed %d times: %s\n", n, what.c_str());
  EXPECT_EQ(missing, 0) << "writes reported committed are missing\n" << cluster.describe();
  EXPECT_EQ(present, 0) << "a write reported as not executed is in the table: " << sample;
  EXPECT_LE(longest, bound + 1000ms) << "a write hung past connect_timeout + acquire_timeout + query_timeout";
  EXPECT_EQ(read_wrong, 0) << "a read answered a value other than the one stored for its key: " << wrong_sample;
  EXPECT_EQ(read_writable, 0) << "a marked read ran in a read-write transaction (a marked write would have "
                                 "committed there): "
                              << writable_sample;
  EXPECT_LE(longest_read, read_bound + read_margin) << "a read hung past connect_timeout + acquire_timeout";
  EXPECT_EQ(read_failed, 0) << "reads failed (see the [figure] lines)";
  pgpipe::test::expect_no_secret(sample, {cluster.password()}, "errors");
}

}  // namespace
