// copy_piece_at: how both drivers hand a COPY chunk of any size to
// PQputCopyData, which takes its length as an int. A cast of a 2-4 GiB size
// goes negative, and libpq then sends nothing and reports success; 4 GiB + k
// becomes k. The server also refuses a CopyData message of 1 GiB or more. So
// a chunk goes out as pieces of at most copy_piece_max bytes, in order; each
// piece's length is an int by construction, never by a cast of the total.
//
// Why 16 MiB: libpq copies each piece into its output buffer (which keeps
// its size for the connection's life), so the piece bounds what a large
// chunk costs beyond the caller's own copy; and each piece is one call, so
// 16 MiB keeps a 4 GiB chunk to 257 calls.
#pragma once

#include <climits>
#include <cstddef>

namespace pgpipe::detail {

inline constexpr std::size_t copy_piece_max = std::size_t{16} * 1024 * 1024;
static_assert(copy_piece_max <= static_cast<std::size_t>(INT_MAX), "a piece's length is an int");

struct copy_piece {
  std::size_t offset = 0;
  int length = 0;  ///< 0 when nothing is left
};

/// The piece of a `total`-byte chunk that starts at `offset`.
constexpr copy_piece copy_piece_at(std::size_t total, std::size_t offset) noexcept {
  if (offset >= total) return {offset, 0};
  const std::size_t left = total - offset;
  return {offset, static_cast<int>(left < copy_piece_max ? left : copy_piece_max)};
}

}  // namespace pgpipe::detail
