// blocking_executor: a fixed set of worker threads that run blocking calls
// (typically blocking_pool code) for code that lives on an Asio event loop.
//
// An event loop must never block; a blocking driver must block. The usual
// bridge is a worker pool: the loop hands a callable to a worker, the worker
// runs it, and the completion comes back to the loop. With one worker per
// pool connection (the default), every worker can hold a connection and no
// worker waits for one: N in-flight queries cost N threads, which is the
// blocking model's price, made explicit here.
//
//   pgpipe::blocking_pool pool{params};
//   pgpipe::blocking_executor workers{params};          // params.max_size threads
//   pgpipe::result rows = co_await workers.async_run(
//       [&] { return pool.exec("select ten from san_pham where ma = $1", key); },
//       asio::use_awaitable);                            // throws pgpipe::error on failure
//
// Completion signature: void(std::error_code, R) where R is the callable's
// return type (void(std::error_code) when it returns void), the same shape as
// async_client's operations, and as there, asio::use_awaitable and
// asio::use_future give the value and throw a failure as pgpipe::error with
// its diagnostics (asio::as_tuple(asio::use_awaitable) keeps the explicit
// (error_code, value) form; a callback gets both). An exception thrown by the
// callable becomes the error_code: pgpipe::error gives its code, libpqxx
// exceptions are translated as blocking_pool translates them,
// std::system_error gives its code, anything else gives
// std::errc::state_not_recoverable. Pass a pgpipe::diagnostics& to receive
// the details (server fields, message); it is written before the handler
// runs. R must be default-constructible and move-constructible (a default R
// is passed on error).
//
// Executors: the handler runs on its associated executor (a coroutine's
// executor, a strand bound with asio::bind_executor), which is kept busy
// (outstanding work) while the call is queued or running, so io_context::run()
// does not return under it. A handler with no associated executor runs on the
// worker thread right after the callable. Handlers never run inside
// async_run() itself.
//
// Cancellation: none; a queued callable runs unless the executor stops.
//
// GCC 12 and coroutines: do not write a capturing lambda as a temporary inside
// the co_await expression (`co_await w.async_run([k] {...}, use_awaitable)`):
// GCC 12 relocates such temporaries bitwise, so a captured std::string ends up
// pointing into the coroutine frame and is freed twice or from the wrong
// place (seen here under ASan; asio issue #858 and others). Name it first:
//   auto call = [&pool, k] { return pool.exec(sql, k); };
//   pgpipe::result rows = co_await workers.async_run(std::move(call), asio::use_awaitable);
#pragma once

#include <pgpipe/blocking_lease.hpp>
#include <pgpipe/detail/throws_by_default.hpp>
#include <pgpipe/error.hpp>
#include <pgpipe/pool_params.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <system_error>
#include <type_traits>
#include <utility>

namespace pgpipe {

namespace detail {

/// One queued call: run() on a worker, or abort(ec) when it will not run.
/// abort(ec, may_dispatch): may_dispatch is false inside async_run() (the
/// handler must not run inside its initiating function) and true in stop().
class blocking_job {
 public:
  virtual ~blocking_job() = default;
  virtual void run() noexcept = 0;
  virtual void abort(std::error_code ec, bool may_dispatch) noexcept = 0;
};

class blocking_workers;  // the threads and the queue (src/blocking/api/blocking_executor.cpp)

/// The completion signature for a callable returning R: (error_code, R), or
/// (exception_ptr, R) for a token that throws by default (use_awaitable,
/// use_future), whose failure is then a pgpipe::error with the diagnostics.
template <typename R, bool Throwing>
struct blocking_signature {
  using type = std::conditional_t<Throwing, void(std::exception_ptr, R), void(std::error_code, R)>;
};
template <bool Throwing>
struct blocking_signature<void, Throwing> {
  using type = std::conditional_t<Throwing, void(std::exception_ptr), void(std::error_code)>;
};

template <typename Fn, typename Handler, bool Throwing>
class blocking_job_impl final : public blocking_job {
  using result_type = std::invoke_result_t<Fn&>;
  using work_executor = std::decay_t<decltype(boost::asio::prefer(
      std::declval<boost::asio::associated_executor_t<Handler>>(),
      boost::asio::execution::outstanding_work.tracked))>;

 public:
  blocking_job_impl(Fn fn, Handler handler, diagnostics* diag)
      : fn_(std::move(fn)),
        handler_(std::move(handler)),
        diag_(diag),
        // Keeps the handler's io_context from running out of work while the
        // call waits in the queue or runs.
        work_(boost::asio::prefer(boost::asio::get_associated_executor(handler_),
                                  boost::asio::execution::outstanding_work.tracked)) {}

  void run() noexcept override {
    std::error_code ec;
    // A throwing token's exception carries the diagnostics, asked for or not.
    diagnostics own;
    diagnostics* d = diag_ != nullptr ? diag_ : Throwing ? &own : nullptr;
    if constexpr (std::is_void_v<result_type>) {
      try {
        fn_();
      } catch (...) {
        ec = translate_exception(std::current_exception(), d);
      }
      finish(false, ec, d);
    } else {
      static_assert(std::is_default_constructible_v<result_type>,
                    "blocking_executor: the callable's result must be default-constructible");
      result_type out{};
      try {
        out = fn_();
      } catch (...) {
        ec = translate_exception(std::current_exception(), d);
      }
      finish(false, ec, d, std::move(out));
    }
  }

