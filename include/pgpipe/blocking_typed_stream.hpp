// A statement's rows read into T as they arrive, in the blocking driver:
// a range-for over T with bounded memory (blocking_row_stream underneath).
//
//   for (const item& x : pool.stream_as<item>("select id, name from items where team = $1", team))
//     use(x);                              // a break stops the statement
//
//   auto lease = pool.acquire();           // or on a lease of one's own
//   pgpipe::blocking_typed_stream<item> s(lease, "select id, name from items");
//   for (const item& x : s) use(x);
//
// T is any row type (pgpipe/row_shape.hpp): a tuple or an aggregate by
// position, a described struct by column name. The columns are checked
// against T once, when the first chunk (or the end) arrives, before any row
// is handed out; NULL reads only into std::optional fields. The values come
// in binary when every field type of T reads binary (field_traits'
// binary_results), else in text, as blocking_pool::query_as chooses.
//
// Errors, thrown as pgpipe::error from begin() or the iterator's increment
// (the one that would read the failing row): the statement's SQLSTATE,
// errc::connection_lost and the rest of blocking_row_stream::next's; then
// errc::columns_mismatch or errc::type_mismatch naming the field, the
// column and both types (before any row); errc::null_value,
// errc::conversion_error or errc::out_of_range naming the row (counted
// from 0), the column and the field. A typed error stops the statement as
// cancel() does, so the lease serves its next query.
//
// The range is read once: begin() a second time continues where the first
// stopped. Destroying the stream before its end (a break, an exception in
// the loop's body) cancels the statement (blocking_row_stream::cancel).
//
// Preconditions and thread-safety: as blocking_row_stream's (the lease
// outlives the stream, one thread at a time).
#pragma once

#include <pgpipe/blocking_lease.hpp>
#include <pgpipe/blocking_row_stream.hpp>
#include <pgpipe/detail/typed_stream_reader.hpp>
#include <pgpipe/row_shape.hpp>

#include <cstddef>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace pgpipe {

/// Rows of T read as they arrive (see the file comment). Move-only.
template <row_type T>
class blocking_typed_stream {
 public:
  /// Starts `sql` with `args` on `lease`; throws as blocking_row_stream's
  /// constructor.
  template <class... Args>
  blocking_typed_stream(blocking_lease& lease, std::string_view sql, const Args&... args)
      : rows_(lease, sql, detail::encode_params(args...), detail::row_traits<T>::binary_results) {}

  /// Starts `sql` on a lease the stream keeps, and gives back when it is
  /// destroyed (blocking_pool::stream_as).
  template <class... Args>
  blocking_typed_stream(std::unique_ptr<blocking_lease> owned, std::string_view sql, const Args&... args)
      : owned_(std::move(owned)),
        rows_(*owned_, sql, detail::encode_params(args...), detail::row_traits<T>::binary_results) {}

  /// An input iterator holding the current row's T.
  class iterator {
   public:
    /// The standard input iterator types.
    ///@{
    using iterator_concept = std::input_iterator_tag;
    using iterator_category = std::input_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using reference = const T&;
    using pointer = const T*;
    ///@}
    iterator() = default;
    /// The current row's value.
    ///@{
    const T& operator*() const noexcept { return value_; }
    const T* operator->() const noexcept { return &value_; }
    ///@}
    /// Reads the next row, blocking until it arrives; throws pgpipe::error
    /// (see the file comment).
    ///@{
    iterator& operator++() {
      at_end_ = !stream_->read(value_);
      return *this;
    }
    void operator++(int) { ++*this; }
    ///@}
    /// True past the last row.
    friend bool operator==(const iterator& it, std::default_sentinel_t) noexcept { return it.at_end_; }

   private:
    friend class blocking_typed_stream;
    explicit iterator(blocking_typed_stream* s) : stream_(s) { ++*this; }
    blocking_typed_stream* stream_ = nullptr;
    bool at_end_ = true;
    T value_{};
  };

  /// Reads the next row (the first, on a fresh stream); throws as the
  /// iterator's increment.
  [[nodiscard]] iterator begin() { return iterator(this); }
  /// The end of the rows.
  [[nodiscard]] std::default_sentinel_t end() const noexcept { return {}; }

  /// The next row into `out`; false at the end. Throws pgpipe::error (see
  /// the file comment); after a throw the stream is at its end.
  bool read(T& out) {
    std::string message;
    while (!reader_.has_row()) {
      if (ended_) return false;
      result chunk = rows_.next();
      ended_ = chunk.empty();
      if (auto ec = reader_.feed(std::move(chunk), message)) stop(ec, message);
    }
    if (auto ec = reader_.take(out, message)) stop(ec, message);
    return true;
  }

  /// Stops early, as blocking_row_stream::cancel. Never throws.
  void cancel() noexcept {
    ended_ = true;
    reader_.drop();
    rows_.cancel();
  }

 private:
  [[noreturn]] void stop(std::error_code ec, std::string& message) {
    cancel();
    throw error(ec, std::move(message));
  }

  // Declared first: the lease outlives the statement running on it.
  std::unique_ptr<blocking_lease> owned_;
  blocking_row_stream rows_;
  detail::typed_stream_reader<T> reader_;
  bool ended_ = false;
};

}  // namespace pgpipe
