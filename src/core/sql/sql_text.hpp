// sql_text: what a text both drivers hand to libpq as SQL must satisfy
// before anything is sent.
//
// Why: libpq takes statement text as a C string (PQprepare,
// PQsendQueryParams, PQsendQuery, PQexec), so a NUL byte ends the statement
// there and the rest is dropped without a word: `delete from t where id = 1
// \0 and false` would run as `delete from t where id = 1`. Parameter values
// have their own check (traits_dispatch.hpp, check_params); this one is for
// the text. Each driver calls it where every caller's text passes on its way
// to libpq (async: pipelined_connection's enqueue; blocking:
// blocking_lease::exec_encoded), and the checks for COPY, scripts and
// listener channels start with it, so no entry point can skip it.
#pragma once

#include <string>
#include <string_view>

namespace pgpipe::detail {

/// Empty when `text` can go to libpq whole; otherwise the message of
/// errc::invalid_argument, naming `what` ("SQL text", "channel name") and
/// the offset of the first NUL byte.
std::string nul_byte_refusal(std::string_view text, std::string_view what = "SQL text");

}  // namespace pgpipe::detail
