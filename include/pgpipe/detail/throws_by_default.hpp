// throws_by_default: which completion tokens get a failure as an exception
// (pgpipe::error with the diagnostics) instead of an error code. Shared by
// both drivers' asynchronous operations (async_glue.hpp, blocking_executor.hpp).
#pragma once

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <type_traits>

namespace pgpipe::detail {

/// Tokens whose completion is a value or an exception: asio::use_awaitable
/// and asio::use_future, also under the binders that keep a token's kind.
/// The operations give them with_diagnostics() by themselves, so that a
/// failed operation throws pgpipe::error instead of yielding an error code
/// that is easy to ignore.
template <class Token>
struct throws_by_default : std::false_type {};
template <class Executor>
struct throws_by_default<boost::asio::use_awaitable_t<Executor>> : std::true_type {};
template <class Allocator>
struct throws_by_default<boost::asio::use_future_t<Allocator>> : std::true_type {};
template <class Token, class Slot>
struct throws_by_default<boost::asio::cancellation_slot_binder<Token, Slot>> : throws_by_default<Token> {};
template <class Token, class Executor>
struct throws_by_default<boost::asio::executor_binder<Token, Executor>> : throws_by_default<Token> {};
template <class Token, class Allocator>
struct throws_by_default<boost::asio::allocator_binder<Token, Allocator>> : throws_by_default<Token> {};

}  // namespace pgpipe::detail
