// pgpipe::async_typed_stream<T>: a statement's rows read into T as they
// arrive, in the async driver, with an async_row_stream's bounded memory.
// Started by async_client::async_stream_as<T> (a lease of its own) or
// async_lease::stream_as<T>; read with async_next until it yields nothing:
//
//   auto s = co_await c.async_stream_as<item>("select id, name from items", asio::use_awaitable);
//   while (std::optional<item> x = co_await s.async_next(asio::use_awaitable)) use(*x);
//
// T is any row type (pgpipe/row_shape.hpp): a tuple or an aggregate by
// position, a described struct by column name. The columns are checked
// against T once, when the first chunk (or the end) arrives, before any row
// is handed out; NULL reads only into std::optional fields. The values come
// in binary when every field type of T reads binary (field_traits'
// binary_results), as async_query_as chooses; query_options::results
// overrides it.
#pragma once

#include <pgpipe/async_row_stream.hpp>
#include <pgpipe/detail/typed_query_glue.hpp>
#include <pgpipe/detail/typed_stream_reader.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/system_executor.hpp>

#include <atomic>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

namespace pgpipe {

/// Rows of T read as they arrive (see the file comment). Move-only.
/// Destroying the stream (or cancel()) before its end stops the statement as
/// async_row_stream does: the rest is discarded, the lease serves its next
/// query (and async_stream_as's lease goes back to the pool).
template <row_type T>
class async_typed_stream {
  struct state {
    explicit state(async_row_stream r) : rows(std::move(r)) {}
    async_row_stream rows;
    detail::typed_stream_reader<T> reader;
    // Set for the whole of one async_next, from its initiation (any thread)
    // until its handler is handed over: a second one meanwhile is refused
    // before it touches anything else.
    std::atomic<bool> pending{false};
    bool ended = false;
  };
  using outcome = detail::typed_outcome<std::optional<T>>;
  using done_ptr = std::unique_ptr<detail::completion<outcome>>;

 public:
  async_typed_stream() noexcept = default;
  /// Reads `rows` as T. `rows` should ask for the format T reads best
  /// (async_stream_as and stream_as choose it); an empty stream keeps its
  /// diag().
  explicit async_typed_stream(async_row_stream rows) : failure_(rows.diag()) {
    if (rows.valid()) st_ = std::make_shared<state>(std::move(rows));
  }
  /// Moves the stream; a move-assignment first stops the one this held.
  ///@{
  async_typed_stream(async_typed_stream&&) noexcept = default;
  async_typed_stream& operator=(async_typed_stream&& other) noexcept {
    if (this != &other) {
      cancel();
      st_ = std::move(other.st_);
      failure_ = std::move(other.failure_);
    }
    return *this;
  }
  ///@}
  async_typed_stream(const async_typed_stream&) = delete;
  async_typed_stream& operator=(const async_typed_stream&) = delete;
  ~async_typed_stream() { cancel(); }

  /// False for a default-constructed or moved-from stream, or one whose
  /// start failed (see diag()).
  bool valid() const noexcept { return st_ != nullptr; }

  /// Why async_client::async_stream_as failed to start the stream (the
  /// acquire's error); empty otherwise.
  [[nodiscard]] const diagnostics& diag() const noexcept { return failure_; }

  /// The next row: token for void(std::error_code, std::optional<T>)
  /// (use_awaitable / use_future: std::optional<T>, or pgpipe::error thrown
  /// with the diagnostics). std::nullopt at the end, and on every call after
  /// it. One failure is reported once, then the stream is at its end:
  /// the statement's SQLSTATE (possibly after some rows) or
  /// errc::connection_lost, as async_row_stream::async_next; then
  /// errc::columns_mismatch or errc::type_mismatch naming the field, the
  /// column and both types (before any row); errc::null_value,
  /// errc::conversion_error or errc::out_of_range naming the row (counted
  /// from 0), the column and the field; a typed failure stops the statement
  /// as cancel() does. errc::invalid_argument while another async_next is
  /// pending; errc::cancelled after cancel(); errc::closed on an empty
  /// stream. The message reaches the caller in the pgpipe::error a throwing
  /// token throws; the (ec, value) form has only the code.
  /// Rows of a chunk already received complete without a round trip (posted,
  /// never inline). Executor: the handler's, else the stream's connection's
  /// loop. Not cancellable per operation: use cancel().
  /// Thread-safety: one async_next at a time; not concurrent with a move.
  template <class CompletionToken>
  auto async_next(CompletionToken&& token) {
    using V = std::optional<T>;
    constexpr bool throws = detail::throws_by_default<std::decay_t<CompletionToken>>::value;
    using signature = std::conditional_t<throws, void(std::exception_ptr, V), void(std::error_code, V)>;
    return boost::asio::async_initiate<CompletionToken, signature>(
        [](auto handler, std::shared_ptr<state> st) {
          using H = detail::typed_handler<decltype(handler), V, throws>;
          next_row(std::move(st), std::make_unique<detail::completion_impl<outcome, H>>(H{std::move(handler)}));
        },
        token, st_);
  }

