// Glue between the header-only completion-token world of Asio and the
// compiled async driver: handlers are type-erased here, at initiation, so
// that everything behind query_target is ordinary compiled code.
// Users must not touch this header's contents.
#pragma once

#include <pgpipe/detail/text_convert.hpp>
#include <pgpipe/query_options.hpp>
#include <pgpipe/detail/throws_by_default.hpp>
#include <pgpipe/result.hpp>
#include <pgpipe/with_diagnostics.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <cassert>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

namespace pgpipe {

namespace detail {

/// Every result handed to a caller with an error carries that error, so
/// that reading rows from an unchecked failed result throws it (with the
/// server's SQLSTATE and message) instead of reading as zero rows. Done
/// here, where every operation completes, rather than at each place a
/// failed result is made.
inline void remember_error(const std::error_code& ec, result& r) {
  if (ec && r.code() != ec) {
    PGresult* res = r.release();
    r = result(ec, std::move(r.diag()), res);
  }
}
template <class T>
void remember_error(const std::error_code&, T&) noexcept {}

/// A type-erased completion handler taking (std::error_code, T). For
/// T = std::monostate the handler takes only the error_code.
template <class T>
class completion {
 public:
  virtual ~completion() = default;
  /// Runs the handler exactly once on its associated executor, or on
  /// `fallback` when it has none. must_post forbids running it inline
  /// (required when completing from inside the initiating function).
  virtual void complete(const boost::asio::any_io_executor& fallback, bool must_post, std::error_code ec,
                        T value) = 0;
  /// Asked at most once, before a pool records a failed attempt (`ec` set):
  /// true when this completion will run the query again elsewhere (a read
  /// router's re-run), so the pool counts nothing for the attempt and tells
  /// its observer that a re-run follows.
  virtual bool reruns(const std::error_code& ec) {
    (void)ec;
    return false;
  }
};

/// True for the handlers through which Asio resumes a coroutine at a
/// co_await (use_awaitable, a deferred operation awaited in an
/// asio::awaitable): they are the coroutine's awaitable_thread, whose
/// co_spawn keeps the work of its executor (the handler's associated
/// executor) for the coroutine's whole life.
template <class Handler, class = void>
struct is_coroutine_handler : std::false_type {};
#if defined(BOOST_ASIO_HAS_CO_AWAIT)
template <class Handler>
struct is_coroutine_handler<Handler, std::void_t<typename Handler::executor_type>>
    : std::is_base_of<boost::asio::detail::awaitable_thread<typename Handler::executor_type>, Handler> {};
#endif

template <class T, class Handler>
class completion_impl final : public completion<T> {
  using assoc_executor = boost::asio::associated_executor_t<Handler>;
  // A handler with no executor of its own runs on the driver's loop; one that
  // has one (a strand, a callback bound to an executor) keeps that
  // executor's context alive until it runs, as Asio's composed operations do.
  // A coroutine's own handler needs no second guard (see
  // is_coroutine_handler): moving one through the post costs about a tenth
  // of an await.
  static constexpr bool has_own_executor = !std::is_same_v<assoc_executor, boost::asio::system_executor>;
  static constexpr bool keeps_work = has_own_executor && !is_coroutine_handler<Handler>::value;
  using work_guard = std::conditional_t<keeps_work, boost::asio::executor_work_guard<assoc_executor>,
                                        std::monostate>;

 public:
  explicit completion_impl(Handler h) : h_(std::move(h)), work_(make_work(h_)) {}
  ~completion_impl() override {
#ifndef NDEBUG
    // Every operation completes exactly once: a request destroyed without
    // running its handler is a driver bug.
    assert(done_ && "pgpipe: an operation was destroyed without completing");
#endif
  }

  void complete(const boost::asio::any_io_executor& fallback, bool must_post, std::error_code ec,
                T value) override {
#ifndef NDEBUG
    assert(!done_ && "pgpipe: an operation completed twice");
    done_ = true;
#endif
    remember_error(ec, value);
    // Read the executor before the handler moves into the function object.
    auto ex = pick_executor(fallback);
    auto fn = [h = std::move(h_), work = std::move(work_), ec, v = std::move(value)]() mutable {
      // Detach the cancellation hook before the handler runs (Asio's rule), on
      // the handler's own executor where signals are emitted.
      auto slot = boost::asio::get_associated_cancellation_slot(h);
      if (slot.is_connected()) slot.clear();
      (void)work;
      if constexpr (std::is_same_v<T, std::monostate>) {
        (void)v;  // captured for the other branch; clang's -Wunused-lambda-capture
        std::move(h)(ec);
      } else {
        std::move(h)(ec, std::move(v));
      }
    };
    if (must_post) {
      boost::asio::post(ex, std::move(fn));
    } else {
      boost::asio::dispatch(ex, std::move(fn));
    }
  }

 private:
  static work_guard make_work(const Handler& h) {
    if constexpr (keeps_work) {
      return work_guard(boost::asio::get_associated_executor(h));
    } else {
      return {};
    }
  }
  auto pick_executor(const boost::asio::any_io_executor& fallback) const {
    if constexpr (has_own_executor) {
      return boost::asio::get_associated_executor(h_);
    } else {
      return fallback;
    }
  }

