// probe_session: see probe_session.hpp.
#include "pq/probe_session.hpp"

#include "pq/libpq_failure.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>

namespace pgpipe::detail {

namespace {

struct result_deleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using result_ptr = std::unique_ptr<PGresult, result_deleter>;

int poll_timeout_ms(probe_session::clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - probe_session::clock::now()).count();
  if (left <= 0) return 0;
  // Rounded up so a wait never ends just short of its deadline and spins.
  return left > 60'000 ? 60'000 : static_cast<int>(left) + 1;
}

}  // namespace

probe_session::probe_session(std::string conninfo, connect_hooks hooks, int wake_fd)
    : conninfo_(std::move(conninfo)),
      hooks_(std::move(hooks)),
      configured_secrets_(passwords_of(conninfo_)),
      secrets_(configured_secrets_),
      wake_fd_(wake_fd) {
  // Without hooks every walk's plan is the same: made once.
  if (!hooks_.before_connect && hooks_.load_balance_hosts == load_balance::disable)
    attempts_ = plan_host_walk(conninfo_, "pgpipe-probe");
}

probe_session::~probe_session() { drop(); }

void probe_session::drop() {
  // Nonblocking by then (or not yet connected): PQfinish's Terminate message
  // never waits for a hung peer.
  if (conn_) PQfinish(conn_);
  conn_ = nullptr;
}

bool probe_session::fail(std::string why) {
  why_ = clean_message(why, secrets_);
  drop();
  return false;
}

probe_session::waited probe_session::wait_socket(bool for_write, clock::time_point deadline) {
  const int fd = PQsocket(conn_);
  if (fd < 0) return waited::failed;
  for (;;) {
    pollfd fds[2] = {{fd, static_cast<short>(for_write ? POLLOUT : POLLIN), 0}, {wake_fd_, POLLIN, 0}};
    const int n = ::poll(fds, wake_fd_ >= 0 ? 2 : 1, poll_timeout_ms(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return waited::failed;
    if (wake_fd_ >= 0 && (fds[1].revents & POLLIN)) {
      stopped_ = true;
      return waited::woken;
    }
    if (n == 0) return clock::now() >= deadline ? waited::timed_out : waited::ready;
    return waited::ready;  // readable, writable, or an error libpq will report
  }
}

bool probe_session::try_host(const connect_attempt& a, clock::time_point deadline, bool& timed_out) {
  timed_out = false;
  conn_ = start_connect(a);
  if (!conn_) return fail("out of memory starting a connection");
  if (PQstatus(conn_) == CONNECTION_BAD) return fail(PQerrorMessage(conn_));
  // libpq: after PQconnectStart, act as if PQconnectPoll returned WRITING.
  PostgresPollingStatusType st = PGRES_POLLING_WRITING;
  for (;;) {
    switch (wait_socket(st == PGRES_POLLING_WRITING, deadline)) {
      case waited::timed_out: timed_out = true; return fail("no answer within the probe timeout while connecting");
      case waited::woken: return fail("stopped");
      case waited::failed: return fail("waiting for the socket failed while connecting");
      case waited::ready: break;
    }
    st = PQconnectPoll(conn_);
    if (st == PGRES_POLLING_OK) break;
    if (st == PGRES_POLLING_FAILED) return fail(PQerrorMessage(conn_));
  }
  if (PQsetnonblocking(conn_, 1) != 0) return fail(PQerrorMessage(conn_));
  return true;
}

bool probe_session::connect(clock::time_point deadline) {
  if (hooks_.before_connect || hooks_.load_balance_hosts != load_balance::disable) {
    // before_connect may block: bounded by the probe's deadline, and a stop
    // (wake_fd) ends the wait at once.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock::now());
    connect_target t = prepare_connect_within(hooks_, conninfo_, configured_secrets_,
                                              std::max(left, std::chrono::milliseconds(0)), wake_fd_);
    if (t.ec && t.error_message == "stopped") stopped_ = true;
    secrets_ = std::move(t.secrets);
    if (t.ec) return fail(std::move(t.error_message));
    attempts_ = plan_host_walk(t.conninfo, "pgpipe-probe");
  }
  if (attempts_.empty()) return fail("no host to connect to");
  host_walk walk(attempts_, start_);
  for (;;) {
    bool timed_out = false;
    if (try_host(walk.current(), deadline, timed_out)) {
      start_ = walk.current_index();
      return true;
    }
    walk_step next = walk.on_attempt_failed(why_, false, timed_out);
    if (next.try_next && (clock::now() >= deadline || stopped_)) next = walk.give_up();
    if (!next.try_next) {
      why_ = std::move(next.message);
      break;
    }
  }
  // Nobody answered: the next walk starts one host further, so a host that
  // hangs does not take every probe's whole timeout.
  start_ = (start_ + 1) % attempts_.size();
  return false;
}

bool probe_session::wait_and_consume(bool for_write, clock::time_point deadline) {
  const waited w = wait_socket(for_write, deadline);
  if (w != waited::ready) return fail(w == waited::timed_out ? "no answer within the probe timeout" : "stopped");
  if (PQconsumeInput(conn_) != 1) return fail(PQerrorMessage(conn_));
  return true;
}

std::optional<std::vector<std::string>> probe_session::run(const char* sql, clock::time_point deadline) {
  why_.clear();
  if (!conn_ && !connect(deadline)) return std::nullopt;
  if (PQsendQuery(conn_, sql) != 1) {
    fail(PQerrorMessage(conn_));
    return std::nullopt;
  }
  // Flush by libpq's rule: while it has output left, wait for either
  // direction and consume input meanwhile.
  for (;;) {
    const int f = PQflush(conn_);
    if (f == 0) break;
    if (f < 0) {
      fail(PQerrorMessage(conn_));
      return std::nullopt;
    }
    if (!wait_and_consume(true, deadline)) return std::nullopt;
  }
  std::optional<std::vector<std::string>> row;
  std::string error;
  for (;;) {
    while (PQisBusy(conn_)) {
      if (!wait_and_consume(false, deadline)) return std::nullopt;
    }
    result_ptr r(PQgetResult(conn_));
    if (!r) break;
    if (PQresultStatus(r.get()) == PGRES_TUPLES_OK && PQntuples(r.get()) == 1 && !row) {
      std::vector<std::string> values;
      for (int c = 0; c < PQnfields(r.get()); ++c) values.emplace_back(PQgetvalue(r.get(), 0, c));
      row = std::move(values);
    } else if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) {
      error = PQresultErrorMessage(r.get());
    } else {
      error = "the probe did not answer one row";
    }
  }
  if (PQstatus(conn_) == CONNECTION_BAD) {
    fail(error.empty() ? std::string(PQerrorMessage(conn_)) : error);
    return std::nullopt;
  }
  if (!row) {
    why_ = clean_message(error.empty() ? "the probe did not answer one row" : error, secrets_);
    return std::nullopt;
  }
  return row;
}

}  // namespace pgpipe::detail
