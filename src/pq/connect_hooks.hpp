// connect_hooks: what both drivers do to the connection string before each
// connection attempt: pool_params::before_connect (a fresh password or host
// per connect) and pool_params::load_balance_hosts (hosts in random order).
//
// Why here and not in libpq: libpq 15 has neither (load_balance_hosts came
// in libpq 16), and a pool must run a credential callback off its event
// loops, once per connect, with the password it returns scrubbed like the
// configured one.
#pragma once

#include <pgpipe/pool_params.hpp>

#include <chrono>
#include <functional>
#include <random>
#include <string>
#include <system_error>
#include <vector>

namespace pgpipe::detail {

/// The pool's settings that change a connect's string.
struct connect_hooks {
  std::function<std::string(const std::string&)> before_connect;
  load_balance load_balance_hosts = load_balance::disable;
};

connect_hooks connect_hooks_of(const pool_params& params);

/// One connect's string and the password spellings to scrub from its errors.
struct connect_target {
  std::string conninfo;
  std::vector<std::string> secrets;
  /// Set when before_connect threw: the connect fails with this (no attempt made).
  std::error_code ec;
  std::string error_message;
};

/// Runs `hooks` on `conninfo` (the pool's; `secrets` its passwords). Call
/// off the event loops: before_connect may block. Its exception becomes
/// errc::connect_failed, its message prefixed with "pool_params::before_connect failed: ".
connect_target prepare_connect(const connect_hooks& hooks, const std::string& conninfo,
                               const std::vector<std::string>& secrets);

/// prepare_connect on a thread of its own (detached), where before_connect
/// may block, even on an event loop that the caller's thread runs; `done` is
/// called on that thread with the outcome (it must not throw). When no thread
/// can be started, `done` is called at once with errc::connect_failed.
/// The thread owns copies of everything: an owner that stops waiting for it
/// (connect_timeout) may go away while before_connect still runs.
void prepare_connect_off_thread(connect_hooks hooks, std::string conninfo, std::vector<std::string> secrets,
                                std::function<void(connect_target)> done);

/// prepare_connect, with before_connect (when set) run by
/// prepare_connect_off_thread and waited for at most `timeout`: a call that
/// has not returned by then fails the attempt with errc::connect_failed
/// (before_connect_timeout_text). When `wake_fd` (>= 0) becomes readable
/// first, the wait ends at once with errc::connect_failed ("stopped"), so an
/// owner shutting down never waits for the callback. For threads that may block.
connect_target prepare_connect_within(const connect_hooks& hooks, const std::string& conninfo,
                                      const std::vector<std::string>& secrets, std::chrono::milliseconds timeout,
                                      int wake_fd = -1);

/// The message of a connect attempt whose before_connect did not return in time.
std::string before_connect_timeout_text(std::chrono::milliseconds timeout);

/// `conninfo` (key=value or URI) with its hosts in random order, each host
/// keeping its hostaddr and port; unchanged when it names at most one host
/// or does not parse (libpq's own error then says why). Returned as
/// key=value.
std::string with_hosts_shuffled(const std::string& conninfo, std::mt19937_64& rng);

}  // namespace pgpipe::detail
