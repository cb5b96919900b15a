// blocking_lease: a borrowed connection (include/pgpipe/blocking_lease.hpp).
// Its destructor gives the connection back through blocking_pool_impl, which
// rolls back or replaces it (src/blocking/pool/).
#include <pgpipe/blocking_lease.hpp>

#include <pgpipe/blocking_pool.hpp>
#include <pgpipe/blocking_read_router.hpp>

#include "blocking/pool/blocking_pool_impl.hpp"
#include "blocking/connection/pooled_connection.hpp"
#include "core/statements/statement_cache.hpp"
#include "pq/libpq_failure.hpp"

#include <exception>
#include <string>
#include <utility>

namespace pgpipe {

blocking_lease::blocking_lease(std::shared_ptr<detail::blocking_pool_impl> pool, std::uint64_t slot,
                               detail::pooled_connection* conn) noexcept
    : pool_(std::move(pool)), slot_(slot), conn_(conn) {}

blocking_lease::blocking_lease(blocking_lease&& other) noexcept
    : pool_(std::move(other.pool_)),
      slot_(other.slot_),
      conn_(std::exchange(other.conn_, nullptr)),
      broken_(std::exchange(other.broken_, false)) {}

blocking_lease& blocking_lease::operator=(blocking_lease&& other) noexcept {
  if (this != &other) {
    release();
    pool_ = std::move(other.pool_);
    slot_ = other.slot_;
    conn_ = std::exchange(other.conn_, nullptr);
    broken_ = std::exchange(other.broken_, false);
  }
  return *this;
}

blocking_lease::~blocking_lease() { release(); }

blocking_lease::connection_type& blocking_lease::operator*() const noexcept { return conn_->pqxx_conn(); }
blocking_lease::connection_type* blocking_lease::operator->() const noexcept { return &conn_->pqxx_conn(); }

void blocking_lease::release() noexcept {
  if (conn_ == nullptr) return;
  auto pool = std::move(pool_);
  auto* conn = std::exchange(conn_, nullptr);
  const bool broken = std::exchange(broken_, false) || !conn->pqxx_conn().is_open();
  pool->give_back(slot_, conn, broken);
}

const std::string* blocking_lease::statement_for(std::string_view sql) {
  // One cap for both drivers; the public constant documents it.
  static_assert(max_prepared_per_connection == detail::default_statement_capacity);
  return conn_->statement_for(sql);
}

void blocking_lease::discard() noexcept {
  if (conn_ == nullptr) return;
  broken_ = true;
  release();
}

void blocking_lease::note_outcome(const std::error_code& ec) noexcept {
  if (!pool_) return;
  // An attempt a read router runs again is not a query its caller sees.
  if (ec) {
    if (auto* routed = detail::routed_blocking_read::current(); routed != nullptr && routed->reruns(ec)) return;
  }
  pool_->metrics.count_completed(ec);
}

void blocking_lease::note_error(const std::error_code& ec) noexcept {
  if (!pool_) return;
  // An attempt a read router runs again is not an error its caller sees.
  if (auto* routed = detail::routed_blocking_read::current(); routed != nullptr && routed->reruns(ec)) return;
  pool_->metrics.count_error(ec);
}

}  // namespace pgpipe
