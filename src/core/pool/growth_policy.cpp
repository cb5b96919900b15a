// growth_policy: see growth_policy.hpp for the contract.
//
// Policy (the pool_core tests and growth_policy_test.cpp pin each one):
//  - Growth: a request that finds no idle slot opens one more connection
//    (one growth connect in flight at a time while nothing is usable), even
//    when it was granted on a busy slot, so the pool grows toward max_size
//    under load (HikariCP-like). Queued waiters open as many connects as they
//    need (exclusive waiters one each, shared ones one per capacity_per_slot).
//    min_size is kept. open + opening + draining + checking slots never
//    exceed max_size.
//  - Paced growth (pool_params::growth_connects, growth_interval): while a
//    slot is usable, connects beyond the min_size deficit (on-demand growth,
//    queued demand) start only while fewer than growth_connects are
//    connecting and growth_interval has passed since the last paced start;
//    queued demand that the pace holds back is retried from next_timer. The
//    min_size deficit, and everything while no slot is usable (startup,
//    recovery), is opened at once: nothing is serving that pacing could
//    protect; so is what queued callers need when the first connect after an
//    outage succeeds. Back-off mode (one probe at a time) takes precedence.
//  - Connect failures: back-off starts at connect_backoff_initial, doubles on
//    each failed retry (attempts already in flight when the outage began do
//    not double it), caps at connect_backoff_max, resets on any success.
//    While failing, at most one attempt is in flight (no storm against a
//    down server), started from on_tick/next_timer once the back-off elapsed.
#include "core/pool/growth_policy.hpp"

#include <pgpipe/error.hpp>

#include <algorithm>

namespace pgpipe::detail {

growth_policy::growth_policy(const pool_params& params, std::size_t capacity_per_slot)
    : min_size_(params.min_size),
      max_size_(params.max_size),
      growth_connects_(params.growth_connects),
      growth_interval_(params.growth_interval),
      backoff_initial_(params.connect_backoff_initial),
      backoff_max_(params.connect_backoff_max),
      capacity_(capacity_per_slot) {}

std::size_t growth_policy::open_wanted(time_point now, const pool_shape& shape, std::size_t want, bool burst) {
  if (failing_) {
    // Back-off mode: one probe at a time, and only once the back-off elapsed.
    return shape.connecting > 0 || now < retry_at_ ? 0 : 1;
  }
  const std::size_t at_once = burst ? want : unpaced(shape);
  std::size_t opens = at_once;
  for (want -= at_once; want > 0 && pace_allows(now, shape.connecting + opens); --want) {
    ++opens;
    paced_at_ = now + growth_interval_;
  }
  return opens;
}

// One more connect, paced, so a burst does not open max_size connections in
// a microsecond. With nothing usable, one growth connect at a time.
bool growth_policy::open_on_demand(time_point now, const pool_shape& shape) {
  if (failing_ || room(shape) == 0) return false;
  if (shape.usable == 0) return shape.connecting == 0;
  if (!pace_allows(now, shape.connecting)) return false;
  paced_at_ = now + growth_interval_;
  return true;
}

std::optional<time_point> growth_policy::next_timer(const pool_shape& shape) const {
  if (failing_) {
    // The next probe, once the back-off elapsed; none while one is in flight.
    if (shape.connecting == 0 && wanted(shape) > 0) return retry_at_;
    return std::nullopt;
  }
  // Queued demand held back by the pace.
  if (shape.usable == 0) return std::nullopt;
  if (shape.connecting >= growth_connects_) return std::nullopt;  // an answer comes first
  if (wanted(shape) <= unpaced(shape)) return std::nullopt;
  return paced_at_;
}

bool growth_policy::connect_succeeded() noexcept {
  const bool recovered = failing_;
  failing_ = false;
  backoff_ = std::chrono::milliseconds{0};
  last_error_.clear();
  return recovered;
}

void growth_policy::connect_failed(time_point now, std::error_code ec, bool probe) {
  last_error_ = ec ? ec : make_error_code(errc::connect_failed);
  if (!failing_) {
    failing_ = true;
    backoff_ = backoff_initial_;
  } else if (probe) {
    // Only a probe failing doubles the back-off: attempts already in flight
    // when the failures began are the same outage, not a further one.
    backoff_ = std::min(backoff_ * 2, backoff_max_);
  }
  retry_at_ = now + backoff_;
}

}  // namespace pgpipe::detail
