// Which drivers this binary has. The CMake file defines PGPIPE_BENCH_HAVE_*
// for each driver whose library layer is built, so the bench keeps building
// (and pgbench keeps running) while a layer is absent.
#include "driver.hpp"

namespace pgpipe::bench {

std::vector<std::string> in_process_drivers() {
  std::vector<std::string> out;
#ifdef PGPIPE_BENCH_HAVE_ASYNC
  out.push_back("async");
  out.push_back("coroutine");
#endif
#ifdef PGPIPE_BENCH_HAVE_BLOCKING
  out.push_back("blocking");
  out.push_back("blocking-threads");
#endif
  return out;
}

std::unique_ptr<driver> make_driver(const std::string& name, [[maybe_unused]] const driver_params& p) {
#ifdef PGPIPE_BENCH_HAVE_ASYNC
  if (name == "async") return make_async_driver(p);
  if (name == "coroutine") return make_coroutine_driver(p);
#endif
#ifdef PGPIPE_BENCH_HAVE_BLOCKING
  if (name == "blocking") return make_blocking_driver(p);
  if (name == "blocking-threads") return make_blocking_threads_driver(p);
#endif
  (void)name;
  return nullptr;
}

}  // namespace pgpipe::bench
