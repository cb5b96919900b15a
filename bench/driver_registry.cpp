// The in-process drivers this binary runs (pgbench runs as a child process).
#include "driver.hpp"

namespace pgpipe::bench {

std::vector<std::string> in_process_drivers() {
  return {"async", "coroutine", "blocking", "blocking-threads", "async-coalesced"};
}

std::unique_ptr<driver> make_driver(const std::string& name, const driver_params& p) {
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
