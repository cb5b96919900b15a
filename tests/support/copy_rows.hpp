// The rows the COPY tests of both drivers push: "i\tname number i\n" for i
// in [0, rows), in COPY text format, handed out in chunks of about 64 KiB so
// the producer never holds the whole table (the tests bound peak RSS).
#pragma once

#include <string>

namespace pgpipe::test {

class copy_row_chunks {
 public:
  static constexpr std::size_t chunk_bytes = 64 * 1024;

  explicit copy_row_chunks(int rows) : rows_(rows) {}

  /// The next chunk into `out` (cleared first); false once every row was given.
  bool next(std::string& out) {
    out.clear();
    while (next_ < rows_ && out.size() < chunk_bytes) {
      out += std::to_string(next_);
      out += "\tname number ";
      out += std::to_string(next_);
      out += '\n';
      ++next_;
    }
    return !out.empty();
  }

  /// The sum of the ids of all rows, to check what came back out.
  long long id_sum() const { return static_cast<long long>(rows_) * (rows_ - 1) / 2; }

 private:
  int rows_;
  int next_ = 0;
};

}  // namespace pgpipe::test
