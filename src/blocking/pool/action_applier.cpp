// The blocking pool's action applier: carries out what pool_core asked for
// (open, check and close connections, grant or fail waiters). Called with the
// mutex held after every call into pool_core; connects and checks go to the
// connector threads, closes to the graveyard, grants and failures wake the
// waiting thread.
#include "blocking/pool/blocking_pool_impl.hpp"

namespace pgpipe::detail {

void blocking_pool_impl::apply_actions() {
  for (;;) {
    auto actions = core.take_actions();
    if (actions.empty()) break;
    for (auto& a : actions) {
      switch (a.what) {
        case pool_action::kind::open:
          slots.open(a.slot);
          io_queue.push_back({io_kind::open, a.slot});
          break;
        case pool_action::kind::check:
          if (slots.check(a.slot)) io_queue.push_back({io_kind::check, a.slot});
          break;
        case pool_action::kind::close:
          // A held slot is closed by its holder when done (slot_book rule 1).
          if (auto r = slots.close(a.slot)) retire(std::move(*r));
          break;
        case pool_action::kind::grant: {
          auto w = waiters.find(a.waiter);
          if (w == waiters.end()) {
            // Nobody waits under that id (cannot happen while waiters
            // register under the same lock as request()): give it back
            // rather than leak the capacity.
            core.release(pool_clock::now(), a.slot, request_kind::exclusive);
            break;
          }
          slots.lease(a.slot);
          w->second->slot = a.slot;
          w->second->done = true;
          w->second->cv.notify_one();
          waiters.erase(w);
          break;
        }
        case pool_action::kind::fail: {
          auto w = waiters.find(a.waiter);
          if (w == waiters.end()) break;
          w->second->ec = a.ec;
          w->second->done = true;
          w->second->cv.notify_one();
          waiters.erase(w);
          break;
        }
      }
    }
  }
  start_connectors();
  // Wake the housekeeper when pool_core wants a tick earlier than the
  // housekeeper planned to wake.
  if (auto t = core.next_timer(); t && (!hk_wake || *t < *hk_wake)) hk_cv.notify_one();
}

}  // namespace pgpipe::detail
