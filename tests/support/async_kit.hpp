// Helpers for suites that drive the async client (see kit.hpp for the
// driver-neutral ones).
#pragma once

#include <pgpipe/async_client.hpp>

#include "support/use_future_ec.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_future.hpp>

#include <future>
#include <memory>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>


namespace pgpipe::test {

/// Runs `coro` on `c`'s loop and waits for it on the calling thread: its
/// value, or the exception it threw (rethrown here).
template <class Awaitable>
auto run_on(pgpipe::async_client& c, Awaitable coro) {
  return boost::asio::co_spawn(c.get_executor(), std::move(coro), boost::asio::use_future).get();
}

/// A lease from `c`, waited for on the calling thread; throws the acquire error.
inline pgpipe::async_lease acquire(pgpipe::async_client& c) {
  auto [ec, l] = c.async_acquire(use_future_ec).get();
  if (ec) throw std::system_error(ec);
  return std::move(l);
}

}  // namespace pgpipe::test
