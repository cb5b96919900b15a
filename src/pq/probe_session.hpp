// probe_session: a read router's own libpq connection to one server, for
// its probes only, every wait bounded by a deadline.
//
// Why a connection of its own (both routers): a probe that shared the
// callers' connections (pipelined behind their queries, or waiting for a
// pooled connection) missed its timeout whenever the server was only busy,
// and the router took a busy primary for a dead one. And why libpq driven
// with poll() and deadlines instead of a blocking call: a hung server (a
// stopped process, a dead machine behind a live TCP handshake) must cost a
// probe its timeout, never the probing thread, and stopping the router must
// not wait for it (the wake descriptor ends every wait at once).
//
// Connects as pq/host_walk plans (one attempt per host, target_session_attrs
// kept; libpq's rule for moving on), starting from the host that answered
// last and, after a walk that found nobody, one host further: a first host
// that hangs costs one probe, not all of them. Each walk's string comes from
// the pool's connect_hooks first (before_connect's fresh password, hosts
// shuffled), so the probes log in as the pool's connections do. After a failure or a timeout
// the connection is dropped, so a probe never waits behind an earlier
// unanswered one. Not thread-safe: one thread per session.
#pragma once

#include "pq/connect_hooks.hpp"
#include "pq/host_walk.hpp"

#include <libpq-fe.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace pgpipe::detail {

class probe_session {
 public:
  using clock = std::chrono::steady_clock;

  /// `conninfo`, `hooks`: the server's pool conninfo and connect hooks
  /// (every password either gives is scrubbed from every message; the hooks
  /// run on the probing thread before each connect). `wake_fd`: a descriptor
  /// that becomes readable when the owner stops (-1: none); it is polled,
  /// never read.
  probe_session(std::string conninfo, connect_hooks hooks, int wake_fd);
  ~probe_session();
  probe_session(const probe_session&) = delete;
  probe_session& operator=(const probe_session&) = delete;

  /// Runs `sql` (simple protocol) and returns the text of its one row's
  /// columns, connecting first when needed; std::nullopt when no such answer
  /// came by `deadline` (then why() says what happened, password scrubbed).
  /// NULL columns are empty strings.
  std::optional<std::vector<std::string>> run(const char* sql, clock::time_point deadline);

  /// Why the last run() failed.
  const std::string& why() const noexcept { return why_; }

 private:
  enum class waited { ready, timed_out, woken, failed };
  waited wait_socket(bool for_write, clock::time_point deadline);
  /// Waits for the socket, then reads what arrived; false (after fail()) on
  /// a timeout, a stop or a read error.
  bool wait_and_consume(bool for_write, clock::time_point deadline);
  bool connect(clock::time_point deadline);
  /// `timed_out`: set when the attempt ran out of `deadline`.
  bool try_host(const connect_attempt& a, clock::time_point deadline, bool& timed_out);
  void drop();
  bool fail(std::string why);

  std::string conninfo_;
  connect_hooks hooks_;
  std::vector<std::string> configured_secrets_;
  std::vector<std::string> secrets_;  // configured_secrets_ and the last walk's from the hooks
  int wake_fd_;
  std::vector<connect_attempt> attempts_;
  std::size_t start_ = 0;  // the attempt the next walk starts with
  PGconn* conn_ = nullptr;
  std::string why_;
  bool stopped_ = false;  // the wake descriptor fired: every later wait ends at once too
};

}  // namespace pgpipe::detail
