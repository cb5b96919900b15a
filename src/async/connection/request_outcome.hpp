// request_outcome: what a caller receives for each pipeline_core outcome:
// the error code, and either the server's result (kept by the connection)
// or pgpipe's own message. One place, so the texts stay consistent.
#pragma once

#include "async/sansio/pipeline_core.hpp"
#include "async/connection/request.hpp"

#include <string>
#include <system_error>
#include <utility>

namespace pgpipe::detail {

/// Moves the stored result out of `req` when the outcome carries it.
/// `break_reason` explains connection_lost / not_sent.
std::pair<std::error_code, result> outcome_result(pipe_outcome o, query_request& req, const std::string& break_reason);

}  // namespace pgpipe::detail
