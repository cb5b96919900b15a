#include "pq/libpq_version.hpp"

#include <pgpipe/error.hpp>

namespace pgpipe::detail {

std::string version_text(int version) {
  if (version <= 0) return "unknown";
  if (version >= 100000) return std::to_string(version / 10000) + "." + std::to_string(version % 10000);
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

void check_libpq_version(int libpq_version) {
  if (libpq_version >= min_libpq_version) return;
  throw error(make_error_code(errc::unsupported_libpq),
              "pgpipe needs libpq " + std::to_string(min_libpq_version / 10000) +
                  " or newer (pipeline mode), and libpq " + version_text(libpq_version) +
                  " is loaded: point the loader at a newer libpq.so.5 (LD_LIBRARY_PATH, or the system's libpq "
                  "package)");
}

void require_supported_libpq() { check_libpq_version(PQlibVersion()); }

std::string runtime_text(const runtime_info& info) {
  std::string paths;
  const auto add = [&paths](bool used, const char* name) {
    if (!used) return;
    paths += paths.empty() ? "; fast paths: " : ", ";
    paths += name;
  };
  add(info.fast_paths.pipeline_sync, "PQsendPipelineSync");
  add(info.fast_paths.close_prepared, "PQsendClosePrepared");
  add(info.fast_paths.chunked_rows, "PQsetChunkedRowsMode");
  add(info.fast_paths.cancel_on_loop, "PQcancelPoll");
  std::string out = "libpq " + version_text(info.libpq_version) + " (loaded at run time" + paths + ")";
  if (info.server_version > 0) out += ", server " + version_text(info.server_version);
  return out;
}

void runtime_record::saw_connection(const PGconn* conn) noexcept {
  server_version_.store(PQserverVersion(conn), std::memory_order_relaxed);
}

runtime_info runtime_record::snapshot() const noexcept {
  runtime_info r;
  r.libpq_version = PQlibVersion();
  r.server_version = server_version_.load(std::memory_order_relaxed);
  r.fast_paths = fast_paths_;
  return r;
}

}  // namespace pgpipe::detail
