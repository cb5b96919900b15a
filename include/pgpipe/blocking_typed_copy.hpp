// Typed COPY on a blocking_lease: rows of T in and out, over
// blocking_copy_in / blocking_copy_out (pgpipe/blocking_copy.hpp), so no
// caller escapes a tab, a backslash or a newline by hand. T is any row type
// (pgpipe/row_shape.hpp): a tuple or an aggregate by position, a described
// struct in its BOOST_DESCRIBE_STRUCT order. The COPY statement lists the
// columns in T's field order.
//
//   pgpipe::blocking_copy_writer<item> w(lease, "copy items(id, name) from stdin");
//   w.write_rows(items);                 // or w.write(one_item), as often as needed
//   std::uint64_t n = w.finish();
//
//   pgpipe::blocking_copy_reader<item> r(lease, "copy items(id, name) to stdout");
//   item x;
//   while (r.next(x)) use(x);
//
// Format: COPY text (the statement must not ask for CSV or binary). Each
// field is its type's text form (param_traits::encode), escaped; an empty
// std::optional is NULL. The server converts the text to the column's type,
// so an int64_t field fills an int4 column. Reading uses the text decoders
// typed rows use; NULL reads only into std::optional fields.
//
// Memory: the writer holds at most about 64 KiB of encoded rows, then hands
// them to the connection (which blocks while the socket is full); the reader
// holds one row.
//
// Errors: pgpipe::error. A row whose field cannot be encoded (a NUL byte in
// a string, an encoder that throws) fails write() with errc::invalid_argument
// naming the row (counted from 1) and the field; the COPY is then ended with
// that message as its failure reason, so nothing of it stays. A row that
// does not read as T fails next() with errc::conversion_error,
// errc::null_value, errc::out_of_range or errc::columns_mismatch naming the
// row and the field; the COPY is then cancelled. Server and connection
// errors are blocking_copy_in/out's.
//
// Preconditions and thread-safety: as blocking_copy_in/out (one thread at a
// time; the lease outlives the object; no libpqxx transaction object alive
// on the lease meanwhile).
#pragma once

#include <pgpipe/blocking_copy.hpp>
#include <pgpipe/detail/typed_copy.hpp>

#include <cstddef>
#include <cstdint>
#include <ranges>
#include <string>
#include <string_view>
#include <vector>

namespace pgpipe {

/// COPY ... FROM STDIN of rows of T (see the file comment).
template <row_type T>
class blocking_copy_writer {
 public:
  /// Starts the COPY; throws as blocking_copy_in's constructor.
  blocking_copy_writer(blocking_lease& lease, std::string_view copy_sql) : in_(lease, copy_sql) {}

  /// Encodes `row`; sends the buffered rows once they reach about 64 KiB.
  /// Throws pgpipe::error (see the file comment); after a throw the COPY is
  /// over and nothing of it stays.
  void write(const T& row) {
    std::string message;
    if (auto ec = enc_.append(row, buf_, message)) {
      in_.abort(message);
      throw error(ec, message);
    }
    if (buf_.size() >= detail::typed_copy_chunk_bytes) flush();
  }

  /// write() for each row of `rows`, in order.
  template <std::ranges::input_range R>
  void write_rows(R&& rows) {
    for (const T& row : rows) write(row);
  }

  /// Sends what is buffered, ends the data and returns the server's row
  /// count; throws as blocking_copy_in::finish.
  std::uint64_t finish() {
    flush();
    return in_.finish();
  }

  /// Ends the COPY with a failure `reason`: nothing of it stays. Never throws.
  void abort(std::string_view reason) noexcept {
    buf_.clear();
    in_.abort(reason);
  }

  /// True until finish() or abort() (or a throw) ends the COPY.
  bool active() const noexcept { return in_.active(); }

 private:
  void flush() {
    if (buf_.empty()) return;
    in_.write(buf_);
    buf_.clear();
  }

  blocking_copy_in in_;
  detail::copy_row_encoder<T> enc_;
  std::string buf_;
};

/// COPY ... TO STDOUT read as rows of T (see the file comment).
template <row_type T>
class blocking_copy_reader {
 public:
  /// Starts the COPY; throws as blocking_copy_out's constructor.
  blocking_copy_reader(blocking_lease& lease, std::string_view copy_sql) : out_(lease, copy_sql) {}

  /// The next row into `row`; false at the end (rows() is then the server's
  /// count). Throws pgpipe::error (see the file comment).
  bool next(T& row) {
    while (next_ == batch_.size()) {
      batch_.clear();
      next_ = 0;
      if (!out_.next(chunk_)) {
        std::string message;
        if (auto ec = dec_.finish(message)) throw error(ec, message);
        return false;
      }
      std::string message;
      if (auto ec = dec_.feed(chunk_, batch_, message)) {
        out_.cancel();
        throw error(ec, message);
      }
    }
    row = std::move(batch_[next_++]);
    return true;
  }

  /// Rows the server reported once next() returned false.
  std::uint64_t rows() const noexcept { return out_.rows(); }

  /// Stops early, as blocking_copy_out::cancel. Never throws.
  void cancel() noexcept { out_.cancel(); }

 private:
  blocking_copy_out out_;
  detail::copy_row_decoder<T> dec_;
  std::string chunk_;
  std::vector<T> batch_;
  std::size_t next_ = 0;
};

}  // namespace pgpipe
