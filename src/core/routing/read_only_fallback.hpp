// The routers' read-only pool on the primary: marked reads that run on the
// primary go through it so that a marked statement that writes fails with
// 25006 there as on a standby (a read-write session cannot keep that promise).
#pragma once

#include <pgpipe/pool_params.hpp>
#include <pgpipe/read_routing.hpp>

namespace pgpipe::detail {

/// The primary pool's params turned into the read-only pool's: sessions
/// read-only, opened only when needed (min_size 0), max_size from
/// routing.primary_read_only_pool_size (0: the primary's). The observer is
/// kept (its queries are the caller's); everything else is the primary's.
pool_params primary_read_only_params(const pool_params& primary, const read_routing_params& routing);

}  // namespace pgpipe::detail
