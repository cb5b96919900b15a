// blocking_pool: the facade (include/pgpipe/blocking_pool.hpp) over
// blocking_pool_impl (src/blocking/pool/), which drives pool_core.
#include <pgpipe/blocking_pool.hpp>

#include "blocking/pool/blocking_pool_impl.hpp"

#include <utility>

#if defined(__SANITIZE_ADDRESS__)
// libpqxx 6.4 leaks the PGresult of a statement during which the connection
// died: connection_base::make_result() asks for the client encoding, which
// throws broken_connection on a dead connection, before it owns the result
// (libpqxx 7 fixed the order). A pool that survives connection loss meets this
// on every lost connection, and LeakSanitizer would fail the fault tests for
// a leak that is not ours. Only ASan builds carry this hook (it lives in this
// file so that every program using blocking_pool links it).
extern "C" const char* __lsan_default_suppressions() {
  return "leak:pqxx::connection_base::exec\n"
         "leak:pqxx::connection_base::register_prepared\n";
}
#endif

namespace pgpipe {

blocking_pool::blocking_pool(pool_params params) : blocking_pool(std::move(params), logger_fn{}) {}

blocking_pool::blocking_pool(pool_params params, logger_fn logger)
    : impl_(std::make_shared<detail::blocking_pool_impl>(std::move(params), std::move(logger))) {
  impl_->start();
}

blocking_pool::~blocking_pool() { impl_->shutdown(); }

blocking_lease blocking_pool::acquire() { return impl_->acquire(impl_->params.acquire_timeout); }

blocking_lease blocking_pool::acquire(std::chrono::milliseconds timeout) { return impl_->acquire(timeout); }

void blocking_pool::close() { impl_->close(); }

void blocking_pool::set_logger(logger_fn logger) { impl_->metrics.set_logger(std::move(logger)); }

pool_stats blocking_pool::stats() const { return impl_->stats(); }

const pool_params& blocking_pool::params() const noexcept { return impl_->params; }

}  // namespace pgpipe
