// The blocking pool's housekeeper: one thread that drives pool_core's
// deadlines (waiters' timeouts, idle and lifetime limits, health checks,
// connect back-off), waking at next_timer() or when apply_actions says
// pool_core wants an earlier tick.
#include "blocking/pool/blocking_pool_impl.hpp"

namespace pgpipe::detail {

void blocking_pool_impl::housekeeping_loop() {
  std::unique_lock lk(mu);
  while (!stopping) {
    hk_wake = core.next_timer();
    if (hk_wake) {
      hk_cv.wait_until(lk, *hk_wake);
    } else {
      hk_cv.wait(lk);
    }
    if (stopping) break;
    const auto now = pool_clock::now();
    if (auto t = core.next_timer(); t && *t <= now) {
      core.on_tick(now);
      apply_actions();
      bury(lk);
      lk.lock();
    }
  }
  hk_wake.reset();
}

}  // namespace pgpipe::detail