  void abort(std::error_code ec, bool may_dispatch) noexcept override {
    diagnostics own;
    diagnostics* d = diag_ != nullptr ? diag_ : &own;
    *d = diagnostics{};
    d->client_message = ec.message();
    if constexpr (std::is_void_v<result_type>) {
      finish(!may_dispatch, ec, d);
    } else {
      finish(!may_dispatch, ec, d, result_type{});
    }
  }

 private:
  // The outcome in the handler's form: (ec, value...), or for a throwing
  // token (exception_ptr, value...) with pgpipe::error(ec, diagnostics).
  template <typename... Value>
  void finish(bool must_post, const std::error_code& ec, const diagnostics* d, Value&&... value) noexcept {
    if constexpr (Throwing) {
      std::exception_ptr e;
      if (ec) {
        try {
          e = std::make_exception_ptr(error(ec, d != nullptr ? *d : diagnostics{}));
        } catch (...) {
          e = std::current_exception();  // out of memory copying the diagnostics
        }
      }
      complete(must_post, std::move(e), std::forward<Value>(value)...);
    } else {
      complete(must_post, ec, std::forward<Value>(value)...);
    }
  }

  // From async_run() (queue_full, closed) the completion is posted: a handler
  // never runs inside its initiating function. From run() on a worker, and
  // from stop(), it is dispatched: on a loop's executor that queues it; a
  // handler with no associated executor runs right there, so stop() returns
  // only after such handlers ran (nothing runs later on a hidden thread).
  template <typename... Args>
  void complete(bool must_post, Args&&... args) noexcept {
    auto completion = [h = std::move(handler_), ... a = std::forward<Args>(args)]() mutable {
      std::move(h)(std::move(a)...);
    };
    if (must_post) {
      boost::asio::post(work_, std::move(completion));
    } else {
      boost::asio::dispatch(work_, std::move(completion));
    }
  }

  Fn fn_;
  Handler handler_;
  diagnostics* diag_;
  work_executor work_;
};

}  // namespace detail

/// Worker threads that run blocking calls for code on an Asio event loop and
/// complete a completion token there (the file comment above gives the model).
class blocking_executor {
 public:
  /// Starts `threads` workers (at least 1). max_queued: calls that may wait
  /// for a worker; the next one completes at once with errc::queue_full.
  explicit blocking_executor(std::size_t threads, std::size_t max_queued = 10'000);
  /// One worker per pool connection (params.max_size) and params.max_queued.
  explicit blocking_executor(const pool_params& params);
  /// stop(), then joins the workers (waits for the calls they are running).
  /// Calls still queued complete with errc::closed through their handlers'
  /// executors, so destroy the executor before the io_contexts it completes on
  /// (declare it after them).
  ~blocking_executor();
  blocking_executor(const blocking_executor&) = delete;
  blocking_executor& operator=(const blocking_executor&) = delete;

  /// Runs fn() on a worker and completes `token` with void(std::error_code, R)
  /// (use_awaitable, use_future: R, a failure thrown as pgpipe::error).
  /// Thread-safe. Errors: those fn throws (see the file comment),
  /// errc::queue_full (max_queued calls already waiting; fn does not run),
  /// errc::closed (the executor stopped before fn ran).
  template <typename Fn, typename CompletionToken>
  auto async_run(Fn&& fn, CompletionToken&& token) {
    return async_run_impl(std::forward<Fn>(fn), nullptr, std::forward<CompletionToken>(token));
  }

  /// The same; `diag` (which must outlive the operation) receives the
  /// diagnostics of a failure and is cleared on success.
  template <typename Fn, typename CompletionToken>
  auto async_run(Fn&& fn, diagnostics& diag, CompletionToken&& token) {
    return async_run_impl(std::forward<Fn>(fn), &diag, std::forward<CompletionToken>(token));
  }

  /// Stops taking calls: queued calls that have not started complete with
  /// errc::closed (dispatched from stop(): handlers without an associated
  /// executor run before stop() returns), new ones fail with errc::closed;
  /// running calls finish. Does not wait for them. Idempotent; thread-safe.
  void stop() noexcept;

  /// The worker threads it runs.
  std::size_t thread_count() const noexcept;
  /// Calls waiting for a worker (not counting running ones).
  std::size_t queued() const noexcept;

 private:
  template <typename Fn, typename CompletionToken>
  auto async_run_impl(Fn&& fn, diagnostics* diag, CompletionToken&& token) {
    using fn_type = std::decay_t<Fn>;
    using result_type = std::invoke_result_t<fn_type&>;
    constexpr bool throwing = detail::throws_by_default<std::decay_t<CompletionToken>>::value;
    using signature = typename detail::blocking_signature<result_type, throwing>::type;
    return boost::asio::async_initiate<CompletionToken, signature>(
        [](auto handler, detail::blocking_workers* workers, fn_type f, diagnostics* d) {
          using handler_type = decltype(handler);
          if (d != nullptr) *d = diagnostics{};
          submit(workers, std::make_unique<detail::blocking_job_impl<fn_type, handler_type, throwing>>(
                              std::move(f), std::move(handler), d));
        },
        token, workers_.get(), fn_type(std::forward<Fn>(fn)), diag);
  }

  /// Queues the job, or aborts it (queue_full, closed) through a post to its
  /// handler's executor, never inline. A handler with no associated executor
  /// then runs on Asio's system executor.
  static void submit(detail::blocking_workers* workers, std::unique_ptr<detail::blocking_job> job);

  std::unique_ptr<detail::blocking_workers> workers_;
};

}  // namespace pgpipe
