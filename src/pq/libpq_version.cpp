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
  std::string out = "libpq " + version_text(info.libpq_version) + " (loaded at run time)";
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
  return r;
}

}  // namespace pgpipe::detail
