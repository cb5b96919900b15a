// pool_actions: pool_core's actions carried out by the async driver, and
// what they change: the connections by slot, the waiters by id, the count
// of live connections and the last connect failure's diagnostics.
//
// Every call is made under the pool mutex that also guards pool_core, and
// nothing here may run a handler or touch a connection with that mutex
// held: carry() makes the state changes at once and leaves the rest (a post
// to a connection, a handler) as work in `out`, which the caller runs after
// the unlock.
//
// The connection and the driver are template parameters
// (pipelined_connection and client_impl's pool_driver in the driver; a
// recording fake connection, a fake clock and a fake driver in
// tests/unit/async/pool/pool_actions_test.cpp): a seam for the test that
// costs the driver no virtual call. A query granted at once (grant_now) is
// one direct call per query.
//
// What carry() does with each action:
//  1. open: the driver's factory makes the slot's connection, which is
//     counted live at once and started (Connection::start, on its executor)
//     after the unlock; its loop becomes the slot's group.
//  2. close, check: reach the connection on its executor after the unlock;
//     close forgets it at once. A slot with no connection is skipped.
//  3. grant: a queued query goes to the slot's connection (observer, then
//     enqueue, on its executor), its wait measured on the driver's clock; an
//     acquire gets a lease on it (Driver::grant_lease). A slot whose
//     connection is gone fails the waiter with errc::not_sent.
//  4. fail: the waiter is answered with pool_core's code, except that a
//     query whose own deadline had passed hears errc::query_timeout
//     (waiter_failure.hpp); a connect error carries the last connect
//     failure's diagnostics (the server's text and SQLSTATE).
// A waiter's wait is recorded in query_metrics when it leaves the queue.
// The clock is read at most once per carry(), and only when a waiter left.
#pragma once

#include "async/connection/query_meter.hpp"
#include "async/connection/request.hpp"
#include "async/pool/pool_ticket.hpp"
#include "async/pool/waiter_failure.hpp"
#include "async/pool/waiter_map.hpp"
#include "core/metrics/query_metrics.hpp"
#include "core/pool/connect_error.hpp"
#include "core/pool/pool_core.hpp"
#include "pq/libpq_failure.hpp"

#include <pgpipe/error.hpp>
#include <pgpipe/query_observer.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pgpipe::detail {

/// Work made under the pool mutex, run in order after it is released.
using pool_todo = std::vector<std::function<void()>>;

/// What the driver's factory makes for a slot pool_core opens.
template <class Connection>
struct made_connection {
  std::shared_ptr<Connection> conn;
  boost::asio::any_io_executor connector;  ///< where its connect handshake runs (Connection::start)
  std::optional<slot_group> group;         ///< its loop, for requests started there (pool_core::set_group)
};

/// Hands `req` to `conn` on the connection's executor, telling the query
/// observer first when one is installed.
template <class Connection>
void post_enqueue(const std::shared_ptr<Connection>& conn, std::shared_ptr<query_request> req) {
  // The observer is reached through the connection (which the handler
  // holds, and which holds it): on a caller's io_context the handler may run
  // after the client is gone, and no reference count is touched per query.
  boost::asio::post(conn->get_executor(), [c = conn, req = std::move(req)] {
    if (query_observer* obs = c->observer()) observe_request_start(*obs, *req, c->slot(), c->backend_pid());
    c->enqueue(req);
  });
}

/// `Driver` is a small copyable handle (the work after the unlock holds
/// copies of it) with:
///   time_point now() const;                                   the pool clock
///   made_connection<Connection> make_connection(slot_id) const;   under the lock: no I/O
///   void fail_query(const std::shared_ptr<basic_pool_ticket<Connection>>&, std::error_code, diagnostics) const;
///   void fail_acquire(const std::shared_ptr<Acquire>&, std::error_code, diagnostics) const;
///   void grant_lease(const std::shared_ptr<Acquire>&, const std::shared_ptr<Connection>&, slot_id) const;
/// The last three run after the unlock. `Acquire` has `waiter_id waiter`
/// and `time_point submitted`. Not thread-safe: every call under the pool
/// mutex.
template <class Connection, class Acquire, class Driver>
class pool_actions {
 public:
  using ticket = basic_pool_ticket<Connection>;

  /// `metrics` records the waits; it outlives this object.
  pool_actions(Driver driver, query_metrics& metrics) : driver_(std::move(driver)), metrics_(metrics) {}

  /// Takes pool_core's actions and carries them out (rules 1-4 above), the
  /// work after the unlock appended to `out`. True when there were actions.
  bool carry(pool_core& core, pool_todo& out) {
    auto actions = core.take_actions();
    std::optional<time_point> at;
    auto now = [&] {
      if (!at) at = driver_.now();
      return *at;
    };
    for (auto& a : actions) {
      switch (a.what) {
        case pool_action::kind::open:
          open(core, out, a.slot);
          break;
        case pool_action::kind::close:
          close(out, a.slot);
          break;
        case pool_action::kind::check:
          check(out, a.slot);
          break;
        case pool_action::kind::grant:
          grant(out, a, now);
          break;
        case pool_action::kind::fail:
          fail(out, a, now);
          break;
      }
    }
    return !actions.empty();
  }

  /// pool_core granted query `t` capacity on `slot` at once (no wait): the
  /// connection to hand it to (post_enqueue). Throws std::out_of_range when
  /// `slot` has no connection.
  std::shared_ptr<Connection> grant_now(ticket& t, slot_id slot) {
    const std::shared_ptr<Connection>& c = conns_.at(slot);
    t.conn = c;
    t.wire.pooled = true;
    metrics_.record_wait(std::chrono::nanoseconds(0));
    return c;
  }

