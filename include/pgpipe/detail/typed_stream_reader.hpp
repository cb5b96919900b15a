// What both drivers' typed streams share: rows of T read out of the chunks
// a row stream hands over (one or more rows each, then an empty end marker),
// the shape checked once, against the first chunk the stream yields (rows or
// the end marker), before any row is handed out. The checks and the decoding
// are typed_rows.hpp's. Users must not touch this header's contents.
#pragma once

#include <pgpipe/typed_rows.hpp>

#include <cstdint>
#include <string>
#include <system_error>
#include <utility>

namespace pgpipe::detail {

template <row_type T>
class typed_stream_reader {
 public:
  /// Takes the next chunk of the stream (rows, or the empty end marker)
  /// and, the first time, checks its columns against T. On failure the
  /// code, with `message` naming the problem; the reader then holds no row.
  std::error_code feed(result chunk, std::string& message) {
    chunk_ = std::move(chunk);
    next_ = 0;
    rows_ = 0;
    const PGresult* res = chunk_.native_handle();
    // A stream read past its end hands over an empty result with no
    // columns: there is nothing left to check.
    if (!planned_ && res != nullptr) {
      if (auto ec = plan_rows(res, plan_, message)) {
        chunk_ = result();
        return ec;
      }
      planned_ = true;
    }
    rows_ = res != nullptr ? PQntuples(res) : 0;
    return {};
  }

  /// True while the chunk last fed has rows not taken yet.
  bool has_row() const noexcept { return next_ < rows_; }

  /// Decodes the next row into `out` (has_row() must be true). On failure
  /// the code, `message` naming the row (counted from 0 over the whole
  /// stream), the column and the field; the reader then holds no row.
  std::error_code take(T& out, std::string& message) {
    const PGresult* res = chunk_.native_handle();
    const int row = next_++;
    std::size_t failed = 0;
    if (auto ec = decode_row(res, row, plan_, out, failed)) {
      message = describe_failed_value(res, row, plan_, failed, ec, static_cast<long long>(taken_));
      drop();
      return ec;
    }
    ++taken_;
    return {};
  }

  /// Forgets the rows left in the chunk (the stream stopped).
  void drop() noexcept {
    chunk_ = result();
    next_ = rows_ = 0;
  }

 private:
  result chunk_;
  int next_ = 0;
  int rows_ = 0;
  bool planned_ = false;
  std::uint64_t taken_ = 0;
  row_plan<T> plan_;
};

}  // namespace pgpipe::detail
