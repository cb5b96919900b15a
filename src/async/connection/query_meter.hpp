// query_meter: a caller's query as stats() and the query observer see it end.
// The meter is wired into the request when it is built (query_request::metrics),
// so whoever completes the request counts it there, without reaching back
// into the pool: the connection completes hundreds of queries per batch.
#pragma once

#include "async/connection/request.hpp"
#include "core/metrics/query_metrics.hpp"

#include <system_error>

namespace pgpipe::detail {

/// What the observer hooks see of `req`; `rerun`: a read router runs it again.
observed_query observed_of(const query_request& req, bool rerun = false) noexcept;

/// `req` reached its connection (`slot`, `backend_pid`): tells `obs`
/// (on_start) and keeps what it returned in req.start_seen. Nothing for a
/// request completed on its way (cancelled: the connection drops it). On
/// the connection's executor.
void observe_request_start(query_observer& obs, query_request& req, std::uint64_t slot, int backend_pid) noexcept;

/// A query ended with (ec, r) at `now`: its duration, then the observer (rows
/// are read only for one). False for a failed attempt that a read router runs
/// again: the caller never sees it, so it is not timed and the caller counts
/// nothing for it either.
bool end_query(query_metrics& m, const query_request& req, const std::error_code& ec, const result& r,
               time_point now);

/// A request that reached a connection ended: end_query, then
/// stats().completed and its error kind. Nothing for a request without a
/// meter (internal ones) or already completed by someone else.
void meter_completed(query_request& req, const std::error_code& ec, const result& r);

}  // namespace pgpipe::detail
