// stream_chunks: how an async_row_stream's rows are buffered between the socket and
// its reader. Touched on the connection's executor only.
//
// A chunk carries every row received since the previous chunk was taken, up
// to stream_chunk_max_rows rows and stream_chunk_max_bytes field bytes: few
// completions per million rows (single-row mode alone makes one per row),
// memory still bounded. Rows are appended to the open chunk's PGresult with
// PQsetvalue; a result of several rows (query_options::stream_chunk_rows on
// libpq 17+) is a chunk as it is. The connection stops reading the socket while a stream holds
// more than two chunks' worth (TCP backpressure then stops the server) and
// resumes once it is down to one.
#pragma once

#include "async/connection/request.hpp"

#include <libpq-fe.h>

#include <cstddef>
#include <system_error>
#include <utility>

namespace pgpipe::detail {

inline constexpr std::size_t stream_chunk_max_rows = 4096;
inline constexpr std::size_t stream_chunk_max_bytes = std::size_t{1} << 20;

/// Takes ownership of `row`: one row (single-row mode), appended to the open
/// chunk while it has room, or several (a chunked-rows result), kept as a
/// chunk of its own as libpq made it (no copy). Returns false when the
/// stream ended or was abandoned (the result is freed), true when buffered.
bool add_stream_row(stream_state& st, PGresult* row);
/// The oldest chunk (or end marker / error); requires !st.chunks.empty().
std::pair<std::error_code, result> pop_stream_chunk(stream_state& st);
/// Drops everything buffered (the reader cancelled).
void clear_stream_chunks(stream_state& st);
bool stream_should_pause(const stream_state& st);
bool stream_may_resume(const stream_state& st);

}  // namespace pgpipe::detail
