// pgpipe::test::use_future_ec: a future that holds an operation's error code
// (and value) instead of throwing, for suites that check codes. Driver-free
// (Asio only): the unit suites use it too.
#pragma once

#include <boost/asio/async_result.hpp>

#include <future>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

namespace pgpipe::test {

/// A token like asio::use_future that keeps the explicit error form: the
/// future holds the operation's (std::error_code, T) as a tuple, or the
/// std::error_code alone, and never throws. For tests that check an error
/// code; asio::as_tuple(asio::use_future) does not compile with this Boost.
struct use_future_ec_t {};
inline constexpr use_future_ec_t use_future_ec{};

}  // namespace pgpipe::test

/// @cond
template <class... Args>
struct boost::asio::async_result<pgpipe::test::use_future_ec_t, void(Args...)> {
  using value_type = std::conditional_t<sizeof...(Args) == 1, std::decay_t<std::tuple_element_t<0, std::tuple<Args...>>>,
                                        std::tuple<std::decay_t<Args>...>>;
  template <class Initiation, class... InitArgs>
  static std::future<value_type> initiate(Initiation&& initiation, pgpipe::test::use_future_ec_t, InitArgs&&... args) {
    auto promise = std::make_shared<std::promise<value_type>>();
    auto future = promise->get_future();
    std::forward<Initiation>(initiation)([promise](Args... a) { promise->set_value(value_type(std::move(a)...)); },
                                         std::forward<InitArgs>(args)...);
    return future;
  }
};
/// @endcond
