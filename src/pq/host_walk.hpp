// host_walk: a multi-host connection string as one libpq connect per host.
//
// Why: libpq 15's nonblocking connect (PQconnectStart/PQconnectPoll) has no
// per-host timeout, so a first host that accepts TCP and never answers would
// eat the whole connect_timeout. The async driver therefore walks the hosts
// itself, one attempt per host with its own deadline, in libpq's order and
// with libpq's target_session_attrs semantics: each attempt keeps the
// attribute (libpq rejects a host that does not match), and prefer-standby
// is two passes, "standby" over every host first, then "any".
//
// The planning is pure (PQconninfoParse only, no connection) and unit-tested
// without a server; start_connect is the one call that opens a connection.
//
// Every connect that walks hosts (the async connect job, the blocking
// listener, the read routers' probes) drives one host_walk: it says which
// attempt comes next and, after a failure, whether the walk goes on and
// with which error and text it ends, so the three report a walk alike
// (Boost.Redis's connect_fsm is the shape). The caller only runs attempts.
#pragma once

#include <pgpipe/error.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

struct pg_conn;

namespace pgpipe::detail {

struct connect_attempt {
  /// For PQconnectStartParams (start_connect builds the null-terminated arrays).
  std::vector<std::string> keys;
  std::vector<std::string> values;
  bool expand_dbname = false;
  /// "host 127.0.0.1 port 5432" (what an error about this attempt names),
  /// empty for a single attempt that carries the whole string.
  std::string where;
};

/// The attempts for `conninfo` (key=value or URI), in order. One attempt
/// with the string unchanged (expand_dbname, libpq does everything) when
/// there is at most one host, or when the string does not parse or its host
/// and port lists do not match: libpq's own error then says why.
/// `fallback_application_name` is added to every attempt.
std::vector<connect_attempt> plan_host_walk(const std::string& conninfo, const std::string& fallback_application_name);

/// Starts the nonblocking connect of one attempt (PQconnectStartParams).
/// Null only when libpq is out of memory; a CONNECTION_BAD handle carries
/// libpq's reason and is the caller's to finish.
pg_conn* start_connect(const connect_attempt& a);

/// Whether the walk goes on to the next attempt after one failed with
/// libpq's `message` (scrubbed or not: only its kind is read). libpq's rule.
bool walk_moves_on(std::string_view message);

/// The reason for an attempt that ran out of connect_timeout, in libpq's
/// own words ("timeout expired"), so that it classifies as libpq's does.
std::string connect_timeout_text(std::chrono::milliseconds connect_timeout);

/// What a failed attempt means for the walk.
struct walk_step {
  /// Start host_walk::current() next; the fields below are empty.
  bool try_next = false;
  /// When the walk is over: the failure that decided it (a server's answer
  /// ends the walk with its own code; every host failing is classified on
  /// the joined text, errc::server_unreachable when nobody answered).
  std::error_code ec;
  /// One attempt: its reason as given. Several: "host a port 1: <reason>;
  /// host b port 2: <reason>", prefixed "every host failed: " when each
  /// was tried. Passwords were scrubbed by the caller.
  std::string message;
  /// The server's fields of the last failure, client_message set to
  /// connect_error_text(message).
  diagnostics diag;
};

/// One walk over a plan: each attempt once, from `first`, wrapping.
/// Not thread-safe; a new walk for each connect.
class host_walk {
 public:
  /// `plan` from plan_host_walk (never empty); `first` is taken modulo its size.
  explicit host_walk(std::vector<connect_attempt> plan, std::size_t first = 0);

  /// The attempt to run now.
  const connect_attempt& current() const noexcept { return plan_[index_]; }
  /// Its position in the plan (where a later walk may start).
  std::size_t current_index() const noexcept { return index_; }
  std::size_t size() const noexcept { return plan_.size(); }

  /// The current attempt failed. `message`: why, passwords already scrubbed
  /// (libpq's text, or the caller's for its own deadline); `needs_password`:
  /// PQconnectionNeedsPassword; `timed_out`: the attempt's own deadline
  /// passed, which moves on like a silent host and, on a single attempt,
  /// is errc::server_unreachable.
  walk_step on_attempt_failed(std::string message, bool needs_password, bool timed_out);

  /// The caller stops before the walk is over (its overall deadline, a
  /// stop): the failures so far, as a walk that ended.
  walk_step give_up() const;

 private:
  walk_step ended(std::error_code ec, std::string message, diagnostics diag) const;
  std::string join() const;

  std::vector<connect_attempt> plan_;
  std::size_t index_ = 0;
  std::size_t tried_ = 0;
  std::vector<std::string> failures_;  // "where: reason", one per failed attempt
  diagnostics last_diag_;
  std::error_code last_ec_;
};

}  // namespace pgpipe::detail
