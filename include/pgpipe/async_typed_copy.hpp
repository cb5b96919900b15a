// Typed COPY on an async lease: rows of T in and out, over async_copy_in /
// async_copy_out (pgpipe/async_copy.hpp), so no caller escapes a tab, a
// backslash or a newline by hand. The blocking driver's pair is
// pgpipe/blocking_typed_copy.hpp; both share one core
// (pgpipe/detail/typed_copy.hpp), and the format, the field rules and the
// error messages are the same. The COPY statement lists the columns in T's
// field order.
//
//   pgpipe::async_copy_writer<item> w(lease.copy_in("copy items(id, name) from stdin"));
//   co_await w.async_write_rows(items, use_awaitable);   // std::span<const item>; as often as needed
//   pgpipe::result r = co_await w.async_finish(use_awaitable);  // r.affected_rows()
//
//   pgpipe::async_copy_reader<item> rd(lease.copy_out("copy items(id, name) to stdout"));
//   for (;;) {
//     std::vector<item> rows = co_await rd.async_next(use_awaitable);
//     if (rows.empty()) break;
//   }
//
// Errors: with use_awaitable / use_future a failure throws pgpipe::error
// whose message names the row (counted from 1) and the field; other tokens
// get the std::error_code, and error_message() holds that text. A row whose
// field cannot be encoded is errc::invalid_argument: the COPY is then
// aborted with that message as its reason (nothing of it stays) before the
// operation completes. A row that does not read as T is
// errc::conversion_error, null_value, out_of_range or columns_mismatch: the
// COPY is then cancelled. Server and connection errors are those of
// async_copy_in / async_copy_out.
//
// Memory: async_write_rows encodes about 64 KiB, waits until the connection
// has written it, then encodes the next (a span of a million rows never
// exists twice); async_next holds one chunk's rows.
//
// Thread-safety, executors and cancellation: as async_copy_in /
// async_copy_out (one operation at a time; handlers run on their own
// executor, else the lease's loop). The object and the span given to
// async_write_rows must outlive the operation.
#pragma once

#include <pgpipe/async_copy.hpp>
#include <pgpipe/detail/throws_by_default.hpp>
#include <pgpipe/detail/typed_copy.hpp>

#include <boost/asio/compose.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace pgpipe {
namespace detail {

/// A throwing token (use_awaitable, use_future) gets the failure as a
/// pgpipe::error carrying the message; any other token the error_code.
template <class Token>
inline constexpr bool typed_copy_throws = throws_by_default<std::decay_t<Token>>::value;

template <class Token, class... V>
using typed_copy_signature =
    std::conditional_t<typed_copy_throws<Token>, void(std::exception_ptr, V...), void(std::error_code, V...)>;

template <bool Throws, class Self, class... V>
void typed_copy_complete(Self& self, std::error_code ec, const std::string& message, V&&... v) {
  if constexpr (Throws) {
    std::exception_ptr e;
    if (ec) e = std::make_exception_ptr(message.empty() ? error(ec, ec.message()) : error(ec, message));
    self.complete(std::move(e), std::forward<V>(v)...);
  } else {
    self.complete(ec, std::forward<V>(v)...);
  }
}

}  // namespace detail

/// COPY ... FROM STDIN of rows of T (see the file comment). Move-only.
template <row_type T>
class async_copy_writer {
 public:
  /// Takes over a COPY started with lease.copy_in(...).
  explicit async_copy_writer(async_copy_in in) noexcept : in_(std::move(in)) {}

  /// Encodes and sends `rows`, about 64 KiB at a time, each chunk once the
  /// previous one is written: token for void(std::error_code) (throwing
  /// tokens: void(std::exception_ptr)). Every row is sent when it
  /// completes. Errors: see the file comment; after one the COPY is over.
  template <class CompletionToken>
  auto async_write_rows(std::span<const T> rows, CompletionToken&& token) {
    using Sig = detail::typed_copy_signature<CompletionToken>;
    return boost::asio::async_compose<CompletionToken, Sig>(
        write_op<detail::typed_copy_throws<CompletionToken>>{this, rows}, token);
  }

  /// Ends the data: as async_copy_in::async_finish (void(std::error_code,
  /// pgpipe::result), the row count in result::affected_rows()).
  template <class CompletionToken>
  auto async_finish(CompletionToken&& token) {
    return in_.async_finish(std::forward<CompletionToken>(token));
  }

