// libpq calls newer than the headers pgpipe is built with, found at run time.
//
// The binary is built on the distribution's libpq (15 on Debian 12) but runs
// with whichever libpq.so.5 the loader finds, often a newer one (PostgreSQL's
// own packages ship the newest on every distribution). libpq 17 added calls
// that make the async driver cheaper or more correct:
//  - PQsendPipelineSync: a Sync without a flush (PQpipelineSync flushes, one
//    send() per request; the connection flushes once per loop turn anyway);
//  - PQsendClosePrepared: a protocol-level Close instead of SQL DEALLOCATE,
//    which poolers that track protocol-level statements understand;
//  - PQsetChunkedRowsMode: rows of a stream in chunks, not one PGresult each;
//  - PQcancelCreate and friends: a cancel that does not block.
// Their addresses are looked up once with dlsym in the libpq this process
// loaded; a null pointer means "absent: use the libpq 14 path". The types
// are declared here because the headers built against do not have them
// (PGcancelConn is opaque, so a void* stands for it).
#pragma once

#include <pgpipe/stats.hpp>

#include <libpq-fe.h>

#include <functional>

namespace pgpipe::detail {

struct libpq_features {
  using send_pipeline_sync_fn = int (*)(PGconn*);
  using set_chunked_rows_mode_fn = int (*)(PGconn*, int chunk_size);
  using send_close_prepared_fn = int (*)(PGconn*, const char* stmt);
  using cancel_create_fn = void* (*)(PGconn*);
  using cancel_start_fn = int (*)(void*);
  using cancel_poll_fn = PostgresPollingStatusType (*)(void*);
  using cancel_status_fn = ConnStatusType (*)(const void*);
  using cancel_socket_fn = int (*)(const void*);
  using cancel_error_message_fn = const char* (*)(const void*);
  using cancel_finish_fn = void (*)(void*);

  send_pipeline_sync_fn send_pipeline_sync = nullptr;
  set_chunked_rows_mode_fn set_chunked_rows_mode = nullptr;
  send_close_prepared_fn send_close_prepared = nullptr;
  cancel_create_fn cancel_create = nullptr;
  cancel_start_fn cancel_start = nullptr;
  cancel_poll_fn cancel_poll = nullptr;
  cancel_status_fn cancel_status = nullptr;
  cancel_socket_fn cancel_socket = nullptr;
  cancel_error_message_fn cancel_error_message = nullptr;
  cancel_finish_fn cancel_finish = nullptr;

  /// Every call a non-blocking cancel needs is there.
  bool cancel_usable() const noexcept {
    return cancel_create && cancel_start && cancel_poll && cancel_status && cancel_socket && cancel_error_message &&
           cancel_finish;
  }
};

/// Fills libpq_features from `lookup` (a symbol name to its address, null
/// when absent). The seam that lets tests resolve against a fake libpq.
libpq_features resolve_libpq_features(const std::function<void*(const char*)>& lookup);

/// The features of the libpq this process loaded, looked up on the first
/// call (thread-safe) and kept for the life of the process.
const libpq_features& loaded_libpq_features();

/// What the async driver uses of `f` (stats().runtime.fast_paths).
libpq_fast_paths async_fast_paths(const libpq_features& f) noexcept;

}  // namespace pgpipe::detail
