// The blocking pool's book of slots: which connection each pool_core slot
// holds and who holds the slot (a lease, a health check, a connect in
// progress). Sans-IO and a template over the connection type, so that it is
// tested alone with a fake connection and a fake clock
// (tests/unit/blocking/slot_book_test.cpp); blocking_pool_impl keeps one
// under its mutex.
//
// The rules it owns:
//  1. close_pending: pool_core may close a slot (idle timeout, lifetime,
//     close()) while someone holds it. The connection is not closed under
//     the holder's feet: the slot is marked, and the holder closes it when
//     done (lease_ended, check_ended, open_ended). pool_core has forgotten
//     the slot already and must not hear of it again.
//  2. Nothing leaks: every connection leaves the book through a verdict
//     that hands it to the caller to close, or through take_idle at
//     shutdown (leased ones close when their lease ends).
//  3. The liveness bypass: a connection handed out again within
//     `liveness_bypass` of its return is not probed (see below); one that
//     was never returned (a new connection) or sat longer is.
#pragma once

#include "core/pool/pool_types.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pgpipe::detail {

// A connection given back less than this long ago is handed out again without
// the liveness probe (looks_alive: a poll() system call, about 3 us of client
// CPU per query in this VM, a sixth of the blocking driver's syscalls). The
// probe is there for connections that *sat* in the pool while their backend
// died (terminated, server restarted). A backend that dies within this window
// after the release is the race every hand-out already has (it could die a
// microsecond after the probe): the statement fails with connection_lost and
// the connection is replaced. Killing a backend and seeing it gone takes two
// server round trips and a process exit, far longer than this; a busy pool
// re-leases a connection within tens of microseconds. HikariCP skips its
// validation the same way (aliveBypassWindowMs, 500 ms); ours is kept tiny so
// that a connection idle for any human-visible time is still probed.
inline constexpr std::chrono::microseconds liveness_bypass{250};

template <class Conn>
class slot_book {
 public:
  /// A connection leaving the pool: close it after the lock. `why` is null
  /// when the pool closed it on purpose (idleness, lifetime, close).
  struct retired {
    slot_id slot = 0;
    std::unique_ptr<Conn> conn;
    const char* why = nullptr;
  };

  /// What the holder of a slot does once done with it.
  struct hold_end {
    /// pool_core still has the slot: tell it (release, on_broken,
    /// on_check_done). False when the slot was closed meanwhile (rule 1)
    /// or is unknown.
    bool tell_pool = false;
    /// Rule 1: the connection to close now (its conn may be null).
    std::optional<retired> closed;
  };

  /// What a connect's end means for its slot.
  enum class open_verdict {
    connected,        ///< the book holds the connection: on_open_succeeded
    failed,           ///< no connection, slot forgotten: on_open_failed
    closed_meanwhile  ///< pool_core closed the slot: close the connection, tell no one
  };

  /// A connection to hand out, and whether to probe it first (rule 3).
  struct handout {
    Conn* conn = nullptr;  ///< null: the slot holds none (give it back broken)
    bool probe = true;
  };

  // pool_core's actions, in blocking_pool_impl::apply_actions.

  /// open: a connect for `s` starts; a close ordered earlier no longer
  /// stands.
  void open(slot_id s) { slots_[s].close_pending = false; }

  /// check: true when `s` holds a connection, which is now being checked.
  bool check(slot_id s) {
    auto it = slots_.find(s);
    if (it == slots_.end() || !it->second.conn) return false;
    it->second.checking = true;
    return true;
  }

  /// close: the connection to close now, or nothing when the slot is held
  /// (its holder closes it, rule 1) or unknown.
  std::optional<retired> close(slot_id s) {
    auto it = slots_.find(s);
    if (it == slots_.end()) return std::nullopt;
    entry& e = it->second;
    if (e.leased || e.checking || !e.conn) {
      e.close_pending = true;
      return std::nullopt;
    }
    return remove(it);
  }

  /// grant: `s` is leased.
  void lease(slot_id s) { slots_[s].leased = true; }

  // The holders.

  /// The connect for `s` ended with `conn` (null when it failed). On
  /// connected the book takes `conn`; otherwise `conn` stays the caller's.
  open_verdict open_ended(slot_id s, std::unique_ptr<Conn>& conn) {
    auto it = slots_.find(s);
    if (it == slots_.end()) return open_verdict::closed_meanwhile;
    if (it->second.close_pending) {
      slots_.erase(it);
      return open_verdict::closed_meanwhile;
    }
    if (!conn) {
      slots_.erase(it);
      return open_verdict::failed;
    }
    it->second.conn = std::move(conn);
    return open_verdict::connected;
  }

  /// The connection leased on `s`, and whether to probe it at `now`.
  handout hand_out(slot_id s, time_point now) const {
    auto it = slots_.find(s);
    if (it == slots_.end()) return {};
    return {it->second.conn.get(), now - it->second.returned_at >= liveness_bypass};
  }

  /// The lease on `s` ended at `now`: its connection is reused (`reuse`)
  /// or, with the reason `why`, closed.
  hold_end lease_ended(slot_id s, bool reuse, const char* why, time_point now) {
    auto it = slots_.find(s);
    if (it == slots_.end()) return {};
    it->second.leased = false;
    if (!reuse) it->second.why = why;
    if (it->second.close_pending) return {false, remove(it)};
    if (reuse) it->second.returned_at = now;
    return {true, std::nullopt};
  }

  /// The connection of `s` when it holds one (for a health check).
  Conn* connection(slot_id s) const {
    auto it = slots_.find(s);
    return it == slots_.end() ? nullptr : it->second.conn.get();
  }

  /// The health check of `s` ended; `why` is the reason to close it when
  /// it failed (null when healthy).
  hold_end check_ended(slot_id s, const char* why) {
    auto it = slots_.find(s);
    if (it == slots_.end()) return {};
    it->second.checking = false;
    if (why != nullptr) it->second.why = why;
    if (it->second.close_pending) return {false, remove(it)};
    return {true, std::nullopt};
  }

  /// Shutdown, with no connect or check running: every connection not
  /// leased leaves the book (leased ones close when their lease ends).
  std::vector<std::unique_ptr<Conn>> take_idle() {
    std::vector<std::unique_ptr<Conn>> out;
    for (auto it = slots_.begin(); it != slots_.end();) {
      if (!it->second.leased && it->second.conn) {
        out.push_back(std::move(it->second.conn));
        it = slots_.erase(it);
      } else {
        ++it;
      }
    }
    return out;
  }

  std::size_t size() const noexcept { return slots_.size(); }
  bool holds(slot_id s) const { return slots_.count(s) != 0; }

 private:
  struct entry {
    std::unique_ptr<Conn> conn;  // null while connecting
    bool leased = false;
    bool checking = false;
    bool close_pending = false;
    // When a lease last gave it back for reuse; the epoch (never) until
    // then, so a new connection is always probed at hand-out.
    time_point returned_at{};
    // Why it is about to close, for the log line: set where the reason is
    // known, read at the close; null is "closed by the pool".
    const char* why = nullptr;
  };

  retired remove(typename std::unordered_map<slot_id, entry>::iterator it) {
    retired r{it->first, std::move(it->second.conn), it->second.why};
    slots_.erase(it);
    return r;
  }

  std::unordered_map<slot_id, entry> slots_;
};

}  // namespace pgpipe::detail