  Handler h_;
  work_guard work_;
#ifndef NDEBUG
  bool done_ = false;
#endif
};

/// What a query asks for; built in the caller's thread, owned by the driver.
struct query_spec {
  std::string sql;
  encoded_params params;
  std::optional<std::chrono::milliseconds> timeout;
  bool read_only = false;  ///< query_options::read_only (or the pool's default)
  /// A read router's re-run: the attempt's number (query_event::attempt)
  /// and the caller's call, which the pool's timing counts from.
  std::uint32_t attempt = 1;
  std::chrono::steady_clock::time_point called{};
  /// A stream's rows per libpq result (query_options::stream_chunk_rows).
  std::size_t stream_chunk_rows = 1;
  /// Ask the server for binary result values (resultFormat 1).
  bool binary_results = false;
};

/// Something queries can be sent to: the pool (async_client) or one leased
/// connection (lease). Implementations never complete inline.
class query_target {
 public:
  virtual ~query_target() = default;
  virtual void submit_query(query_spec spec, std::unique_ptr<completion<result>> done,
                            boost::asio::cancellation_slot slot) = 0;
};

/// How many rows an operation's caller accepts (async_query_one / _opt).
enum class rows_expected { any, one, at_most_one };

/// Fails a successful result whose row count the caller does not accept,
/// with errc::out_of_range naming the count (the rows stay readable through
/// the PGresult kept in the failed result's native_handle()).
class row_count_completion final : public completion<result> {
 public:
  row_count_completion(rows_expected expect, std::unique_ptr<completion<result>> inner) noexcept
      : expect_(expect), inner_(std::move(inner)) {}
  void complete(const boost::asio::any_io_executor& fallback, bool must_post, std::error_code ec,
                result value) override {
    if (!ec) {
      const std::size_t n = value.size();
      const bool ok = expect_ == rows_expected::one ? n == 1 : n <= 1;
      if (!ok) {
        ec = make_error_code(errc::out_of_range);
        diagnostics d;
        d.client_message = std::string(expect_ == rows_expected::one ? "expected exactly one row"
                                                                      : "expected at most one row") +
                           ", the query returned " + std::to_string(n);
        PGresult* res = value.release();
        value = result(ec, std::move(d), res);
      }
    }
    inner_->complete(fallback, must_post, ec, std::move(value));
  }

 private:
  rows_expected expect_;
  std::unique_ptr<completion<result>> inner_;
};

/// A target for operations started on a moved-from or empty object: completes
/// with errc::closed (on the system executor when the handler has none).
std::shared_ptr<query_target> null_query_target();


/// The completion signature of an operation producing T (std::monostate: none).
template <class T>
using signature_of =
    std::conditional_t<std::is_same_v<T, std::monostate>, void(std::error_code), void(std::error_code, T)>;

/// The one place every async operation starts: asio::async_initiate with
/// the signature (std::error_code, T), the token wrapped in
/// with_diagnostics() when it throws by default (see throws_by_default).
/// `initiation` gets the handler (wrap it in completion_impl<T, H>) and `args`.
template <class T, class Token, class Initiation, class... Args>
auto initiate_op(Initiation&& initiation, Token&& token, Args&&... args) {
  // Token keeps the caller's value category: an lvalue token (a named
  // std::function the caller passes again from inside its own handler) is
  // copied, never moved from.
  if constexpr (throws_by_default<std::decay_t<Token>>::value) {
    auto wrapped = with_diagnostics(std::forward<Token>(token));
    return boost::asio::async_initiate<decltype(wrapped), signature_of<T>>(std::forward<Initiation>(initiation),
                                                                           wrapped, std::forward<Args>(args)...);
  } else {
    return boost::asio::async_initiate<Token, signature_of<T>>(std::forward<Initiation>(initiation), token,
                                                               std::forward<Args>(args)...);
  }
}

template <class Token>
auto initiate_query(std::shared_ptr<query_target> target, query_spec spec, Token&& token,
                    rows_expected expect = rows_expected::any) {
  return initiate_op<result>(
      [](auto handler, std::shared_ptr<query_target> t, query_spec s, rows_expected e) {
        using H = decltype(handler);
        auto slot = boost::asio::get_associated_cancellation_slot(handler);
        std::unique_ptr<completion<result>> done = std::make_unique<completion_impl<result, H>>(std::move(handler));
        if (e != rows_expected::any) done = std::make_unique<row_count_completion>(e, std::move(done));
        t->submit_query(std::move(s), std::move(done), slot);
      },
      std::forward<Token>(token), std::move(target), std::move(spec), expect);
}

// async_query(sql, args..., token): the last argument is the token, the ones
// before it are the query parameters.
template <class Tuple, std::size_t... I>
auto initiate_query_split(std::shared_ptr<query_target> target, const query_options& opts, rows_expected expect,
                          std::string_view sql, Tuple&& t, std::index_sequence<I...>) {
  constexpr std::size_t n = sizeof...(I);
  query_spec spec{std::string(sql), encode_params(std::get<I>(t)...), opts.timeout, opts.read_only};
  spec.binary_results = opts.results == result_format::binary;
  return initiate_query(std::move(target), std::move(spec),
                        std::forward<std::tuple_element_t<n, std::remove_reference_t<Tuple>>>(std::get<n>(t)),
                        expect);
}

template <class... ArgsAndToken>
auto initiate_query_args(std::shared_ptr<query_target> target, const query_options& opts, rows_expected expect,
                         std::string_view sql, ArgsAndToken&&... args_and_token) {
  static_assert(sizeof...(ArgsAndToken) >= 1, "async_query: the last argument must be a completion token");
  if (!target) target = null_query_target();
  return initiate_query_split(std::move(target), opts, expect, sql,
                              std::forward_as_tuple(std::forward<ArgsAndToken>(args_and_token)...),
                              std::make_index_sequence<sizeof...(ArgsAndToken) - 1>{});
}

}  // namespace detail
}  // namespace pgpipe