  /// pool_core granted an acquire `slot` at once: the connection to lease.
  /// Throws std::out_of_range as grant_now.
  const std::shared_ptr<Connection>& lease_now(slot_id slot) {
    metrics_.record_wait(std::chrono::nanoseconds(0));
    return conns_.at(slot);
  }

  /// pool_core queued the request as waiter `w` (waiter_map.hpp).
  void queue_query(waiter_id w, std::shared_ptr<ticket> t) { query_waiters_.add(w, std::move(t)); }
  void queue_acquire(waiter_id w, std::shared_ptr<Acquire> r) { acquire_waiters_.add(w, std::move(r)); }
  /// The caller cancelled: true when the request was still waiting and is
  /// now out of pool_core's queue (waiter_map::withdraw).
  bool withdraw_query(pool_core& core, ticket& t) { return query_waiters_.withdraw(core, t); }
  bool withdraw_acquire(pool_core& core, Acquire& r) { return acquire_waiters_.withdraw(core, r); }

  /// `slot`'s connect failed with libpq's `message` (scrubbed of secrets):
  /// it is no longer live, and its diagnostics are what the connect errors
  /// pool_core reports from now on carry.
  void connect_failed(slot_id slot, const std::string& message) {
    last_connect_message_ = message;
    last_connect_diag_ = classify_connect_failure(message, false, {}).diag;
    forget(slot);
  }

  /// `slot`'s connection is gone for good (closed, or its connect failed).
  void forget(slot_id slot) {
    conns_.erase(slot);
    if (live_ > 0) --live_;
  }

  /// Connections made and not yet gone (closed ones still finishing count).
  std::size_t live() const noexcept { return live_; }

  /// The connections pool_core still has, for a teardown.
  std::vector<std::shared_ptr<Connection>> connections() const {
    std::vector<std::shared_ptr<Connection>> all;
    all.reserve(conns_.size());
    for (const auto& entry : conns_) all.push_back(entry.second);
    return all;
  }

  /// The last connect failure's diagnostics for a connect error, else `ec`'s
  /// message.
  diagnostics connect_error_diag(const std::error_code& ec) const {
    if (is_connect_error(ec) && !last_connect_message_.empty()) return last_connect_diag_;
    diagnostics d;
    d.client_message = ec.message();
    return d;
  }

 private:
  void open(pool_core& core, pool_todo& out, slot_id slot) {
    made_connection<Connection> m = driver_.make_connection(slot);
    if (m.group) core.set_group(slot, *m.group);
    conns_[slot] = m.conn;
    ++live_;
    out.push_back([c = std::move(m.conn), cex = std::move(m.connector)] {
      boost::asio::post(c->get_executor(), [c, cex] { c->start(cex); });
    });
  }

  void close(pool_todo& out, slot_id slot) {
    auto it = conns_.find(slot);
    if (it == conns_.end()) return;
    auto c = std::move(it->second);
    conns_.erase(it);
    out.push_back([c = std::move(c)] { boost::asio::post(c->get_executor(), [c] { c->close(); }); });
  }

  void check(pool_todo& out, slot_id slot) {
    auto it = conns_.find(slot);
    if (it == conns_.end()) return;
    out.push_back([c = it->second] { boost::asio::post(c->get_executor(), [c] { c->check(); }); });
  }

  static diagnostics client_diag(std::string message) {
    diagnostics d;
    d.client_message = std::move(message);
    return d;
  }

  template <class Now>
  void grant(pool_todo& out, const pool_action& a, Now& now) {
    auto cit = conns_.find(a.slot);
    if (auto t = query_waiters_.take(a.waiter)) {
      if (cit == conns_.end()) {
        out.push_back([d = driver_, t = std::move(t)] {
          d.fail_query(t, make_error_code(errc::not_sent), client_diag("connection gone"));
        });
        return;
      }
      t->conn = cit->second;
      query_request& req = t->wire;
      req.pooled = true;
      req.waited = now() - req.submitted;
      metrics_.record_wait(req.waited);
      out.push_back([c = cit->second, w = wire_of(std::move(t))] { post_enqueue(c, w); });
    } else if (auto areq = acquire_waiters_.take(a.waiter)) {
      metrics_.record_wait(now() - areq->submitted);
      if (cit == conns_.end()) {
        out.push_back([d = driver_, areq = std::move(areq)] {
          d.fail_acquire(areq, make_error_code(errc::not_sent), client_diag("connection gone"));
        });
        return;
      }
      out.push_back([d = driver_, areq = std::move(areq), c = cit->second, slot = a.slot] {
        d.grant_lease(areq, c, slot);
      });
    }
  }

  template <class Now>
  void fail(pool_todo& out, const pool_action& a, Now& now) {
    if (auto t = query_waiters_.take(a.waiter)) {
      query_request& req = t->wire;
      req.waited = now() - req.submitted;
      metrics_.record_wait(req.waited);
      const auto ec = waiter_failure_code(a.ec, req.deadline, now());
      out.push_back([d = driver_, t = std::move(t), ec, msg = connect_error_diag(a.ec)] { d.fail_query(t, ec, msg); });
    } else if (auto areq = acquire_waiters_.take(a.waiter)) {
      metrics_.record_wait(now() - areq->submitted);
      out.push_back([d = driver_, areq = std::move(areq), ec = a.ec, msg = connect_error_diag(a.ec)] {
        d.fail_acquire(areq, ec, msg);
      });
    }
  }

  Driver driver_;
  query_metrics& metrics_;
  std::unordered_map<slot_id, std::shared_ptr<Connection>> conns_;
  waiter_map<ticket> query_waiters_;
  waiter_map<Acquire> acquire_waiters_;
  std::size_t live_ = 0;
  std::string last_connect_message_;
  diagnostics last_connect_diag_;
};

}  // namespace pgpipe::detail
