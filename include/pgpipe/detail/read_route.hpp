// Where one attempt of a read-only request runs, and what a read remembers
// between its attempts: shared by the routers' headers and the sans-IO
// replica tracker (src/core/routing/replica_tracker.hpp). Not for users.
#pragma once

#include <cstddef>
#include <vector>

namespace pgpipe::detail {

/// One attempt's server: replica `replica`, the primary (the router's
/// read-only pool on it), or nowhere (every server that may serve the read
/// has failed it).
struct read_route {
  enum class to : unsigned char { replica, primary, nowhere };
  to where = to::primary;
  std::size_t replica = 0;  ///< when where == to::replica
};

/// The servers that failed one read as unreachable, kept by the router
/// between the read's attempts so that none is tried twice.
struct read_failures {
  bool primary = false;
  std::vector<std::size_t> replicas;
};

}  // namespace pgpipe::detail
