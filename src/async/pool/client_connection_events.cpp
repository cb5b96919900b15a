// client_impl as its connections' connection_owner: what a connection
// reports (connected, failed, broken, capacity back, lease returned, gone)
// goes to pool_core, whose answers collect_locked turns into work.
#include "async/pool/client_impl.hpp"

#include "pq/libpq_failure.hpp"

#include <mutex>

namespace pgpipe::detail {

void client_impl::conn_connected(slot_id slot) {
  todo t;
  {
    std::lock_guard lk(mu_);
    core_.on_open_succeeded(pool_clock::now(), slot);
    collect_locked(t, true);
  }
  run(t);
}

void client_impl::conn_connect_failed(slot_id slot, std::error_code ec, const std::string& message) {
  todo t;
  {
    std::lock_guard lk(mu_);
    // The server's part (severity, text, SQLSTATE) for every request this
    // failure fails; `message` is already scrubbed of secrets.
    actions_.connect_failed(slot, message);
    // The job's code decides, with libpq's words for what the code cannot
    // say (an unknown host shares server_unreachable with a refused port).
    core_.on_open_failed(pool_clock::now(), slot, ec, kind_of_connect_failure(ec, message));
    collect_locked(t, true);
  }
  run(t);
}

void client_impl::conn_broken(slot_id slot, const std::string&) {
  todo t;
  {
    std::lock_guard lk(mu_);
    core_.on_broken(pool_clock::now(), slot);
    collect_locked(t, true);
  }
  run(t);
}

void client_impl::conn_release(slot_id slot, std::size_t units) {
  todo t;
  {
    std::lock_guard lk(mu_);
    const auto now = pool_clock::now();
    core_.release(now, slot, request_kind::shared, units);
    // A connection going idle starts its idle/health-check clocks.
    collect_locked(t, core_.load_of(slot) == 0);
  }
  run(t);
}

void client_impl::conn_check_done(slot_id slot, bool healthy) {
  todo t;
  {
    std::lock_guard lk(mu_);
    core_.on_check_done(pool_clock::now(), slot, healthy);
    collect_locked(t, true);
  }
  run(t);
}

void client_impl::retire_after_lease(slot_id slot) {
  std::lock_guard lk(mu_);
  retire_on_return_.insert(slot);
}

void client_impl::conn_lease_returned(slot_id slot) {
  todo t;
  {
    std::lock_guard lk(mu_);
    if (retire_on_return_.erase(slot) != 0) {
      // The lease changed the session: close it (pool_core opens a
      // replacement, which runs pool_params::on_connect afresh).
      core_.on_broken(pool_clock::now(), slot);
    } else {
      core_.release(pool_clock::now(), slot, request_kind::exclusive);
    }
    collect_locked(t, true);
  }
  run(t);
}

void client_impl::conn_finished(slot_id slot) {
  todo t;
  {
    std::lock_guard lk(mu_);
    actions_.forget(slot);
    collect_locked(t, false);
  }
  run(t);
}

}  // namespace pgpipe::detail
