// stream_chunks: see stream_chunks.hpp.
#include "async/connection/stream_chunks.hpp"

#include <algorithm>
#include <memory>

namespace pgpipe::detail {

namespace {
// Field bytes plus a little per field: what the chunk costs in memory.
std::size_t row_bytes(const PGresult* r, int row) {
  std::size_t n = 0;
  const int cols = PQnfields(r);
  for (int c = 0; c < cols; ++c) n += static_cast<std::size_t>(PQgetlength(r, row, c)) + 8;
  return n;
}

// Every row's field bytes: a chunked-rows result holds several.
std::size_t result_bytes(const PGresult* r) {
  std::size_t n = 0;
  const int rows = PQntuples(r);
  for (int row = 0; row < rows; ++row) n += row_bytes(r, row);
  return n;
}

// Appends `src`'s one row to `dst` (same columns); false if libpq refused.
bool append_row(PGresult* dst, const PGresult* src) {
  const int t = PQntuples(dst);
  const int cols = PQnfields(src);
  for (int c = 0; c < cols; ++c) {
    const bool null = PQgetisnull(src, 0, c) != 0;
    if (!PQsetvalue(dst, t, c, null ? nullptr : PQgetvalue(src, 0, c), null ? -1 : PQgetlength(src, 0, c)))
      return false;
  }
  return true;
}
}  // namespace

bool add_stream_row(stream_state& st, PGresult* row) {
  std::unique_ptr<PGresult, pgresult_deleter> owned(row);
  if (st.ended || st.abandoned) return false;
  const std::size_t bytes = result_bytes(row);
  bool merged = false;
  if (st.tail_open && !st.chunks.empty() && PQntuples(row) == 1) {
    auto& tail = st.chunks.back().second;
    // The chunk's PGresult is ours (the reader has not got it yet): growing
    // it in place avoids copying the rows already there.
    if (tail.size() < stream_chunk_max_rows && st.tail_bytes + bytes <= stream_chunk_max_bytes)
      merged = append_row(const_cast<PGresult*>(tail.native_handle()), row);
  }
  if (merged) {
    st.tail_bytes += bytes;
    st.chunk_bytes.back() += bytes;
    st.buffered_rows += 1;
  } else {
    st.chunks.emplace_back(std::error_code{}, result(owned.release()));
    st.chunk_bytes.push_back(bytes);
    st.tail_open = true;
    st.tail_bytes = bytes;
    st.buffered_rows += st.chunks.back().second.size();
  }
  st.buffered_bytes += bytes;
  return true;
}

std::pair<std::error_code, result> pop_stream_chunk(stream_state& st) {
  auto item = std::move(st.chunks.front());
  st.chunks.pop_front();
  const std::size_t bytes = st.chunk_bytes.front();
  st.chunk_bytes.pop_front();
  st.buffered_rows -= std::min(st.buffered_rows, item.second.size());
  st.buffered_bytes -= std::min(st.buffered_bytes, bytes);
  if (st.chunks.empty()) st.tail_open = false;
  return item;
}

void clear_stream_chunks(stream_state& st) {
  st.chunks.clear();
  st.chunk_bytes.clear();
  st.buffered_rows = st.buffered_bytes = st.tail_bytes = 0;
  st.tail_open = false;
}

bool stream_should_pause(const stream_state& st) {
  return !st.abandoned &&
         (st.buffered_rows >= 2 * stream_chunk_max_rows || st.buffered_bytes >= 2 * stream_chunk_max_bytes);
}

bool stream_may_resume(const stream_state& st) {
  return st.abandoned || (st.buffered_rows <= stream_chunk_max_rows && st.buffered_bytes <= stream_chunk_max_bytes);
}

}  // namespace pgpipe::detail
