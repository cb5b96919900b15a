// The async operations that hand a caller T instead of a result
// (async_client::async_query_as and its _one / _opt forms): the query runs
// as async_query does, and its result is read into T (pgpipe/typed_rows.hpp)
// before the handler runs. Users must not touch this header's contents.
#pragma once

#include <pgpipe/detail/async_glue.hpp>
#include <pgpipe/typed_rows.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associator.hpp>
#include <boost/asio/async_result.hpp>

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace pgpipe::detail {

/// What a typed operation carries to its handler: the value, and the
/// diagnostics of a failure (the server's, or the shape check's message),
/// which a throwing token turns into the pgpipe::error it throws.
template <class V>
struct typed_outcome {
  V value{};
  diagnostics diag;
};

/// The value a typed operation yields for each row count it accepts.
template <class T, rows_expected E>
using typed_value_t = std::conditional_t<E == rows_expected::any, std::vector<T>,
                                         std::conditional_t<E == rows_expected::one, T, std::optional<T>>>;

/// Whether a typed read of T asks for binary results: binary where every
/// field of T reads it, unless the caller chose a format.
template <class T>
constexpr bool wants_binary(result_format f) noexcept {
  return f == result_format::binary || (f == result_format::automatic && row_traits<T>::binary_results);
}

/// Reads a successful result into V; on failure, the code with its message.
template <class T, rows_expected E>
std::error_code read_typed(const result& r, typed_value_t<T, E>& out, std::string& message) {
  if constexpr (E == rows_expected::any) {
    return rows_to_vector(r.native_handle(), out, message);
  } else if constexpr (E == rows_expected::at_most_one) {
    return row_to_optional(r.native_handle(), false, out, message);
  } else {
    std::optional<T> one;
    auto ec = row_to_optional(r.native_handle(), true, one, message);
    if (!ec) out = std::move(*one);
    return ec;
  }
}

/// Hands (ec, value) to the caller's handler, or (exception_ptr, value) for
/// a token that throws by default (use_awaitable, use_future), the exception
/// a pgpipe::error with the failure's diagnostics.
template <class Handler, class V, bool Throws>
struct typed_handler {
  Handler handler;
  void operator()(std::error_code ec, typed_outcome<V> o) {
    if constexpr (Throws) {
      std::exception_ptr e;
      if (ec) e = std::make_exception_ptr(error(ec, std::move(o.diag)));
      std::move(handler)(std::move(e), std::move(o.value));
    } else {
      std::move(handler)(ec, std::move(o.value));
    }
  }
};

/// Reads the query's result into the typed value, then completes `inner`.
template <class T, rows_expected E>
class typed_completion final : public completion<result> {
  using value_type = typed_value_t<T, E>;

 public:
  explicit typed_completion(std::unique_ptr<completion<typed_outcome<value_type>>> inner) noexcept
      : inner_(std::move(inner)) {}
  void complete(const boost::asio::any_io_executor& fallback, bool must_post, std::error_code ec,
                result value) override {
    typed_outcome<value_type> o;
    if (ec) {
      o.diag = value.diag();
    } else {
      std::string message;
      // Nothing may escape onto the event loop: a user's field_traits that
      // throws, or memory running out, fails this operation only.
      try {
        ec = read_typed<T, E>(value, o.value, message);
      } catch (const std::exception& e) {
        ec = make_error_code(errc::conversion_error);
        message = std::string("reading the rows failed: ") + e.what();
      }
      if (ec) {
        o.value = value_type{};
        o.diag.client_message = std::move(message);
      }
    }
    inner_->complete(fallback, must_post, ec, std::move(o));
  }

 private:
  std::unique_ptr<completion<typed_outcome<value_type>>> inner_;
};

template <class T, rows_expected E, class Token>
auto initiate_typed_query(std::shared_ptr<query_target> target, query_spec spec, Token&& token) {
  using V = typed_value_t<T, E>;
  constexpr bool throws = throws_by_default<std::decay_t<Token>>::value;
  using signature = std::conditional_t<throws, void(std::exception_ptr, V), void(std::error_code, V)>;
  return boost::asio::async_initiate<Token, signature>(
      [](auto handler, std::shared_ptr<query_target> t, query_spec s) {
        using H = typed_handler<decltype(handler), V, throws>;
        auto slot = boost::asio::get_associated_cancellation_slot(handler);
        std::unique_ptr<completion<result>> done = std::make_unique<typed_completion<T, E>>(
            std::make_unique<completion_impl<typed_outcome<V>, H>>(H{std::move(handler)}));
        t->submit_query(std::move(s), std::move(done), slot);
      },
      token, std::move(target), std::move(spec));
}

template <class T, rows_expected E, class Tuple, std::size_t... I>
auto initiate_typed_split(std::shared_ptr<query_target> target, const query_options& opts, std::string_view sql,
                          Tuple&& t, std::index_sequence<I...>) {
  constexpr std::size_t n = sizeof...(I);
  query_spec spec{std::string(sql), encode_params(std::get<I>(t)...), opts.timeout, opts.read_only};
  spec.binary_results = wants_binary<T>(opts.results);
  return initiate_typed_query<T, E>(std::move(target), std::move(spec),
                                    std::forward<std::tuple_element_t<n, std::remove_reference_t<Tuple>>>(std::get<n>(t)));
}

/// async_query_as(sql, args..., token): the last argument is the token.
template <class T, rows_expected E, class... ArgsAndToken>
auto initiate_typed_args(std::shared_ptr<query_target> target, const query_options& opts, std::string_view sql,
                         ArgsAndToken&&... args_and_token) {
  static_assert(sizeof...(ArgsAndToken) >= 1, "async_query_as: the last argument must be a completion token");
  if (!target) target = null_query_target();
  return initiate_typed_split<T, E>(std::move(target), opts, sql,
                                    std::forward_as_tuple(std::forward<ArgsAndToken>(args_and_token)...),
                                    std::make_index_sequence<sizeof...(ArgsAndToken) - 1>{});
}

}  // namespace pgpipe::detail

namespace boost::asio {

/// The adapted handler keeps the caller's executor, allocator, cancellation
/// slot and immediate executor.
template <template <class, class> class Associator, class Handler, class V, bool Throws, class DefaultCandidate>
struct associator<Associator, pgpipe::detail::typed_handler<Handler, V, Throws>, DefaultCandidate>
    : Associator<Handler, DefaultCandidate> {
  static typename Associator<Handler, DefaultCandidate>::type get(
      const pgpipe::detail::typed_handler<Handler, V, Throws>& h) noexcept {
    return Associator<Handler, DefaultCandidate>::get(h.handler);
  }
  static auto get(const pgpipe::detail::typed_handler<Handler, V, Throws>& h, const DefaultCandidate& c) noexcept
      -> decltype(Associator<Handler, DefaultCandidate>::get(h.handler, c)) {
    return Associator<Handler, DefaultCandidate>::get(h.handler, c);
  }
};

}  // namespace boost::asio
