#include "core/routing/read_only_fallback.hpp"

namespace pgpipe::detail {

pool_params primary_read_only_params(const pool_params& primary, const read_routing_params& routing) {
  pool_params p = primary;
  p.read_only_sessions = true;
  // Lazily: with healthy replicas it is never used, and costs the primary
  // no connection.
  p.min_size = 0;
  if (routing.primary_read_only_pool_size != 0) p.max_size = routing.primary_read_only_pool_size;
  return p;
}

}  // namespace pgpipe::detail
