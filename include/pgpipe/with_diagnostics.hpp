// pgpipe::with_diagnostics(token): a completion-token adapter that turns an
// operation's (std::error_code, T) completion into (std::exception_ptr, T),
// the exception being a pgpipe::error with the code and the server's
// diagnostics (the SQLSTATE, message, detail, hint, constraint...).
//
// Every async operation of the async driver applies it by itself when the
// token is asio::use_awaitable or asio::use_future (also when bound with
// bind_cancellation_slot, bind_executor or bind_allocator), so that
//   pgpipe::result r = co_await client.async_query("select 1", asio::use_awaitable);
// gives the result or throws pgpipe::error, and cannot lose the error.
// asio::deferred (co_awaited in a coroutine: the cheapest form, no frame per
// await), asio::as_tuple(asio::use_awaitable), redirect_error or a callback
// keep the explicit (std::error_code, T) form.
// Use it by hand for other tokens that understand std::exception_ptr, e.g.
// pgpipe::with_diagnostics(asio::deferred).
//
// Modelled on Boost.MySQL's with_diagnostics and error_with_diagnostics.
#pragma once

#include <pgpipe/error.hpp>

#include <boost/asio/associator.hpp>
#include <boost/asio/async_result.hpp>

#include <concepts>
#include <exception>
#include <system_error>
#include <type_traits>
#include <utility>

namespace pgpipe {

/// The token made by with_diagnostics(): holds the caller's token.
template <class Token>
struct with_diagnostics_t {
  Token token;  ///< The caller's token, which receives the exception_ptr form.
};

/// Wraps `token` (see the file comment). The operation's completion
/// (std::error_code, T) reaches `token` as (std::exception_ptr, T), and
/// (std::error_code) as (std::exception_ptr); the exception_ptr is null on
/// success, else it holds pgpipe::error(ec, diagnostics of the value).
template <class Token>
[[nodiscard]] with_diagnostics_t<std::decay_t<Token>> with_diagnostics(Token&& token) {
  return {std::forward<Token>(token)};
}

namespace detail {

/// The diagnostics a completion value carries: result::diag(), lease::diag(),
/// async_transaction_report::diag, async_batch_report::diag; none for the others (the
/// error then says only its code).
template <class T>
diagnostics diag_of(const T& v) {
  if constexpr (requires { { v.diag() } -> std::convertible_to<const diagnostics&>; }) {
    return v.diag();
  } else if constexpr (requires { { v.diag } -> std::convertible_to<const diagnostics&>; }) {
    return v.diag;
  } else {
    return {};
  }
}

/// Adapts a handler for (std::exception_ptr, T) to the operation's
/// (std::error_code, T). T = void: (std::exception_ptr) from (std::error_code).
template <class Handler, class T>
struct diag_handler {
  Handler handler;
  void operator()(std::error_code ec, T value) {
    std::exception_ptr e;
    if (ec) e = std::make_exception_ptr(error(ec, diag_of(value)));
    std::move(handler)(std::move(e), std::move(value));
  }
};
template <class Handler>
struct diag_handler<Handler, void> {
  Handler handler;
  void operator()(std::error_code ec) {
    std::exception_ptr e;
    if (ec) e = std::make_exception_ptr(error(ec, diagnostics{}));
    std::move(handler)(std::move(e));
  }
};

/// The operation's initiation, given the adapted handler.
template <class Initiation, class T>
struct diag_initiation {
  Initiation initiation;
  template <class Handler, class... Args>
  void operator()(Handler&& h, Args&&... args) {
    std::move(initiation)(diag_handler<std::decay_t<Handler>, T>{std::forward<Handler>(h)},
                          std::forward<Args>(args)...);
  }
};

}  // namespace detail
}  // namespace pgpipe

namespace boost::asio {

/// The adapted handler keeps the caller's executor, allocator, cancellation
/// slot and immediate executor.
template <template <class, class> class Associator, class Handler, class T, class DefaultCandidate>
struct associator<Associator, pgpipe::detail::diag_handler<Handler, T>, DefaultCandidate>
    : Associator<Handler, DefaultCandidate> {
  static typename Associator<Handler, DefaultCandidate>::type get(
      const pgpipe::detail::diag_handler<Handler, T>& h) noexcept {
    return Associator<Handler, DefaultCandidate>::get(h.handler);
  }
  static auto get(const pgpipe::detail::diag_handler<Handler, T>& h, const DefaultCandidate& c) noexcept
      -> decltype(Associator<Handler, DefaultCandidate>::get(h.handler, c)) {
    return Associator<Handler, DefaultCandidate>::get(h.handler, c);
  }
};

/// Starts an operation completing with (std::error_code, T) on a
/// with_diagnostics() token: the caller's token gets (std::exception_ptr, T).
template <class Token, class T>
struct async_result<pgpipe::with_diagnostics_t<Token>, void(std::error_code, T)> {
  /// Wraps the handler the caller's token makes so that an error becomes a pgpipe::error.
  template <class Initiation, class RawToken, class... Args>
  static auto initiate(Initiation&& initiation, RawToken&& token, Args&&... args) {
    return async_initiate<decltype((token.token)), void(std::exception_ptr, T)>(
        pgpipe::detail::diag_initiation<std::decay_t<Initiation>, T>{std::forward<Initiation>(initiation)},
        token.token, std::forward<Args>(args)...);
  }
};

/// Starts an operation completing with (std::error_code) on a
/// with_diagnostics() token: the caller's token gets (std::exception_ptr).
template <class Token>
struct async_result<pgpipe::with_diagnostics_t<Token>, void(std::error_code)> {
  /// Wraps the handler the caller's token makes so that an error becomes a pgpipe::error.
  template <class Initiation, class RawToken, class... Args>
  static auto initiate(Initiation&& initiation, RawToken&& token, Args&&... args) {
    return async_initiate<decltype((token.token)), void(std::exception_ptr)>(
        pgpipe::detail::diag_initiation<std::decay_t<Initiation>, void>{std::forward<Initiation>(initiation)},
        token.token, std::forward<Args>(args)...);
  }
};

}  // namespace boost::asio
