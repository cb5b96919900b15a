#include "pq/libpq_features.hpp"

#include <dlfcn.h>

namespace pgpipe::detail {

namespace {

template <class Fn>
void find(const std::function<void*(const char*)>& lookup, const char* name, Fn& out) {
  // POSIX guarantees a data pointer from dlsym converts to a function pointer.
  out = reinterpret_cast<Fn>(lookup(name));
}

// The libpq that PQlibVersion came from: asking that library, and not the
// global scope, keeps a same-named symbol of another library from being
// taken for libpq's. RTLD_DEFAULT when the library cannot be named.
void* libpq_handle() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&PQlibVersion), &info) != 0 && info.dli_fname != nullptr) {
    // RTLD_NOLOAD: only a library already loaded; it is never closed, so the
    // addresses stay valid for the life of the process.
    if (void* h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD)) {
      if (dlsym(h, "PQlibVersion") != nullptr) return h;
      dlclose(h);
    }
  }
  return RTLD_DEFAULT;
}

}  // namespace

libpq_features resolve_libpq_features(const std::function<void*(const char*)>& lookup) {
  libpq_features f;
  find(lookup, "PQsendPipelineSync", f.send_pipeline_sync);
  find(lookup, "PQsetChunkedRowsMode", f.set_chunked_rows_mode);
  find(lookup, "PQsendClosePrepared", f.send_close_prepared);
  find(lookup, "PQcancelCreate", f.cancel_create);
  find(lookup, "PQcancelStart", f.cancel_start);
  find(lookup, "PQcancelPoll", f.cancel_poll);
  find(lookup, "PQcancelStatus", f.cancel_status);
  find(lookup, "PQcancelSocket", f.cancel_socket);
  find(lookup, "PQcancelErrorMessage", f.cancel_error_message);
  find(lookup, "PQcancelFinish", f.cancel_finish);
  return f;
}

const libpq_features& loaded_libpq_features() {
  static const libpq_features features = [] {
    void* h = libpq_handle();
    return resolve_libpq_features([h](const char* name) { return dlsym(h, name); });
  }();
  return features;
}

libpq_fast_paths async_fast_paths(const libpq_features& f) noexcept {
  libpq_fast_paths p;
  p.pipeline_sync = f.send_pipeline_sync != nullptr;
  p.close_prepared = f.send_close_prepared != nullptr;
  p.chunked_rows = f.set_chunked_rows_mode != nullptr;
  p.cancel_on_loop = f.cancel_usable();
  return p;
}

}  // namespace pgpipe::detail
