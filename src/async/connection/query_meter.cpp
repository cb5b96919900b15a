// query_meter: see query_meter.hpp.
#include "async/connection/query_meter.hpp"

#include <atomic>

namespace pgpipe::detail {

namespace {

std::uint64_t rows_of(const result& r) {
  if (r.failed()) return 0;  // a failed result throws when read
  return r.size() != 0 ? r.size() : r.affected_rows();
}

}  // namespace

observed_query observed_of(const query_request& req, bool rerun) noexcept {
  return {req.spec.sql, req.on_lease, req.submitted, req.waited, req.called(), req.spec.attempt, rerun};
}

void observe_request_start(query_observer& obs, query_request& req, std::uint64_t slot, int backend_pid) noexcept {
  if (req.completed.load(std::memory_order_acquire)) return;
  // observe_start drops what the observer throws: nothing of it may reach a
  // connection's read loop.
  req.start_seen = observe_start(obs, observed_of(req), slot, backend_pid, pool_clock::now());
}

bool end_query(query_metrics& m, const query_request& req, const std::error_code& ec, const result& r,
               time_point now) {
  const bool rerun = req.reruns(ec);
  if (!rerun) m.record_query(now - req.called());
  if (query_observer* obs = m.observer()) {
    observe_end(*obs, observed_of(req, rerun), req.start_seen ? &*req.start_seen : nullptr, ec, r.diag().sqlstate,
                ec ? 0 : rows_of(r), now);
  }
  return !rerun;
}

void meter_completed(query_request& req, const std::error_code& ec, const result& r) {
  if (req.metrics == nullptr || req.completed.load(std::memory_order_acquire)) return;
  if (end_query(*req.metrics, req, ec, r, pool_clock::now())) req.metrics->count_completed(ec);
}

}  // namespace pgpipe::detail
