// The in-process drivers this binary runs (pgbench runs as a child process).
#include "driver.hpp"

namespace pgpipe::bench {

std::vector<std::string> in_process_drivers() {
  return {"async", "coroutine", "blocking", "blocking-threads", "async-coalesced", "async-pipelined",
          "async-pipelined-lease"};
}

std::unique_ptr<driver> make_driver(const std::string& name, const driver_params& p) {
  if (p.work.tpcb) {
    if (name == "async") return make_tpcb_async_driver(p, tpcb_mode::awaited);
    if (name == "async-pipelined") return make_tpcb_async_driver(p, tpcb_mode::batch);
    if (name == "async-pipelined-lease") return make_tpcb_async_driver(p, tpcb_mode::batch_on_lease);
    if (name == "coroutine") return make_tpcb_async_driver(p, tpcb_mode::by_hand);
    if (name == "blocking") return make_tpcb_blocking_driver(p);
    return nullptr;
  }
  if (name == "async") return make_async_driver(p);
  if (name == "async-coalesced") {
    auto q = p;
    q.read_only = true;
    return make_async_driver(q);
  }
  if (name == "coroutine") return make_coroutine_driver(p);
  if (name == "blocking") return make_blocking_driver(p);
  if (name == "blocking-threads") return make_blocking_threads_driver(p);
  return nullptr;
}

}  // namespace pgpipe::bench
