// stream_chunks without a server: single-row results are gathered into one
// chunk; a result of several rows (libpq 17's chunked rows mode) is a chunk
// of its own, uncopied, and counts every row's bytes towards the stream's
// memory bound (the socket is paused on that count).
#include "async/connection/stream_chunks.hpp"

#include <gtest/gtest.h>

#include <libpq-fe.h>

#include <string>

namespace {

using pgpipe::detail::add_stream_row;
using pgpipe::detail::pop_stream_chunk;
using pgpipe::detail::stream_state;

// A TUPLES_OK-like result of one text column holding `rows` copies of `value`.
PGresult* rows_of(int rows, const std::string& value) {
  PGresult* r = PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK);
  PGresAttDesc col{};
  col.name = const_cast<char*>("v");
  col.typid = 25;  // text
  col.typlen = -1;
  col.atttypmod = -1;
  EXPECT_EQ(PQsetResultAttrs(r, 1, &col), 1);
  for (int i = 0; i < rows; ++i)
    EXPECT_EQ(PQsetvalue(r, i, 0, const_cast<char*>(value.data()), static_cast<int>(value.size())), 1);
  return r;
}

// What one row of rows_of(_, value) counts: its field bytes and 8 per field.
std::size_t row_cost(const std::string& value) { return value.size() + 8; }

TEST(stream_chunks, single_rows_gather_into_one_chunk) {
  stream_state st;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(add_stream_row(st, rows_of(1, "0123456789")));
  ASSERT_EQ(st.chunks.size(), 1u);
  EXPECT_EQ(st.chunks.front().second.size(), 3u);
  EXPECT_EQ(st.buffered_rows, 3u);
  EXPECT_EQ(st.buffered_bytes, 3 * row_cost("0123456789"));
}

TEST(stream_chunks, a_result_of_several_rows_is_a_chunk_of_its_own_and_counts_every_row) {
  stream_state st;
  ASSERT_TRUE(add_stream_row(st, rows_of(1, "first")));
  PGresult* chunk = rows_of(500, "0123456789");
  ASSERT_TRUE(add_stream_row(st, chunk));
  ASSERT_EQ(st.chunks.size(), 2u);
  EXPECT_EQ(st.chunks.back().second.native_handle(), chunk) << "libpq's chunk was copied";
  EXPECT_EQ(st.buffered_rows, 501u);
  EXPECT_EQ(st.buffered_bytes, row_cost("first") + 500 * row_cost("0123456789"));
  // A single row after it joins it (it is ours until the reader takes it).
  ASSERT_TRUE(add_stream_row(st, rows_of(1, "last")));
  ASSERT_EQ(st.chunks.size(), 2u);
  EXPECT_EQ(st.chunks.back().second.size(), 501u);
  auto [ec, first] = pop_stream_chunk(st);
  EXPECT_FALSE(ec);
  EXPECT_EQ(first.size(), 1u);
  EXPECT_EQ(st.buffered_rows, 501u);
  EXPECT_EQ(st.buffered_bytes, 500 * row_cost("0123456789") + row_cost("last"));
}

TEST(stream_chunks, the_stream_pauses_on_the_rows_of_large_results_too) {
  stream_state st;
  ASSERT_TRUE(add_stream_row(st, rows_of(static_cast<int>(pgpipe::detail::stream_chunk_max_rows), "x")));
  EXPECT_FALSE(pgpipe::detail::stream_should_pause(st));
  ASSERT_TRUE(add_stream_row(st, rows_of(static_cast<int>(pgpipe::detail::stream_chunk_max_rows), "x")));
  EXPECT_TRUE(pgpipe::detail::stream_should_pause(st));
}

}  // namespace
