// Helpers for suites that drive the async client (see kit.hpp for the
// driver-neutral ones).
#pragma once

#include <pgpipe/async_client.hpp>

#include <boost/asio/use_future.hpp>

#include <system_error>
#include <utility>

namespace pgpipe::test {

/// A lease from `c`, waited for on the calling thread; throws the acquire error.
inline pgpipe::lease acquire(pgpipe::async_client& c) {
  auto [ec, l] = c.async_acquire(boost::asio::use_future).get();
  if (ec) throw std::system_error(ec);
  return std::move(l);
}

}  // namespace pgpipe::test
