// One COPY chunk larger than libpq's int (2 GiB + one line), for the tests
// of both drivers that a chunk of any size reaches the server whole.
//
// Each line is exactly line_bytes long: "<id, 10 digits>\t<pad>\n". The
// tests copy into `copy <table> from stdin where id % 1024 = 0`, so the server
// parses every byte but stores only a few thousand rows (no 2 GiB table on
// disk), and a missing tail shows as a missing last id.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace pgpipe::test {

struct big_copy_chunk {
  static constexpr std::size_t line_bytes = 1024;
  static constexpr std::uint64_t lines = (std::uint64_t{1} << 21) + 1;  // 2 GiB + line_bytes
  static constexpr std::uint64_t last_id = lines - 1;
  /// Rows the WHERE keeps: ids 0, 1024, ..., last_id.
  static constexpr std::uint64_t kept_rows = last_id / 1024 + 1;

  static std::string make() {
    std::string s(lines * line_bytes, 'x');
    char id[16];
    for (std::uint64_t i = 0; i < lines; ++i) {
      char* line = s.data() + i * line_bytes;
      std::snprintf(id, sizeof id, "%010llu", static_cast<unsigned long long>(i));
      for (int k = 0; k < 10; ++k) line[k] = id[k];
      line[10] = '\t';
      line[line_bytes - 1] = '\n';
    }
    return s;
  }
};

}  // namespace pgpipe::test