  /// Ends the COPY with a failure `reason`: as async_copy_in::async_abort.
  template <class CompletionToken>
  auto async_abort(std::string_view reason, CompletionToken&& token) {
    return in_.async_abort(reason, std::forward<CompletionToken>(token));
  }

  /// The message of the last failure of async_write_rows (empty: none).
  const std::string& error_message() const noexcept { return message_; }

 private:
  template <bool Throws>
  struct write_op {
    async_copy_writer* w;
    std::span<const T> rows;
    std::size_t next = 0;
    bool started = false;       // a chunk was written (the first step is over)
    std::error_code failure{};  // set while the COPY is being aborted for a row

    template <class Self>
    void operator()(Self& self, std::error_code ec = {}) {
      if (failure) {  // the abort finished: report the row's error
        detail::typed_copy_complete<Throws>(self, failure, w->message_);
        return;
      }
      if (ec) {
        w->message_.clear();
        detail::typed_copy_complete<Throws>(self, ec, w->message_);
        return;
      }
      std::string& buf = w->buf_;
      while (next < rows.size() && buf.size() < detail::typed_copy_chunk_bytes) {
        if (auto bad = w->enc_.append(rows[next], buf, w->message_)) {
          failure = bad;
          buf.clear();
          auto& in = w->in_;
          const std::string reason = w->message_;
          in.async_abort(reason, std::move(self));
          return;
        }
        ++next;
      }
      if (buf.empty() && started) {
        w->message_.clear();
        detail::typed_copy_complete<Throws>(self, {}, w->message_);
        return;
      }
      // Even with no rows the first step writes (an empty chunk): the
      // operation then completes through the connection like any write, never
      // inside async_write_rows, and reports a COPY that already ended.
      // async_write copies the chunk when it starts, and a handler that runs
      // inline would fill buf_ again: send from the other buffer.
      started = true;
      w->sending_.swap(buf);
      buf.clear();
      w->in_.async_write(w->sending_, std::move(self));
    }
  };

  async_copy_in in_;
  detail::copy_row_encoder<T> enc_;
  std::string buf_;
  std::string sending_;
  std::string message_;
};

/// COPY ... TO STDOUT read as rows of T (see the file comment). Move-only.
template <row_type T>
class async_copy_reader {
 public:
  /// Takes over a COPY started with lease.copy_out(...).
  explicit async_copy_reader(async_copy_out out) noexcept : out_(std::move(out)) {}

  /// The rows of the next chunk: token for void(std::error_code,
  /// std::vector<T>) (throwing tokens: void(std::exception_ptr,
  /// std::vector<T>)). Empty at the end, after which rows() is the server's
  /// count. Errors: see the file comment; after one the COPY is over.
  template <class CompletionToken>
  auto async_next(CompletionToken&& token) {
    using Sig = detail::typed_copy_signature<CompletionToken, std::vector<T>>;
    return boost::asio::async_compose<CompletionToken, Sig>(next_op<detail::typed_copy_throws<CompletionToken>>{this},
                                                           token);
  }

  /// Rows the server reported, once async_next has delivered the end.
  std::uint64_t rows() const noexcept { return out_.rows(); }

  /// Stops the COPY early, as async_copy_out::cancel.
  void cancel() noexcept { out_.cancel(); }

  /// The message of the last failure of async_next (empty: none).
  const std::string& error_message() const noexcept { return message_; }

 private:
  template <bool Throws>
  struct next_op {
    async_copy_reader* r;

    template <class Self>
    void operator()(Self& self) {
      r->out_.async_next(std::move(self));
    }

    template <class Self>
    void operator()(Self& self, std::error_code ec, std::string chunk) {
      std::vector<T> rows;
      r->message_.clear();
      if (!ec && chunk.empty()) ec = r->dec_.finish(r->message_);
      if (!ec && !chunk.empty()) {
        ec = r->dec_.feed(chunk, rows, r->message_);
        if (ec) {
          rows.clear();
          r->out_.cancel();
        } else if (rows.empty()) {
          // The chunk ended inside a row: the rest is in the next one.
          r->out_.async_next(std::move(self));
          return;
        }
      }
      detail::typed_copy_complete<Throws>(self, ec, r->message_, std::move(rows));
    }
  };

  async_copy_out out_;
  detail::copy_row_decoder<T> dec_;
  std::string message_;
};

}  // namespace pgpipe
