// The libpq a pool runs on: checked when a pool is created, reported by stats().
//
// A binary built on one libpq's headers runs with whichever libpq.so.5 the
// loader finds (LD_LIBRARY_PATH, a PostgreSQL install of its own), older or
// newer. Pipeline mode, which both drivers' pools are built on, is libpq
// 14's: on 13 the first query would die in the dynamic loader ("undefined
// symbol: PQenterPipelineMode"), so a pool refuses to start instead, with a
// message naming the version found and the one needed.
#pragma once

#include <pgpipe/stats.hpp>

#include <libpq-fe.h>

#include <atomic>
#include <string>

namespace pgpipe::detail {

/// PQlibVersion() of the oldest libpq pgpipe runs on: 14.0 (pipeline mode).
inline constexpr int min_libpq_version = 140000;

/// A PostgreSQL version number as people write it: "14.5" for 140005,
/// "9.6.24" for 90624 (the numbering before 10).
std::string version_text(int version);

/// Throws pgpipe::error(errc::unsupported_libpq) when `libpq_version` (a
/// PQlibVersion() number) is below min_libpq_version; the message names it.
void check_libpq_version(int libpq_version);

/// check_libpq_version(PQlibVersion()): the libpq this process loaded.
/// Called where a pool is created, before anything can reach pipeline mode.
void require_supported_libpq();

/// "libpq 18.0 (loaded at run time)", then the server ("server 18.4") when
/// one is known: how logs and pgpipe-bench's header name what runs. Fast
/// paths in use are named after the libpq: "libpq 18.0 (loaded at run time;
/// fast paths: PQsendPipelineSync, PQsendClosePrepared)".
std::string runtime_text(const runtime_info& info);

/// The runtime_info of one pool: the server version of the latest
/// connection it opened, with the libpq in use. Thread-safe: connections
/// note from their threads, stats() reads from any.
class runtime_record {
 public:
  /// `in_use`: the newer libpq calls the pool's driver takes (none for the
  /// blocking driver; the async one: async_fast_paths()).
  explicit runtime_record(libpq_fast_paths in_use = {}) noexcept : fast_paths_(in_use) {}
  /// After a connection opened: remember PQserverVersion(conn).
  void saw_connection(const PGconn* conn) noexcept;
  runtime_info snapshot() const noexcept;

 private:
  const libpq_fast_paths fast_paths_;
  std::atomic<int> server_version_{0};
};

}  // namespace pgpipe::detail