  /// Stops the stream, as async_row_stream::cancel. Idempotent; thread-safe
  /// with respect to the loop, but not to a concurrent move or async_next's
  /// initiation.
  void cancel() noexcept {
    if (st_) st_->rows.cancel();
  }

 private:
  static void fail(done_ptr& done, const boost::asio::any_io_executor& ex, bool must_post, std::error_code ec,
                   std::string message) {
    outcome o;
    o.diag.client_message = std::move(message);
    done->complete(ex, must_post, ec, std::move(o));
  }

  // Hands over the next row of the chunk held (there is one).
  static void deliver(state& st, const boost::asio::any_io_executor& ex, bool must_post, done_ptr done) {
    outcome o;
    std::string message;
    std::error_code ec;
    // Nothing may escape onto the event loop: a user's field_traits that
    // throws, or memory running out, fails this read only.
    try {
      ec = st.reader.take(o.value.emplace(), message);
    } catch (const std::exception& e) {
      ec = make_error_code(errc::conversion_error);
      message = std::string("reading the row failed: ") + e.what();
      st.reader.drop();
    }
    st.pending.store(false, std::memory_order_release);
    if (ec) {
      st.ended = true;
      st.rows.cancel();
      fail(done, ex, must_post, ec, std::move(message));
      return;
    }
    done->complete(ex, must_post, {}, std::move(o));
  }

  // A chunk arrived from the row stream (on its loop).
  static void on_chunk(const std::shared_ptr<state>& st, std::error_code ec, result chunk, done_ptr done) {
    const auto ex = st->rows.get_executor();
    if (ec) {
      st->ended = true;
      st->pending.store(false, std::memory_order_release);
      outcome o;
      o.diag = chunk.diag();
      done->complete(ex, false, ec, std::move(o));
      return;
    }
    st->ended = chunk.empty();
    std::string message;
    if (auto e = st->reader.feed(std::move(chunk), message)) {
      st->ended = true;
      st->pending.store(false, std::memory_order_release);
      st->rows.cancel();
      fail(done, ex, false, e, std::move(message));
      return;
    }
    if (!st->reader.has_row()) {
      st->pending.store(false, std::memory_order_release);
      done->complete(ex, false, {}, outcome{});  // the end
      return;
    }
    deliver(*st, ex, false, std::move(done));
  }

  static void next_row(std::shared_ptr<state> st, done_ptr done) {
    if (!st) {
      fail(done, boost::asio::system_executor(), true, make_error_code(errc::closed), "empty async_typed_stream");
      return;
    }
    const auto ex = st->rows.get_executor();
    if (st->pending.exchange(true, std::memory_order_acq_rel)) {
      fail(done, ex, true, make_error_code(errc::invalid_argument), "async_typed_stream::async_next is already pending");
      return;
    }
    if (st->reader.has_row()) {
      deliver(*st, ex, true, std::move(done));
      return;
    }
    if (st->ended) {
      st->pending.store(false, std::memory_order_release);
      done->complete(ex, true, {}, outcome{});
      return;
    }
    st->rows.async_next([st, d = std::move(done)](std::error_code ec, result chunk) mutable {
      on_chunk(st, ec, std::move(chunk), std::move(d));
    });
  }

  std::shared_ptr<state> st_;
  diagnostics failure_;
};

namespace detail {

/// Hands the row stream async_client::async_stream started to the caller
/// as an async_typed_stream<T>.
template <row_type T>
class typed_stream_start final : public completion<async_row_stream> {
 public:
  explicit typed_stream_start(std::unique_ptr<completion<async_typed_stream<T>>> inner) noexcept
      : inner_(std::move(inner)) {}
  void complete(const boost::asio::any_io_executor& fallback, bool must_post, std::error_code ec,
                async_row_stream value) override {
    inner_->complete(fallback, must_post, ec, async_typed_stream<T>(std::move(value)));
  }

 private:
  std::unique_ptr<completion<async_typed_stream<T>>> inner_;
};

}  // namespace detail
}  // namespace pgpipe
