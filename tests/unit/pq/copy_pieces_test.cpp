// copy_piece_at: how both drivers cut a COPY chunk for PQputCopyData (an int
// length) and the server's CopyData limit. The plans for sizes past 2 and 4
// GiB are walked without allocating them.
#include "pq/copy_pieces.hpp"

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>

namespace {

using pgpipe::detail::copy_piece_at;
using pgpipe::detail::copy_piece_max;

struct plan {
  std::size_t pieces = 0;
  std::size_t bytes = 0;
  std::size_t last_offset = 0;
  int last_length = 0;
};

// Walks the plan as the drivers do: from offset 0, one piece after the other.
plan walk(std::size_t total) {
  plan p;
  for (std::size_t off = 0; off < total;) {
    const auto piece = copy_piece_at(total, off);
    EXPECT_EQ(piece.offset, off);
    EXPECT_GT(piece.length, 0) << "at offset " << off << " of " << total;
    EXPECT_LE(static_cast<std::size_t>(piece.length), copy_piece_max);
    if (piece.length <= 0) break;
    ++p.pieces;
    p.bytes += static_cast<std::size_t>(piece.length);
    p.last_offset = piece.offset;
    p.last_length = piece.length;
    off += static_cast<std::size_t>(piece.length);
  }
  return p;
}

TEST(copy_pieces, a_piece_fits_libpqs_int_and_the_servers_message_limit) {
  static_assert(copy_piece_max <= static_cast<std::size_t>(INT_MAX));
  static_assert(copy_piece_max < (std::size_t{1} << 30) - 5);  // CopyData: 1 GiB - 1 with its header
}

TEST(copy_pieces, a_chunk_just_over_2_gib_is_sent_whole_in_bounded_pieces) {
  const std::size_t total = (std::size_t{1} << 31) + 1;
  const plan p = walk(total);
  EXPECT_EQ(p.bytes, total);
  EXPECT_EQ(p.pieces, (total + copy_piece_max - 1) / copy_piece_max);
  EXPECT_EQ(p.last_length, 1);
  EXPECT_EQ(p.last_offset, std::size_t{1} << 31);
}

TEST(copy_pieces, a_chunk_of_4_gib_plus_k_is_not_cut_to_k) {
  for (std::size_t k : {std::size_t{1}, std::size_t{7}, copy_piece_max - 1, copy_piece_max + 3}) {
    SCOPED_TRACE(k);
    const std::size_t total = (std::uint64_t{1} << 32) + k;
    const plan p = walk(total);
    EXPECT_EQ(p.bytes, total);
    EXPECT_EQ(p.pieces, (total + copy_piece_max - 1) / copy_piece_max);
    EXPECT_EQ(p.last_offset + static_cast<std::size_t>(p.last_length), total);
  }
}

TEST(copy_pieces, small_and_boundary_sizes) {
  EXPECT_EQ(walk(0).pieces, 0u);
  EXPECT_EQ(copy_piece_at(0, 0).length, 0);  // nothing left: an empty piece
  EXPECT_EQ(walk(1).pieces, 1u);
  EXPECT_EQ(walk(copy_piece_max).pieces, 1u);
  EXPECT_EQ(walk(copy_piece_max).last_length, static_cast<int>(copy_piece_max));
  EXPECT_EQ(walk(copy_piece_max + 1).pieces, 2u);
  EXPECT_EQ(walk(copy_piece_max + 1).last_length, 1);
  // An offset at or past the end gives an empty piece, never a negative length.
  EXPECT_EQ(copy_piece_at(10, 10).length, 0);
  EXPECT_EQ(copy_piece_at(10, 11).length, 0);
}

}  // namespace
