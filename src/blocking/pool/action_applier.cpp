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
        case pool_action::kind::open: {
          auto& e = slots[a.slot];
          e.close_pending = false;
          io_queue.push_back({io_kind::open, a.slot});
          break;
        }
        case pool_action::kind::check: {
          auto it = slots.find(a.slot);
          if (it == slots.end() || !it->second.conn) break;
          it->second.checking = true;
          io_queue.push_back({io_kind::check, a.slot});
          break;
        }
        case pool_action::kind::close: {
          auto it = slots.find(a.slot);
          if (it == slots.end()) break;
          auto& e = it->second;
          if (e.leased || e.checking || !e.conn) {
            e.close_pending = true;  // whoever holds it closes it when done
          } else {
            retire(a.slot, e);
            slots.erase(it);
          }
          break;
        }
        case pool_action::kind::grant: {
          auto w = waiters.find(a.waiter);
          if (w == waiters.end()) {
            // Nobody waits under that id (cannot happen while waiters
            // register under the same lock as request()): give it back
            // rather than leak the capacity.
            core.release(pool_clock::now(), a.slot, request_kind::exclusive);
            break;
          }
          slots[a.slot].leased = true;
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
