// What an operation built on async_acquire (async_begin, async_stream)
// reports when the lease could not be had: the failed lease's diagnostics
// (the connect error's server text and SQLSTATE), else a message naming
// what needed the lease.
#pragma once

#include <pgpipe/async_lease.hpp>
#include <pgpipe/error.hpp>

#include <string>
#include <string_view>
#include <system_error>

namespace pgpipe::detail {

inline diagnostics acquire_failure(const async_lease& failed, const std::error_code& ec, std::string_view for_what) {
  diagnostics why = failed.diag();
  if (!why.has_server_error() && why.client_message.empty())
    why.client_message = "could not acquire a lease for " + std::string(for_what) + ": " + ec.message();
  return why;
}

}  // namespace pgpipe::detail
